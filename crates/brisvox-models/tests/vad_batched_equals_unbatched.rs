//! The batching service gives every stream the same probabilities as running that
//! stream alone (and as Python onnxruntime), however the streams interleave: within
//! `FOLDED_TOLERANCE`, since runs of two rows or more use the batch-folded graph.

mod vad_common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig, VadStream};
use brisvox_models::vad::silero::{FOLDED_TOLERANCE, SileroRate, SileroState};
use brisvox_testkit::eventually;
use vad_common::{Golden, goldens, max_abs_diff, model_or_skip};

type Received = Arc<Mutex<Vec<(u64, f32)>>>;

/// Deterministic pseudo-random stream picks (no dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn run_interleaved(rate: SileroRate, copies: usize, seed: u64) {
    let Some(model) = model_or_skip() else { return };
    let all = goldens();
    let group: Vec<&Golden> = all
        .iter()
        .filter(|g| g.rate == rate)
        .cycle()
        .take(all.iter().filter(|g| g.rate == rate).count() * copies)
        .collect();
    let pool = InferencePool::new(PoolConfig {
        threads: 2,
        ..PoolConfig::named("vad-eq")
    });
    let service = VadService::new(
        Arc::clone(&model),
        pool,
        VadServiceConfig {
            max_batch: 8,
            queue_capacity: 100_000,
            ..VadServiceConfig::new(rate)
        },
    );
    let received: Vec<Received> = group.iter().map(|_| Received::default()).collect();
    let mut streams: Vec<VadStream> = received
        .iter()
        .map(|r| {
            let r = Arc::clone(r);
            service.open_stream(move |o| {
                r.lock()
                    .unwrap()
                    .push((o.seq, o.probability.expect("window scored")))
            })
        })
        .collect();

    // Submit in a random interleaving, in bursts, without waiting for results: many
    // windows of one stream wait together, so order and per-stream state are tested.
    let total: usize = group.iter().map(|g| g.probabilities.len()).sum();
    let mut rng = Lcg(seed);
    let mut submitted = 0;
    while submitted < total {
        let s = rng.next(group.len());
        let i = streams[s].windows_submitted() as usize;
        if i < group[s].probabilities.len() {
            assert_eq!(streams[s].submit(group[s].window(i)).unwrap(), i as u64);
            submitted += 1;
            if rng.next(50) == 0 {
                // A pause in the arrivals (not a handshake): batches of every size.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
    eventually(Duration::from_secs(120), "every outcome arrived", || {
        received
            .iter()
            .map(|r| r.lock().unwrap().len())
            .sum::<usize>()
            == total
    });

    for (s, g) in group.iter().enumerate() {
        let got = received[s].lock().unwrap();
        let seqs: Vec<u64> = got.iter().map(|(q, _)| *q).collect();
        assert_eq!(
            seqs,
            (0..g.probabilities.len() as u64).collect::<Vec<_>>(),
            "in order"
        );
        let probs: Vec<f32> = got.iter().map(|(_, p)| *p).collect();
        // Alone, through the same model, one window at a time:
        let mut state = SileroState::new(rate);
        let alone: Vec<f32> = (0..g.probabilities.len())
            .map(|i| model.process(&mut state, g.window(i)).unwrap())
            .collect();
        let vs_alone = max_abs_diff(&probs, &alone);
        let vs_python = max_abs_diff(&probs, &g.probabilities);
        assert!(
            vs_alone <= FOLDED_TOLERANCE,
            "{} stream {s}: batched vs alone {vs_alone:e}",
            g.fixture
        );
        assert!(
            vs_python <= FOLDED_TOLERANCE,
            "{} stream {s}: vs python {vs_python:e}",
            g.fixture
        );
    }
    let stats = service.stats();
    eprintln!(
        "{rate:?}: {} streams, {stats:?}, mean rows {:.2}",
        group.len(),
        stats.mean_batch_rows()
    );
    assert_eq!(stats.windows_scored, total as u64);
    assert!(stats.max_batch_rows > 1, "windows were batched");
    assert!(stats.max_batch_rows <= 8, "the cap holds");
    assert!(stats.batches < total as u64);
    assert!(
        stats.deferrals > 0,
        "a stream's later windows waited for its earlier ones"
    );
}

#[test]
fn interleaved_16k_streams_match_running_alone() {
    run_interleaved(SileroRate::Hz16000, 3, 1);
}

#[test]
fn interleaved_8k_streams_match_running_alone() {
    run_interleaved(SileroRate::Hz8000, 4, 2);
}
