//! When the STT session drops and cannot be reconnected, the call ends
//! cleanly with `SttLost` (counted), before the caller hangs up, and no task
//! is left. A call whose STT refuses the first connection (and its retries)
//! never starts its stages.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use brisvox_engine::{CallEnd, Models, ProviderStage};
use brisvox_providers::ProviderError;
use brisvox_providers::mock::{Fault, FaultPlan};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_lost_stt_that_cannot_reconnect_ends_the_call() {
    let baseline = alive_tasks();
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(50);
    // Utterance 1 (the second turn) drops the session; the reconnect is refused.
    mocks
        .stt
        .set_faults(FaultPlan::none().at(1, Fault::DisconnectAfter { items: 0 }));
    mocks.stt.set_connect_faults(
        FaultPlan::none().at(1, Fault::Refuse(ProviderError::connect("refused"))),
    );
    let run = run(
        then_silence(fx.samples, 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.end, CallEnd::SttLost);
    assert!(
        r.failures_of(ProviderStage::Stt) >= 2,
        "{:?}",
        r.provider_failures
    );
    assert_eq!(r.turn_counters.responses, 1, "the first turn was answered");
    let total_frames = (11_297 + 3_000) / 20;
    assert!(
        r.frames_in < total_frames,
        "ended before the caller hung up"
    );
    until_alive_tasks(baseline, "the call's tasks end").await;
}

#[tokio::test(start_paused = true)]
async fn an_stt_refused_from_the_start_ends_the_call_at_once() {
    let mocks = Mocks::fixed(51);
    mocks.stt.set_connect_faults(
        FaultPlan::none().with_probability(1.0, Fault::Refuse(ProviderError::connect("refused"))),
    );
    let run = run(
        vec![0i16; 16_000],
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    assert_eq!(run.report.end, CallEnd::SttLost);
    assert_eq!(run.report.frames_in, 0);
    assert_eq!(
        run.report.failures_of(ProviderStage::Stt),
        2,
        "first try and one retry"
    );
}
