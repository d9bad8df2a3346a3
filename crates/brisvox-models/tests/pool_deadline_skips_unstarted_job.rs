//! A job whose deadline passes while it waits is skipped; its caller gets TimedOut.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};
use brisvox_testkit::{PATIENCE, eventually};

#[test]
fn a_job_not_started_by_its_deadline_never_runs() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("deadline")
    });
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let blocker = pool
        .submit(Priority::High, None, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(5)).unwrap();

    let ran = Arc::new(AtomicBool::new(false));
    let ran_in_job = Arc::clone(&ran);
    let late_deadline = Instant::now() + Duration::from_millis(20);
    let late = pool
        .submit(Priority::High, Some(late_deadline), move || {
            ran_in_job.store(true, Ordering::SeqCst)
        })
        .unwrap();
    let in_time = pool
        .submit(
            Priority::High,
            Some(Instant::now() + Duration::from_secs(60)),
            || 5,
        )
        .unwrap();
    // The worker is busy until released: let the late job's deadline pass first.
    eventually(PATIENCE, "the late job's deadline passed", || {
        Instant::now() > late_deadline
    });
    release_tx.send(()).unwrap();

    blocker.wait().unwrap();
    assert_eq!(late.wait(), Err(PoolError::TimedOut));
    assert!(!ran.load(Ordering::SeqCst), "a timed-out job must not run");
    assert_eq!(in_time.wait(), Ok(5));
    let stats = pool.stats();
    assert_eq!(stats.timed_out, 1);
    assert_eq!(stats.completed, 2);
}

#[test]
fn a_dropped_handle_cancels_an_unstarted_job() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("cancel")
    });
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let blocker = pool
        .submit(Priority::Normal, None, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let ran_in_job = Arc::clone(&ran);
    drop(
        pool.submit(Priority::Normal, None, move || {
            ran_in_job.store(true, Ordering::SeqCst)
        })
        .unwrap(),
    );
    let after = pool.submit(Priority::Normal, None, || ()).unwrap();
    release_tx.send(()).unwrap();
    blocker.wait().unwrap();
    after.wait().unwrap();
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(pool.stats().cancelled, 1);
}
