//! Batching is opportunistic: a lone window runs at once in a batch of one; it never
//! waits for other streams to fill a batch.

mod vad_common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig, WindowOutcome};
use brisvox_models::vad::silero::{NATIVE_TOLERANCE, SileroRate, SileroState};
use vad_common::{goldens, model_or_skip};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn one_streams_window_completes_while_other_streams_stay_silent() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("vad-lone")
    });
    let service = VadService::new(
        Arc::clone(&model),
        pool,
        VadServiceConfig::new(SileroRate::Hz16000),
    );
    // Nine open streams that never submit: a batch-filling design would wait for them.
    let _silent: Vec<_> = (0..9).map(|_| service.open_stream(|_| {})).collect();
    let (tx, rx) = mpsc::channel::<(WindowOutcome, Instant)>();
    let mut stream = service.open_stream(move |o| {
        let _ = tx.send((o, Instant::now()));
    });

    // Warm up the session, then measure.
    stream.submit(g.window(0)).unwrap();
    rx.recv_timeout(Duration::from_secs(10))
        .expect("lone window scored");

    let rounds = 30;
    let mut latencies = Vec::new();
    for i in 1..=rounds {
        let sent = Instant::now();
        stream.submit(g.window(i)).unwrap();
        let (outcome, at) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a lone window never waits for a batch to fill");
        assert_eq!(outcome.seq, i as u64);
        assert!((outcome.probability.unwrap() - g.probabilities[i]).abs() <= NATIVE_TOLERANCE);
        latencies.push(at - sent);
    }
    let stats = service.stats();
    assert_eq!(stats.max_batch_rows, 1, "every lone window ran alone");
    assert_eq!(stats.batches, rounds as u64 + 1);

    // How near one direct model call the service's latency stays is a timing
    // claim for a bench, not for this test (a loaded machine is slow, not wrong);
    // it is printed for the curious.
    let mut state = SileroState::new(SileroRate::Hz16000);
    let direct: Vec<Duration> = (0..rounds)
        .map(|i| {
            let t = Instant::now();
            model.process(&mut state, g.window(i)).unwrap();
            t.elapsed()
        })
        .collect();
    let (lone, direct) = (median(latencies), median(direct));
    eprintln!("lone window: median {lone:?} through the service, {direct:?} direct");
}

#[test]
fn an_inline_pool_delivers_the_outcome_inside_submit() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz8000)
        .expect("an 8 kHz golden");
    let service = VadService::new(
        model,
        InferencePool::inline(PoolConfig::named("vad-inline")),
        VadServiceConfig::new(SileroRate::Hz8000),
    );
    let (tx, rx) = mpsc::channel();
    let caller = std::thread::current().id();
    let mut stream = service.open_stream(move |o| {
        tx.send((o.seq, o.probability.unwrap(), std::thread::current().id()))
            .unwrap();
    });
    for i in 0..g.probabilities.len() {
        stream.submit(g.window(i)).unwrap();
        let (seq, p, thread) = rx.try_recv().expect("ready when submit returns");
        assert_eq!((seq, thread), (i as u64, caller));
        assert!((p - g.probabilities[i]).abs() <= NATIVE_TOLERANCE);
    }
}
