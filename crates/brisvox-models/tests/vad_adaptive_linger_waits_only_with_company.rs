//! The adaptive linger (the default): a batch job that starts with a small batch
//! waits for more windows only when the streams active lately will send some
//! meanwhile; it runs as soon as the batch is full, or when its oldest window is
//! the bound old; a call alone never waits.
//!
//! The service's clock is frozen (`VadService::with_clock`), so which streams
//! count as active and how long a job may wait do not depend on how fast this
//! machine runs; only rows per run and lingers are asserted, never durations.

mod vad_common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::vad::linger::Linger;
use brisvox_models::vad::service::{VadService, VadStream, WindowOutcome};
use brisvox_models::vad::silero::{FOLDED_TOLERANCE, SileroModel};
use brisvox_testkit::{PATIENCE, eventually};
use vad_common::{Golden, frozen_service, golden_16k, hold_the_worker, model_or_skip};

fn service(model: Arc<SileroModel>, linger: Linger, max_batch: usize) -> VadService {
    frozen_service(model, "vad-adaptive", linger, max_batch)
}

type Outcomes = mpsc::Receiver<(usize, WindowOutcome)>;

fn open(service: &VadService, n: usize) -> (Vec<VadStream>, Outcomes) {
    let (tx, rx) = mpsc::channel();
    let streams = (0..n)
        .map(|s| {
            let tx = tx.clone();
            service.open_stream(move |o| tx.send((s, o)).unwrap())
        })
        .collect();
    (streams, rx)
}

/// Receives `n` outcomes and checks each against the golden of its window.
fn expect_outcomes(rx: &Outcomes, g: &Golden, n: usize) {
    for _ in 0..n {
        let (s, o) = rx.recv_timeout(PATIENCE).expect("every window is scored");
        let p = o.probability.unwrap();
        let want = g.probabilities[o.seq as usize];
        assert!(
            (p - want).abs() <= FOLDED_TOLERANCE,
            "stream {s} seq {}",
            o.seq
        );
    }
}

/// Twelve streams submit their first window while the only worker is held: the
/// first job runs a full batch of 8 and leaves 4, whose job then starts with
/// 8 other active streams and so lingers.
fn twelve_streams_leave_a_lingering_job(
    service: &VadService,
    g: &Golden,
) -> (Vec<VadStream>, Outcomes) {
    let (mut streams, rx) = open(service, 12);
    let (release, blocker) = hold_the_worker(service.pool());
    for stream in &mut streams {
        stream.submit(g.window(0)).unwrap();
    }
    release.send(()).unwrap();
    blocker.wait().unwrap();
    expect_outcomes(&rx, g, 8);
    eventually(PATIENCE, "the second job lingers", || {
        service.stats().lingers == 1
    });
    (streams, rx)
}

#[test]
fn a_lingering_job_runs_when_the_windows_of_active_streams_fill_its_batch() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    // An hour: the batch filling, not the bound, ends this wait.
    let service = service(model, Linger::Adaptive(Duration::from_secs(3600)), 8);
    let (mut streams, rx) = twelve_streams_leave_a_lingering_job(&service, &g);
    for stream in &mut streams[..4] {
        stream.submit(g.window(1)).unwrap();
    }
    expect_outcomes(&rx, &g, 8);
    let stats = service.stats();
    assert_eq!(
        (stats.batches, stats.max_batch_rows, stats.windows_scored),
        (2, 8, 16),
        "two full runs, the second joined by the 4 later windows: {stats:?}"
    );
}

#[test]
fn a_lingering_job_without_company_runs_at_its_bound() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    let service = service(model, Linger::Adaptive(Duration::from_millis(20)), 8);
    let (_streams, rx) = twelve_streams_leave_a_lingering_job(&service, &g);
    // Nothing more comes: the 4 windows still run, together.
    expect_outcomes(&rx, &g, 4);
    let stats = service.stats();
    assert_eq!((stats.batches, stats.windows_scored), (2, 12), "{stats:?}");
}

#[test]
fn a_call_alone_never_lingers() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    // An hour: a lone window that lingered would not be scored in time.
    let service = service(model, Linger::Adaptive(Duration::from_secs(3600)), 128);
    // Open streams that never send are not active.
    let (_silent, _) = open(&service, 9);
    let (mut one, rx) = open(&service, 1);
    for k in 0..20 {
        one[0].submit(g.window(k)).unwrap();
        expect_outcomes(&rx, &g, 1);
    }
    let stats = service.stats();
    assert_eq!(
        (stats.lingers, stats.batches, stats.max_batch_rows),
        (0, 20, 1),
        "{stats:?}"
    );
}
