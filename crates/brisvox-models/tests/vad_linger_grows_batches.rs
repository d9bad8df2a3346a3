//! With a fixed linger, a batch job waits (at most the linger, measured from the
//! oldest waiting window) so windows arriving shortly after join the same run.
//! The linger is long (500 ms) next to the 5 ms between the arrivals, so a busy
//! machine does not split the batch; only lower bounds on time are asserted
//! (waiting is the behaviour, how fast a loaded machine runs is not).

mod vad_common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::linger::Linger;
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::SileroRate;
use brisvox_testkit::PATIENCE;
use vad_common::{goldens, model_or_skip};

#[test]
fn windows_arriving_within_the_linger_share_one_run() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let linger = Duration::from_millis(500);
    let service = VadService::new(
        Arc::clone(&model),
        InferencePool::new(PoolConfig {
            threads: 1,
            ..PoolConfig::named("vad-linger")
        }),
        VadServiceConfig {
            linger: Linger::Fixed(linger),
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
    );
    let (tx, rx) = mpsc::channel();
    let mut streams: Vec<_> = (0..3)
        .map(|s| {
            let tx = tx.clone();
            service.open_stream(move |o| tx.send((s, o.seq, Instant::now())).unwrap())
        })
        .collect();
    let t0 = Instant::now();
    streams[0].submit(g.window(0)).unwrap();
    // Arrivals 5 ms apart (modelled time, not a handshake).
    std::thread::sleep(Duration::from_millis(5));
    streams[1].submit(g.window(1)).unwrap();
    streams[2].submit(g.window(2)).unwrap();
    let done: Vec<_> = (0..3)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    let stats = service.stats();
    assert_eq!((stats.batches, stats.max_batch_rows), (1, 3), "{stats:?}");
    let first = done.iter().map(|d| d.2).min().unwrap();
    assert!(first - t0 >= linger, "the job waited for the linger");

    // A lone window waits at most the linger: it is scored although no other
    // window ever comes (a batch-filling wait would never end).
    streams[0].submit(g.window(3)).unwrap();
    let (_, seq, _) = rx.recv_timeout(PATIENCE).expect("a lone window is scored");
    assert_eq!(seq, 1);
}

#[test]
fn an_inline_pool_ignores_the_linger() {
    let Some(model) = model_or_skip() else { return };
    let g = goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden");
    let service = VadService::new(
        model,
        InferencePool::inline(PoolConfig::named("vad-linger-inline")),
        VadServiceConfig {
            linger: Linger::Fixed(Duration::from_secs(5)),
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
    );
    let (tx, rx) = mpsc::channel();
    let mut stream = service.open_stream(move |o| tx.send(o.seq).unwrap());
    let t = Instant::now();
    stream.submit(g.window(0)).unwrap();
    assert_eq!(rx.try_recv(), Ok(0));
    // Inline, the run happens inside submit and does not wait the 5 s linger
    // (a bound taken from the behaviour, not from the machine's speed).
    assert!(t.elapsed() < Duration::from_secs(5));
}
