//! Overload is delay, not a lost turn: while the VAD's pool is busy and the
//! service's queue is full, AudioIn holds the refused windows and offers them
//! again (every 10 ms) instead of dropping them; once the pool frees up every
//! window is scored, in order and at its own audio time, and the turn is taken
//! and answered as without the overload.
//!
//! Real time (threaded pool): the first utterance of `en_two_utterances` and
//! 2.5 s of silence. Skipped (with a message) when Silero or ONNX Runtime is
//! missing, unless `CI` is set (`brisvox_models::runtime::models_required`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig, Priority};
use brisvox_models::runtime::models_required;
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_refused_while_the_vad_is_overloaded_are_retried_and_the_turn_is_kept() {
    let silero = match SileroModel::load() {
        Ok(model) => Arc::new(model),
        Err(e) if !models_required() => {
            eprintln!("skipped: Silero not available ({e})");
            return;
        }
        Err(e) => panic!("models required but Silero not loadable: {e}"),
    };
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("vad-overload")
    });
    // A queue of one window: every window that arrives while one waits is refused.
    let vad = VadService::new(
        silero,
        pool.clone(),
        VadServiceConfig {
            queue_capacity: 1,
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
    );
    let models = Models {
        vad: VadSource::Silero(vad.clone()),
        verdict: VerdictSource::Fixed(brisvox_engine::turn::Verdict::Complete { probability: 1.0 }),
    };
    let fx = fixture("en_two_utterances");
    let (_, end_ms) = fx.utterances[0];
    let samples = then_silence(fx.samples[..3_600 * 16].to_vec(), 2_500);
    // The overload: the pool's only thread is busy for the first 400 ms of the call.
    pool.submit_detached(Priority::High, None, || {
        std::thread::sleep(Duration::from_millis(400));
    })
    .expect("an empty pool takes a job");
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    let mocks = Mocks::fixed(12);
    let run = run(samples, config, &mocks, models).await;
    let r = &run.report;
    println!(
        "retried {} lost {} service {:?}",
        r.vad_windows_retried,
        r.vad_windows_lost,
        vad.stats()
    );
    assert!(r.vad_windows_retried > 0, "the overload refused windows");
    assert_eq!(r.vad_windows_lost, 0, "no window was dropped");
    assert_eq!(run.answered().len(), 1, "the turn is kept and answered");
    let turn = run.answered()[0];
    let speech_end = run.ms(turn.at(TurnEvent::UserSpeechEnd).expect("a speech end"));
    assert!(
        (speech_end - end_ms as f64).abs() < 250.0,
        "the stop keeps its audio time: {speech_end} ms vs the truth {end_ms} ms"
    );
}
