//! Speculative LLM start with an STT whose last interim lags the final by a
//! word: the run started from the partial at the VAD stop has other words
//! than the turn, so it is discarded when the final supersedes it, and the
//! run started at the final is the one committed; the answer is the final's.
//! (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use brisvox_engine::Models;
use brisvox_engine::turn::SpeculationConfig;
use common::*;

#[tokio::test(start_paused = true)]
async fn the_partial_run_is_discarded_and_the_final_run_committed() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(11);
    mocks
        .stt
        .set_transcriber(|i| format!("this is utterance number {i}"));
    mocks.stt.set_converged_interims(false);
    mocks.stt.set_interims_from_speech(true);
    let mut config = sim_config();
    config.turn.speculation = Some(SpeculationConfig::default());
    let run = run(
        then_silence(fx.samples.clone(), 2_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let s = run.report.speculation;
    assert_eq!((s.started, s.committed, s.discarded), (4, 2, 2), "{s:?}");
    let requests = mocks.llm.requests();
    let last_texts: Vec<_> = requests
        .iter()
        .map(|r| r.last_user_text().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(requests.len(), 4, "{last_texts:?}");
    assert_eq!(last_texts[1], "this is utterance number 0");
    assert_eq!(last_texts[3], "this is utterance number 1");
    assert_ne!(last_texts[0], last_texts[1], "the partial lagged");
    assert_eq!(run.answered().len(), 2);
}
