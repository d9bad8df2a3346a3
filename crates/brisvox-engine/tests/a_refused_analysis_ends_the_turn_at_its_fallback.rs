//! A Smart Turn analysis the service cannot run (its pool refuses: the queue
//! is full) is a failed verdict: counted by the turn machine and by the
//! service, and the turn ends at its fallback deadline (the adaptive policy's
//! `incomplete_timeout` after the VAD stop), never at once, and is answered
//! once: an overloaded model delays the answer instead of cutting a caller off
//! mid-sentence.
//!
//! Skipped (with a message) when the Smart Turn model or ONNX Runtime is
//! missing, unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock, energy VAD, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::turn::TurnPolicy;
use brisvox_engine::{CallEnd, Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime::models_required;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig, SmartTurnService};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_refused_analysis_ends_the_turn_at_its_fallback_deadline() {
    let model = match SmartTurn::load(SmartTurnConfig::default()) {
        Ok(model) => Arc::new(model),
        Err(e) if !models_required() => {
            eprintln!("skipped: Smart Turn not available ({e})");
            return;
        }
        Err(e) => panic!("models required but Smart Turn not loadable: {e}"),
    };
    // A threaded pool with no room in its queue refuses every analysis.
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        normal_capacity: 0,
        ..PoolConfig::named("full")
    });
    let service = SmartTurnService::with_pool(model, pool);
    let models = Models {
        vad: VadSource::Energy,
        verdict: VerdictSource::Service(service.clone()),
    };
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(6);
    let fallback = Duration::from_millis(1_000);
    let mut config = sim_config();
    config.turn.policy = TurnPolicy::Adaptive {
        incomplete_timeout: fallback,
    };
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        config,
        &mocks,
        models,
    )
    .await;
    let c = run.report.turn_counters;
    println!("{c:?}\n{:?}", service.stats());
    assert_eq!(run.report.end, CallEnd::Hangup);
    assert_eq!(c.verdicts_failed, 2, "one failed verdict per stop");
    assert_eq!(c.verdicts_complete + c.verdicts_incomplete, 0);
    let stats = service.stats();
    assert_eq!((stats.refused, stats.completed), (2, 0));
    assert_eq!((c.turns, c.responses), (2, 2));
    assert_eq!(mocks.llm.stats().started, 2);
    assert_eq!(run.answered().len(), 2);
    assert_eq!(c.verdict_fallbacks, 2);
    for turn in run.answered() {
        let waited = turn
            .span(TurnEvent::VadStop, TurnEvent::TurnEnd)
            .expect("a stop and a turn end");
        assert_eq!(
            waited, fallback,
            "the turn ends at its fallback, not at once"
        );
    }
}
