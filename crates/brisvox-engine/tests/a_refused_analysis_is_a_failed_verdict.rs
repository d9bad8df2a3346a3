//! A Smart Turn analysis the service cannot run (its pool refuses: the queue
//! is full) is a failed verdict: counted by the turn machine and by the
//! service, and the turn still ends (by the STT final, as the adaptive policy
//! does without a verdict) and is answered once.
//!
//! Skipped (with a message) when the Smart Turn model or ONNX Runtime is
//! missing, unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock, energy VAD, fixed mock latencies.)

mod common;

use std::sync::Arc;

use brisvox_engine::{CallEnd, Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime::models_required;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig, SmartTurnService};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_refused_analysis_fails_the_verdict_not_the_turn() {
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
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
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
}
