//! The LLM provider's connection is warmed when the call starts, before the
//! caller's first turn: exactly one warm-up per call, and it does not hold the
//! turn up. (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use brisvox_engine::Models;
use common::*;

#[tokio::test(start_paused = true)]
async fn one_warm_up_per_call_and_the_turns_are_answered_as_before() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(2);
    let run = run(
        then_silence(fx.samples.clone(), 2_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let stats = mocks.llm.stats();
    assert_eq!(stats.warm_ups, 1, "{stats:?}");
    assert_eq!(run.answered().len(), 2, "the turns are answered as before");
}
