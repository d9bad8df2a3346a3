//! The per-window path on the caller's thread does not allocate once warm:
//! submitting a window while a batch job is already scheduled, and the detector.
//! (A model run itself allocates inside ONNX Runtime and `ort`, once per batch.)

mod vad_common;

use std::sync::{Arc, mpsc};
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, Priority};
use brisvox_models::vad::detector::{VadDetector, VadParams};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::SileroRate;
use brisvox_testkit::alloc::{CountingAllocator, thread_allocations as allocations_on_this_thread};
use vad_common::{goldens, model_or_skip};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn submitting_windows_and_detecting_allocate_nothing_once_warm() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("vad-alloc")
    });
    let service = VadService::new(
        Arc::clone(&model),
        pool.clone(),
        VadServiceConfig::new(SileroRate::Hz16000),
    );
    let (tx, rx) = mpsc::sync_channel::<u64>(1024);
    let mut streams: Vec<_> = (0..8)
        .map(|_| {
            let tx = tx.clone();
            service.open_stream(move |o| {
                let _ = tx.try_send(o.seq);
            })
        })
        .collect();
    let windows = 32;
    let mut round = |measure: bool| -> u64 {
        // Hold the only worker so every window waits in the queue.
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let blocker = pool
            .submit(Priority::Normal, None, move || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let first = streams[0].windows_submitted() as usize;
        // The first submit schedules the batch job (one boxed task); count the rest.
        streams[0].submit(g.window(first % 90)).unwrap();
        let before = allocations_on_this_thread();
        for k in 0..windows {
            for s in streams.iter_mut() {
                let i = (s.windows_submitted() as usize + k) % 90;
                s.submit(g.window(i)).unwrap();
            }
        }
        let used = allocations_on_this_thread() - before;
        release_tx.send(()).unwrap();
        blocker.wait().unwrap();
        for _ in 0..windows * 8 + 1 {
            rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        if measure { used } else { 0 }
    };
    round(false); // grows the queue to its working size once
    assert_eq!(round(true), 0, "allocations for {} submits", windows * 8);

    let mut detector = VadDetector::new(
        VadParams {
            fall_delay: Some(Duration::from_millis(64)),
            ..VadParams::default()
        },
        SileroRate::Hz16000,
    );
    let before = allocations_on_this_thread();
    for (seq, &p) in g.probabilities.iter().enumerate() {
        std::hint::black_box(detector.handle_seq(seq as u64, p));
    }
    assert_eq!(allocations_on_this_thread() - before, 0, "detector");
}
