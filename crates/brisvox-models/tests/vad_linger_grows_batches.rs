//! With a fixed linger, a batch job waits (at most the linger, measured from the
//! oldest waiting window) so windows arriving meanwhile join the same run; an
//! inline pool never waits.
//!
//! The service's clock is frozen (`VadService::with_clock`) and the linger of the
//! first test is an hour, so nothing depends on how fast this machine runs: the
//! job is seen lingering before the other windows arrive, and a full batch ends
//! the wait. Rows per run and lingers are asserted, never durations.

mod vad_common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::linger::Linger;
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use brisvox_testkit::{PATIENCE, eventually};
use vad_common::{FROZEN, frozen_service, golden_16k, model_or_skip};

fn fixed(model: Arc<SileroModel>, linger: Duration, max_batch: usize) -> VadService {
    frozen_service(model, "vad-linger", Linger::Fixed(linger), max_batch)
}

#[test]
fn windows_arriving_within_the_linger_share_one_run() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    let service = fixed(model, Duration::from_secs(3600), 3);
    let (tx, rx) = mpsc::channel();
    let mut streams: Vec<_> = (0..3)
        .map(|s| {
            let tx = tx.clone();
            service.open_stream(move |o| tx.send((s, o.seq)).unwrap())
        })
        .collect();
    streams[0].submit(g.window(0)).unwrap();
    eventually(PATIENCE, "the job lingers for company", || {
        service.stats().lingers == 1
    });
    streams[1].submit(g.window(1)).unwrap();
    streams[2].submit(g.window(2)).unwrap();
    // The batch is full: the wait ends at once, long before the hour.
    for _ in 0..3 {
        rx.recv_timeout(PATIENCE).expect("every window is scored");
    }
    let stats = service.stats();
    assert_eq!(
        (stats.batches, stats.max_batch_rows, stats.lingers),
        (1, 3, 1),
        "{stats:?}"
    );
}

#[test]
fn a_lone_window_waits_at_most_the_linger() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    // No other window ever comes: a wait for a full batch would never end.
    let service = fixed(model, Duration::from_millis(20), 128);
    let (tx, rx) = mpsc::channel();
    let mut stream = service.open_stream(move |o| tx.send(o.seq).unwrap());
    stream.submit(g.window(0)).unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE), Ok(0), "a lone window is scored");
    let stats = service.stats();
    assert_eq!((stats.batches, stats.lingers), (1, 1), "{stats:?}");
}

#[test]
fn an_inline_pool_ignores_the_linger() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    let service = VadService::with_clock(
        model,
        InferencePool::inline(PoolConfig::named("vad-linger-inline")),
        VadServiceConfig {
            linger: Linger::Fixed(Duration::from_secs(3600)),
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
        || FROZEN,
    );
    let (tx, rx) = mpsc::channel();
    let mut stream = service.open_stream(move |o| tx.send(o.seq).unwrap());
    stream.submit(g.window(0)).unwrap();
    // Inline, the run happens inside submit, without waiting.
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(service.stats().lingers, 0);
}
