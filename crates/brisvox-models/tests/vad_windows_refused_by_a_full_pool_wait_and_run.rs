//! Overload is delay, not a lost turn: when the pool refuses the VAD's batch job
//! (its High line is full), the window is not dropped. It stays queued, the
//! refusal is counted, and the next submit offers the job again; every window
//! then gets its probability, in order, exactly as without the refusal.

mod vad_common;

use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, Priority};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{NATIVE_TOLERANCE, SileroRate};
use vad_common::{goldens, hold_the_worker, model_or_skip};

#[test]
fn a_window_refused_by_a_full_pool_waits_and_runs_in_order() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        high_capacity: 1,
        ..PoolConfig::named("vad-full")
    });
    // Hold the only worker, then fill the High line with one other job.
    let (release_tx, blocker) = hold_the_worker(&pool);
    let filler = pool.submit(Priority::High, None, || ()).unwrap();

    let service = VadService::new(model, pool, VadServiceConfig::new(SileroRate::Hz16000));
    let (tx, rx) = mpsc::channel();
    let mut stream = service.open_stream(move |o| tx.send(o).unwrap());
    assert_eq!(
        stream.submit(g.window(0)).unwrap(),
        0,
        "accepted, not dropped"
    );
    let stats = service.stats();
    assert_eq!(stats.schedule_retries, 1, "{stats:?}");
    assert_eq!((stats.windows_rejected, stats.queued), (0, 1), "{stats:?}");

    release_tx.send(()).unwrap();
    blocker.wait().unwrap();
    filler.wait().unwrap();
    // The next window offers the job again; both run, in order.
    assert_eq!(stream.submit(g.window(1)).unwrap(), 1);
    for seq in 0..2 {
        let o = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(o.seq, seq);
        let p = o.probability.unwrap();
        assert!((p - g.probabilities[seq as usize]).abs() <= NATIVE_TOLERANCE);
    }
    assert_eq!(service.stats().windows_scored, 2);
}
