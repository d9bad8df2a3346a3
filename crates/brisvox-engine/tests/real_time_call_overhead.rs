//! The assembled call in real time (not the paused clock): the engine's own
//! share of the response latency (response latency minus end of turn, LLM
//! first token and TTS first byte) stays small, and the production model
//! path (Silero and Smart Turn on threaded pools, results coming back from
//! their threads) takes and answers a turn. The bounds are loose (a debug
//! build on a shared machine); the printed numbers are the measurement.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_engine::turn::TurnPolicy;
use brisvox_engine::{Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime::models_required;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use common::*;

/// The caller: the first utterance of `en_two_utterances`, then 2.5 s of silence.
fn caller() -> (Vec<i16>, u64) {
    let fx = fixture("en_two_utterances");
    let (_, end) = fx.utterances[0];
    (then_silence(fx.samples[..3_600 * 16].to_vec(), 2_500), end)
}

fn overhead_ms(run: &Run) -> f64 {
    let turn = run.answered()[0];
    let m = turn.metrics();
    let response = m.response_latency.expect("answered");
    let parts = m.end_of_turn_delay.expect("end of turn")
        + m.llm_ttft.expect("first token")
        + m.tts_ttfb.expect("first byte");
    println!(
        "response {:?} = end of turn {:?} + llm {:?} + tts {:?} + engine {:.3} ms",
        response,
        m.end_of_turn_delay,
        m.llm_ttft,
        m.tts_ttfb,
        (response.as_secs_f64() - parts.as_secs_f64()) * 1000.0
    );
    (response.as_secs_f64() - parts.as_secs_f64()) * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_adds_little_to_the_provider_floor() {
    let (samples, _) = caller();
    let mocks = Mocks::fixed(31);
    let run = run(samples, sim_config(), &mocks, Models::energy_and_complete()).await;
    assert_eq!(run.answered().len(), 1);
    let overhead = overhead_ms(&run);
    assert!(overhead >= 0.0);
    assert!(overhead < 60.0, "engine overhead {overhead} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threaded_model_pools_take_and_answer_a_turn() {
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
            return;
        }
        Err(e) => panic!("models required but not loadable: {e}"),
    };
    let pool = |name: &str| {
        let mut config = PoolConfig::named(name);
        config.threads = 1;
        InferencePool::new(config)
    };
    let models = Models {
        vad: VadSource::Silero(VadService::new(
            Arc::new(silero),
            pool("vad"),
            VadServiceConfig::new(SileroRate::Hz16000),
        )),
        verdict: VerdictSource::SmartTurn {
            model: Arc::new(turn),
            pool: pool("turn"),
        },
    };
    let (samples, end) = caller();
    let mocks = Mocks::fixed(32);
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    // The model judges this sentence incomplete at times; hold it 1 s at most.
    config.turn.policy = TurnPolicy::Adaptive {
        incomplete_timeout: Duration::from_secs(1),
    };
    let run = run(samples, config, &mocks, models).await;
    println!("{:?}", run.report.turn_counters);
    assert_eq!(mocks.llm.stats().started, 1);
    assert_eq!(run.report.turn_counters.verdicts_failed, 0);
    let audible = run.audible_frames_ms();
    assert!(!audible.is_empty(), "answered");
    assert!(audible.iter().all(|&at| at > end as f64));
    overhead_ms(&run);
}
