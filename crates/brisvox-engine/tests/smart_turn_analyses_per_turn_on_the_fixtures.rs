//! How many Smart Turn analyses a caller's turn costs, on every 16 kHz fixture
//! (issue #20: cut the analyses that cannot change the outcome; this is the
//! count to cut from). With Silero and Smart Turn on inline pools and the
//! engine's default configuration, each fixture is one call: every VAD stop in
//! a user turn asks for an analysis, so speech with pauses costs more than one
//! per turn. The counts reconcile with the turn machine's: every analysis run
//! gives a verdict that the machine counts as decisive or stale.
//!
//! Skipped (with a message) when the model files or ONNX Runtime are missing,
//! unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock, fixed mock latencies.)

mod common;

use std::sync::Arc;

use brisvox_engine::{EngineConfig, Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::SmartTurnService;
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::SileroRate;
use common::*;

#[tokio::test(start_paused = true)]
async fn every_stop_of_a_turn_costs_one_analysis() {
    let Some((silero, turn)) = real_models() else {
        return;
    };
    let mut total_turns = 0;
    let mut total_analyses = 0;
    let mut more_than_one = Vec::new();
    for name in FIXTURES_16K {
        let service = SmartTurnService::with_pool(
            Arc::clone(&turn),
            InferencePool::inline(PoolConfig::named("turn")),
        );
        let models = Models {
            vad: VadSource::Silero(VadService::new(
                Arc::clone(&silero),
                InferencePool::inline(PoolConfig::named("vad")),
                VadServiceConfig::new(SileroRate::Hz16000),
            )),
            verdict: VerdictSource::Service(service.clone()),
        };
        let fx = fixture(name);
        let mocks = Mocks::fixed(3);
        let call = run(
            then_silence(fx.samples, 4_000),
            EngineConfig::default(),
            &mocks,
            models,
        )
        .await;
        let c = call.report.turn_counters;
        let s = service.stats();
        let analyses = s.completed + s.failures();
        let verdicts = c.verdicts_complete + c.verdicts_incomplete + c.verdicts_failed;
        println!(
            "{name}: {} utterances, {} turns, {analyses} analyses ({} complete), \
             {verdicts} decisive verdicts, {} stale",
            fx.utterances.len(),
            c.turns,
            s.complete_verdicts,
            c.stale_verdicts
        );
        assert!(c.turns >= 1, "{name}: a turn");
        assert_eq!(s.failures(), 0, "{name}: inline analyses never fail");
        assert!(analyses >= c.turns, "{name}: at least one analysis a turn");
        assert_eq!(
            analyses,
            verdicts + c.stale_verdicts,
            "{name}: every analysis ends as a verdict the machine counts"
        );
        if analyses > c.turns {
            more_than_one.push(name);
        }
        total_turns += c.turns;
        total_analyses += analyses;
    }
    println!(
        "{total_analyses} analyses for {total_turns} turns; more than one a turn: {more_than_one:?}"
    );
    assert!(
        more_than_one.contains(&"en_pause_in_sentence"),
        "a pause inside a sentence is a second stop, and a second analysis"
    );
}
