//! A caller who says nothing is prompted after `idle.prompt_after` (spoken
//! without the LLM) and the call is ended `idle.end_after` after the prompt
//! has played, from the engine's side: `run_call` returns before the caller
//! hangs up, and no task is left.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::turn::{EndReason, IdleConfig};
use brisvox_engine::{CallEnd, Models};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

#[tokio::test(start_paused = true)]
async fn silence_gets_a_prompt_then_the_call_ends() {
    let baseline = alive_tasks();
    let mocks = Mocks::fixed(10);
    let mut config = sim_config();
    config.turn.idle = Some(IdleConfig {
        prompt_after: Duration::from_secs(2),
        prompt: "Are you still there?".to_owned(),
        end_after: Duration::from_secs(2),
    });
    let run = run(
        vec![0i16; 20_000 * 16],
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.end, CallEnd::Machine(EndReason::Idle));
    assert_eq!(mocks.llm.stats().started, 0);
    assert_eq!(mocks.tts.stats().contexts_started, 1);
    let audible = run.audible_frames_ms();
    let first = audible[0];
    let last = audible.iter().copied().fold(0.0, f64::max);
    assert_eq!(first, 2_000.0 + TTS_FIRST_BYTE_MS as f64);
    // 20 characters at 60 ms each, then two seconds of silence, then the end.
    let ended_ms = r.frames_in as f64 * 20.0;
    assert!(ended_ms < 20_000.0, "ended by the engine, not the caller");
    assert!(
        (ended_ms - (last + 2_000.0)).abs() <= 40.0,
        "{ended_ms} vs {last}"
    );
    until_alive_tasks(baseline, "the call's tasks end").await;
}
