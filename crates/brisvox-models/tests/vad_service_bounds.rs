//! The VAD service's queue is bounded: a full queue refuses the newest window without
//! using up its seq, and a refused window can be offered again.

mod vad_common;

use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::VadError;
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{NATIVE_TOLERANCE, SileroRate};
use vad_common::{goldens, hold_the_worker, model_or_skip};

#[test]
fn a_full_queue_refuses_the_newest_window_and_keeps_the_stream_usable() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("vad-bounds")
    });
    // Hold the only worker so windows wait.
    let (release_tx, blocker) = hold_the_worker(&pool);

    let service = VadService::new(
        model,
        pool,
        VadServiceConfig {
            queue_capacity: 2,
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
    );
    let (tx, rx) = mpsc::channel();
    let mut stream = service.open_stream(move |o| tx.send(o).unwrap());
    assert_eq!(stream.submit(g.window(0)).unwrap(), 0);
    assert_eq!(stream.submit(g.window(1)).unwrap(), 1);
    assert!(matches!(
        stream.submit(g.window(2)),
        Err(VadError::QueueFull { capacity: 2 })
    ));
    assert!(matches!(
        stream.submit(&g.window(2)[..100]),
        Err(VadError::WindowLength {
            expected: 512,
            actual: 100,
            ..
        })
    ));
    assert_eq!(stream.windows_submitted(), 2, "refused windows use no seq");
    assert_eq!(service.stats().windows_rejected, 1);

    release_tx.send(()).unwrap();
    blocker.wait().unwrap();
    for i in 0..2 {
        let o = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(o.seq, i);
    }
    // The refused window, offered again, continues the stream exactly.
    assert_eq!(stream.submit(g.window(2)).unwrap(), 2);
    let o = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(o.seq, 2);
    assert!((o.probability.unwrap() - g.probabilities[2]).abs() <= NATIVE_TOLERANCE);
}
