//! A caller who hangs up while the bot is speaking ends the call at once and
//! cleanly: `run_call` returns with the hang-up, the answer stops, and no task
//! of the call (stages, provider sessions) is left on the runtime.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, Models};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

#[tokio::test(start_paused = true)]
async fn hanging_up_mid_answer_leaves_no_task() {
    let before = alive_tasks();
    let fx = fixture("en_two_utterances");
    let (_, end) = fx.utterances[0];
    // The answer starts ~0.94 s after the end of speech; hang up 0.4 s into it.
    let caller = fx.samples[..((end + 1_350) * 16) as usize].to_vec();
    let mocks = Mocks::fixed(9);
    mocks
        .llm
        .push_answer("Sure, ".to_owned() + &"a long answer that keeps going ".repeat(10));
    let run = run(caller, sim_config(), &mocks, Models::energy_and_complete()).await;
    let hung_up_at = (end + 1_350) as f64;
    assert_eq!(run.report.end, CallEnd::Hangup);
    let turn = &run.report.turns[0];
    assert!(
        turn.at(TurnEvent::FirstAudioOut).is_some(),
        "the bot was speaking"
    );
    assert!(
        turn.at(TurnEvent::LastAudioOut).is_none(),
        "the answer was cut"
    );
    let last_frame = run.audible_frames_ms().into_iter().fold(0.0, f64::max);
    assert!(
        last_frame <= hung_up_at + 20.0,
        "audio at {last_frame} after the hang-up"
    );
    // Provider session tasks see their channels close and end on their next poll.
    until_alive_tasks(before, "no task left behind").await;
    assert_eq!(mocks.llm.stats().started, 1);
}
