//! Early analysis (opt-in): Smart Turn starts at the VAD's falling hint and
//! its verdict answers the confirmed stop of the same fall. With Silero and
//! Smart Turn on inline pools: every stop of two clean utterances reuses its
//! early verdict and the turns are answered as without it; the counters
//! reconcile (`started == reused + wasted + failed`); the per-turn cap counts
//! the hints it refuses; and with the feature off (the default) no early
//! analysis runs even when the VAD could hint.
//!
//! Skipped (with a message) when the model files or ONNX Runtime are missing,
//! unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_engine::turn::TurnPolicy;
use brisvox_engine::{
    CallReport, EarlyAnalysisConfig, EarlyAnalysisCounters, EngineConfig, Models, VadSource,
    VerdictSource,
};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime::models_required;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig, SmartTurnService};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use common::*;

fn real_models() -> Option<Models> {
    let loaded = SileroModel::load()
        .map_err(|e| e.to_string())
        .and_then(|silero| {
            SmartTurn::load(SmartTurnConfig::default())
                .map(|turn| (silero, turn))
                .map_err(|e| e.to_string())
        });
    let (silero, turn) = match loaded {
        Ok(models) => models,
        Err(e) if !models_required() => {
            eprintln!("skipped: models not available ({e})");
            return None;
        }
        Err(e) => panic!("models required but not loadable: {e}"),
    };
    Some(Models {
        vad: VadSource::Silero(VadService::new(
            Arc::new(silero),
            InferencePool::inline(PoolConfig::named("vad")),
            VadServiceConfig::new(SileroRate::Hz16000),
        )),
        verdict: VerdictSource::Service(SmartTurnService::with_pool(
            Arc::new(turn),
            InferencePool::inline(PoolConfig::named("turn")),
        )),
    })
}

/// 100 ms minimum silence, 64 ms fall delay (two windows: hints are possible).
fn config(early: Option<EarlyAnalysisConfig>) -> EngineConfig {
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    config.vad.fall_delay = Some(Duration::from_millis(64));
    config.early_analysis = early;
    config
}

fn reconciles(c: EarlyAnalysisCounters) {
    assert_eq!(c.started, c.reused + c.wasted + c.failed, "{c:?}");
}

async fn call(fixture_name: &str, config: EngineConfig, models: Models) -> (CallReport, Mocks) {
    let fx = fixture(fixture_name);
    let mocks = Mocks::fixed(8);
    let run = run(then_silence(fx.samples, 4_000), config, &mocks, models).await;
    (run.report, mocks)
}

#[tokio::test(start_paused = true)]
async fn every_stop_reuses_its_early_verdict() {
    let Some(models) = real_models() else {
        return;
    };
    // The model may judge the first sentence incomplete; a 1 s hold keeps the
    // answer clear of the second utterance either way.
    let hold = |early| {
        let mut config = config(early);
        config.turn.policy = TurnPolicy::Adaptive {
            incomplete_timeout: Duration::from_secs(1),
        };
        config
    };
    let (without, _) = call("en_two_utterances", hold(None), models.clone()).await;
    let (r, mocks) = call(
        "en_two_utterances",
        hold(Some(EarlyAnalysisConfig::default())),
        models,
    )
    .await;
    let e = r.early_analysis;
    println!("{e:?}\n{:?}", r.turn_counters);
    reconciles(e);
    assert_eq!(e.failed, 0);
    assert_eq!((r.turn_counters.turns, r.turn_counters.responses), (2, 2));
    assert_eq!(mocks.llm.stats().started, 2);
    let c = r.turn_counters;
    let verdicts = c.verdicts_complete + c.verdicts_incomplete;
    assert_eq!(c.verdicts_failed, 0);
    // Every stop got a verdict, and each came from its fall's early analysis.
    assert!(verdicts >= 2, "{c:?}");
    assert_eq!(e.reused, verdicts, "{e:?} {c:?}");
    assert_eq!(c.barge_ins, 0);
    // The early analyses ended the same turns as the analyses at the stops. Their
    // verdicts may differ: the early snapshot ends at the fall, the stop's a few
    // frames later, and this int8 model's probabilities near 0.5 move with the
    // CPU's ONNX Runtime kernels (see smart_turn_common in brisvox-models'
    // tests); on one AMD EPYC without AVX-512 one of the two stops is judged
    // complete early and incomplete at the stop, and the 1 s hold answers it
    // the same either way.
    let w = without.turn_counters;
    assert_eq!(
        (c.turns, c.responses, c.verdicts_failed, c.barge_ins),
        (w.turns, w.responses, w.verdicts_failed, w.barge_ins),
        "{c:?}\n{w:?}"
    );
    assert_eq!(
        c.verdicts_complete + c.verdicts_incomplete,
        w.verdicts_complete + w.verdicts_incomplete,
        "a verdict for every stop, early or not: {c:?}\n{w:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_per_turn_cap_counts_the_hints_it_refuses() {
    let Some(models) = real_models() else {
        return;
    };
    // One sentence with a 400 ms pause: two falls in one user turn.
    let early = EarlyAnalysisConfig {
        max_per_turn: 1,
        ..EarlyAnalysisConfig::default()
    };
    let (r, mocks) = call("en_pause_in_sentence", config(Some(early)), models).await;
    let e = r.early_analysis;
    println!("{e:?}\n{:?}", r.turn_counters);
    reconciles(e);
    assert_eq!(r.turn_counters.turns, 1, "{:?}", r.turn_counters);
    assert_eq!(mocks.llm.stats().started, 1);
    assert_eq!(e.started, 1, "{e:?}");
    assert!(e.capped >= 1, "{e:?}");
}

#[tokio::test(start_paused = true)]
async fn off_by_default_no_early_analysis_runs() {
    let Some(models) = real_models() else {
        return;
    };
    assert_eq!(EngineConfig::default().early_analysis, None);
    let (r, _) = call("en_two_utterances", config(None), models).await;
    assert_eq!(r.early_analysis, EarlyAnalysisCounters::default());
    assert_eq!(r.turn_counters.responses, 2);
}
