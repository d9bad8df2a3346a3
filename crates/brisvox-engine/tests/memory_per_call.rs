//! Memory per call with the production models' per-call state: 8 and 100
//! calls alive at once, each with a Silero stream (its recurrent state and
//! outcome queue), the Smart Turn 8 s ring and its analysis snapshot, the STT
//! and TTS sessions of the mock providers, the output framer (resampler) and
//! every stage queue. Measured by a counting global allocator (bytes live and
//! their peak); the model weights are loaded before the baseline, so they are
//! shared, not per call. Goal (DESIGN.md): under 600 KiB per call (not met
//! yet; the test holds a 700 KiB regression bound).
//!
//! What it does not see: memory ONNX Runtime allocates itself (outside the
//! Rust allocator), thread stacks of pools and the allocator's own overhead.
//! Run the measurement with
//! `cargo test --release -p brisvox-engine --test memory_per_call -- --nocapture --test-threads 1`;
//! the figures are in `bench/results/engine-memory.md`.
//!
//! Skipped (with a message) when the model files or ONNX Runtime are missing,
//! unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock; Silero and Smart Turn on inline pools; fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::turn::TurnPolicy;
use brisvox_engine::{CallEnd, Models, VadSource, VerdictSource, run_call};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::{SmartTurn, SmartTurnService};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use brisvox_testkit::alloc::{CountingAllocator, live_bytes, peak_bytes, reset_peak};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

/// The regression bound per call, in bytes. The DESIGN.md goal is 600 KiB and
/// is NOT met yet (about 674 KiB measured): the output pacer's queue
/// (brisvox-audio, 54 slots of a 3.9 KB inline `AudioFrame`, 204 KiB) and the
/// Smart Turn ring (250 KiB) are two thirds of a call; see
/// `bench/results/engine-memory.md`.
const BOUND_PER_CALL: i64 = 700 * 1024;
/// The goal, printed next to the measurement.
const GOAL_PER_CALL: i64 = 600 * 1024;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The models as a server shares them: one batched VAD service and one Smart
/// Turn service (its snapshot buffers are held only while an analysis runs)
/// for every call; inline pools, deterministic on the paused clock.
fn models(silero: &Arc<SileroModel>, turn: &Arc<SmartTurn>) -> Models {
    Models {
        vad: VadSource::Silero(VadService::new(
            Arc::clone(silero),
            InferencePool::inline(PoolConfig::named("vad")),
            VadServiceConfig::new(SileroRate::Hz16000),
        )),
        verdict: VerdictSource::Service(SmartTurnService::with_pool(
            Arc::clone(turn),
            InferencePool::inline(PoolConfig::named("turn")),
        )),
    }
}

/// The first utterance of `en_two_utterances`, then 2 s of silence: one turn,
/// analysed by Smart Turn, answered.
fn caller() -> Vec<i16> {
    let fx = fixture("en_two_utterances");
    let (_, end) = fx.utterances[0];
    then_silence(fx.samples[..((end + 200) * 16) as usize].to_vec(), 2_000)
}

/// Runs `n` calls at once; returns the live bytes per call at its peak and
/// while every call is answering (both over the idle baseline).
async fn per_call(n: usize, shared: &Models, with_models: bool) -> (i64, i64) {
    let samples: Arc<[i16]> = caller().into();
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    config.turn.policy = TurnPolicy::Adaptive {
        incomplete_timeout: Duration::from_millis(500),
    };
    let all_mocks: Vec<Mocks> = (0..n).map(|i| Mocks::fixed(i as u64)).collect();
    let baseline = reset_peak();
    let calls: Vec<_> = all_mocks
        .iter()
        .map(|mocks| {
            let (sink, _log) = RecordingSink::new();
            tokio::spawn(run_call(
                config.clone(),
                brisvox_engine::CallEdge::new(SimCaller::new(Arc::clone(&samples)), sink),
                mocks.providers(),
                if with_models {
                    shared.clone()
                } else {
                    Models::energy_and_complete()
                },
            ))
        })
        .collect();
    // The answers start ~0.9 s after the end of speech (3.07 s) and play ~0.8 s.
    tokio::time::sleep(Duration::from_millis(4_100)).await;
    let answering = live_bytes() - baseline;
    let mut answered = 0;
    for call in calls {
        let report = call.await.expect("the call task").expect("a valid config");
        assert_eq!(report.end, CallEnd::Hangup);
        assert_eq!(report.vad_windows_lost, 0);
        answered += report.turn_counters.responses;
    }
    assert_eq!(answered, n as u64, "every call answered its turn");
    let peak = peak_bytes() - baseline;
    (peak / n as i64, answering / n as i64)
}

#[tokio::test(start_paused = true)]
async fn a_call_with_the_models_stays_under_its_memory_bound() {
    let Some((silero, turn)) = real_models() else {
        return;
    };
    let shared = models(&silero, &turn);
    let tasks = alive_tasks();
    // A warm-up call: lazily built runtime, model and service state is shared.
    per_call(1, &shared, true).await;
    until_alive_tasks(tasks, "the warm-up call's tasks end").await;
    let idle = live_bytes();
    let (bare, _) = per_call(8, &shared, false).await;
    println!(
        "memory: 8 calls at once without models (energy VAD, fixed verdict): peak {:.1} KiB per call",
        bare as f64 / 1024.0
    );
    for n in [8, 100] {
        let (peak, answering) = per_call(n, &shared, true).await;
        until_alive_tasks(tasks, format_args!("the {n} calls' tasks end")).await;
        let left = live_bytes() - idle;
        println!(
            "memory: {n} calls at once: peak {:.1} KiB per call, {:.1} KiB per call while \
             answering; {left:+} bytes left after the calls",
            peak as f64 / 1024.0,
            answering as f64 / 1024.0
        );
        if peak >= GOAL_PER_CALL {
            println!(
                "memory: over the 600 KiB goal by {} KiB",
                (peak - GOAL_PER_CALL) / 1024
            );
        }
        assert!(peak < BOUND_PER_CALL, "{n} calls: {peak} bytes per call");
        assert!(answering > 0, "the calls were alive at the sample");
        assert!(left.abs() < 64 * 1024, "{left} bytes kept after {n} calls");
    }
}
