//! A caller who resumes after the turn ended but before any answer was heard
//! takes the turn back: the started response is cancelled at once (its LLM
//! stream dropped, nothing of it played), the turn continues, and the whole
//! sentence is answered once, after its real end.
//! (Paused clock, energy VAD with a short 100 ms hangover, fixed "complete"
//! verdict: the pause in the sentence ends the turn early on purpose.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use common::*;

#[tokio::test(start_paused = true)]
async fn resuming_before_the_answer_cancels_it_and_continues_the_turn() {
    let fx = fixture("en_pause_in_sentence");
    let mocks = Mocks::fixed(8);
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    println!("{:?}", r.turn_counters);
    assert_eq!(r.turn_counters.taken_back, 1);
    assert_eq!(r.turn_counters.barge_ins, 0);
    let llm = mocks.llm.stats();
    assert_eq!(llm.started, 2);
    assert_eq!(llm.cancelled, 1, "the taken-back response was cancelled");
    assert_eq!(llm.completed, 1);
    assert_eq!(
        mocks.llm.requests()[1].last_user_text(),
        Some("utterance 0 utterance 1"),
        "the continued turn keeps what was said before the pause"
    );
    let (_, end) = fx.utterances[0];
    let audible = run.audible_frames_ms();
    assert!(!audible.is_empty());
    assert!(
        audible.iter().all(|&at| at > end as f64),
        "nothing of the cancelled answer"
    );
    let answered: Vec<_> = r
        .turns
        .iter()
        .filter(|t| t.at(TurnEvent::FirstAudioOut).is_some())
        .collect();
    assert_eq!(answered.len(), 1);
}
