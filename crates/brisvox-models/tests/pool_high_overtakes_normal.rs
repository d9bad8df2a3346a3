//! A free worker takes a waiting High job before any waiting Normal job.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, Priority};

#[test]
fn high_jobs_submitted_later_run_before_waiting_normal_jobs() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("prio")
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

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for (label, priority) in [
        ("n1", Priority::Normal),
        ("n2", Priority::Normal),
        ("h1", Priority::High),
        ("n3", Priority::Normal),
        ("h2", Priority::High),
    ] {
        let order = Arc::clone(&order);
        handles.push(
            pool.submit(priority, None, move || order.lock().unwrap().push(label))
                .unwrap(),
        );
    }
    let stats = pool.stats();
    assert_eq!((stats.queued_high, stats.queued_normal), (2, 3));
    release_tx.send(()).unwrap();
    blocker.wait().unwrap();
    for h in handles {
        h.wait().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec!["h1", "h2", "n1", "n2", "n3"]);
    let stats = pool.stats();
    assert_eq!(stats.wait.count, 6);
    assert!(stats.wait.max_us > 0);
}
