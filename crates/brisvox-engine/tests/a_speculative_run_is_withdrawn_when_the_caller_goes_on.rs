//! Speculative LLM start and a pause in a sentence: the run started at the
//! pause is withdrawn when the caller goes on (its request cancelled), the
//! run at the real end is committed, and the sentence is answered once with
//! all of its words. (Paused clock, energy VAD, fixed silence of 600 ms.)

mod common;

use std::time::Duration;

use brisvox_engine::Models;
use brisvox_engine::turn::{SpeculationConfig, TurnPolicy};
use common::*;

#[tokio::test(start_paused = true)]
async fn the_run_of_the_pause_is_withdrawn_and_the_whole_sentence_answered() {
    let fx = fixture("en_pause_in_sentence");
    let mocks = Mocks::fixed(5);
    let mut config = sim_config();
    config.turn.policy = TurnPolicy::FixedSilence {
        silence: Duration::from_millis(600),
    };
    config.turn.speculation = Some(SpeculationConfig {
        on_partial: false,
        partial_stable: Duration::ZERO,
    });
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let s = run.report.speculation;
    assert_eq!(s.withdrawn, 1, "{s:?}");
    assert_eq!(s.committed, 1, "{s:?}");
    assert_eq!(run.report.turn_counters.responses, 1);
    let stats = mocks.llm.stats();
    assert_eq!(stats.started, 2, "the pause's run and the sentence's");
    assert_eq!(stats.cancelled, 1, "the pause's run was cancelled");
    let last = mocks.llm.requests().last().cloned().expect("a request");
    assert_eq!(last.last_user_text(), Some("utterance 0 utterance 1"));
    assert_eq!(run.answered().len(), 1);
}
