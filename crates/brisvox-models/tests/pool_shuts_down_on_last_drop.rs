//! Dropping the last handle stops the pool: running jobs finish, waiting jobs are
//! dropped (their callers get ShutDown), and the worker threads are joined.

use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};

#[test]
fn the_last_drop_joins_the_workers_and_fails_waiting_jobs() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("shutdown")
    });
    let clone = pool.clone();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let running = pool
        .submit(Priority::Normal, None, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            "finished"
        })
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let waiting = pool.submit(Priority::High, None, || "never").unwrap();

    drop(clone); // not the last handle: nothing happens
    assert_eq!(pool.stats().queued_high, 1);

    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let dropper = std::thread::spawn(move || {
        drop(pool); // joins the worker, which is still running the first job
        dropped_tx.send(()).unwrap();
    });
    assert!(
        dropped_rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "the drop waits for the running job"
    );
    release_tx.send(()).unwrap();
    dropped_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    dropper.join().unwrap();
    assert_eq!(running.wait(), Ok("finished"));
    assert_eq!(waiting.wait(), Err(PoolError::ShutDown));
}

#[test]
fn a_job_may_drop_the_last_handle_without_deadlock() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("self-drop")
    });
    let inner = pool.clone();
    let handle = pool
        .submit(Priority::Normal, None, move || {
            drop(inner);
            1
        })
        .unwrap();
    drop(pool);
    // Whether the job or the test thread dropped the last handle, nobody hangs.
    assert!(matches!(handle.wait(), Ok(1) | Err(PoolError::ShutDown)));
}
