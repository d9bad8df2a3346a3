//! Seeded calls with injected provider faults (refusals, failures mid-stream,
//! stalls, disconnects, slow starts, on the STT, the LLM and the TTS, with
//! log-normal latencies) all end cleanly: `run_call` returns with the hang-up
//! (or the STT lost for good), no task is left behind, and every answered turn
//! without audio is accounted for by a counted failure or a barge-in.
//! (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, Models};
use brisvox_providers::ProviderError;
use brisvox_providers::mock::{Fault, FaultPlan};
use common::*;

const CALLS: u64 = 24;

fn fault(seed: u64, salt: u64) -> Fault {
    match (seed + salt) % 5 {
        0 => Fault::Refuse(ProviderError::server(503, "busy")),
        1 => Fault::FailAfter {
            items: 2,
            error: ProviderError::server(500, "broke"),
        },
        2 => Fault::StallAfter { items: 1 },
        3 => Fault::DisconnectAfter { items: 1 },
        _ => Fault::SlowStart {
            factor: 2.0,
            extra_ms: 400,
        },
    }
}

#[tokio::test(start_paused = true)]
async fn faulty_calls_end_cleanly_and_account_for_every_turn() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let fx = fixture("en_two_utterances");
    let mut config = sim_config();
    config.limits.llm_first_token = Duration::from_secs(2);
    config.limits.tts_stall = Duration::from_secs(2);
    let mut failures = 0;
    for seed in 0..CALLS {
        let mocks = Mocks::lognormal(seed);
        mocks
            .llm
            .set_faults(FaultPlan::none().with_probability(0.4, fault(seed, 0)));
        mocks
            .tts
            .set_faults(FaultPlan::none().with_probability(0.4, fault(seed, 2)));
        mocks
            .stt
            .set_faults(FaultPlan::none().with_probability(0.2, fault(seed, 4)));
        let caller = then_silence(fx.samples.clone(), 4_000);
        let run = tokio::time::timeout(
            Duration::from_secs(60),
            run(
                caller,
                config.clone(),
                &mocks,
                Models::energy_and_complete(),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("seed {seed}: the call did not end"));
        let r = &run.report;
        assert!(
            matches!(r.end, CallEnd::Hangup | CallEnd::SttLost),
            "seed {seed}: {:?}",
            r.end
        );
        let silent_answers = r
            .turns
            .iter()
            .filter(|t| t.at(TurnEvent::LlmRequest).is_some())
            .filter(|t| t.at(TurnEvent::FirstAudioOut).is_none() && !t.was_interrupted())
            .count() as u64;
        assert!(
            silent_answers <= r.failed_responses + r.turn_counters.taken_back,
            "seed {seed}: {silent_answers} silent answers, {} failed: {:?}",
            r.failed_responses,
            r.provider_failures
        );
        failures += r.provider_failures.iter().map(|c| c.count).sum::<u64>();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(
            metrics.num_alive_tasks(),
            baseline,
            "seed {seed}: tasks left"
        );
    }
    println!("{failures} provider failures over {CALLS} calls");
    assert!(failures >= CALLS / 2, "the faults were injected");
}
