//! A full line refuses new jobs at once (PoolSaturated) instead of queueing them.

use std::sync::mpsc;
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};

#[test]
fn a_full_line_rejects_the_newest_job_and_counts_it() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        high_capacity: 2,
        normal_capacity: 2,
        ..PoolConfig::named("sat")
    });
    // Occupy the only worker until we say so.
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let blocker = pool
        .submit(Priority::Normal, None, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(5)).unwrap();

    let waiting: Vec<_> = (0..2)
        .map(|i| pool.submit(Priority::Normal, None, move || i).unwrap())
        .collect();
    assert_eq!(pool.stats().queued_normal, 2);
    let refused = pool.submit(Priority::Normal, None, || 99);
    match refused {
        Err(PoolError::Saturated { priority, capacity }) => {
            assert_eq!(priority, Priority::Normal);
            assert_eq!(capacity, 2);
        }
        other => panic!("expected Saturated, got {:?}", other.map(|_| ())),
    }
    let message = PoolError::Saturated {
        priority: Priority::Normal,
        capacity: 2,
    }
    .to_string();
    assert!(message.contains("PoolSaturated"), "{message}");
    // The other line has its own bound and still accepts.
    let high = pool.submit(Priority::High, None, || 7).unwrap();

    release_tx.send(()).unwrap();
    blocker.wait().unwrap();
    let results: Vec<i32> = waiting.into_iter().map(|h| h.wait().unwrap()).collect();
    assert_eq!(results, vec![0, 1]);
    assert_eq!(high.wait().unwrap(), 7);
    let stats = pool.stats();
    assert_eq!(stats.rejected, 1);
    assert_eq!(stats.submitted, 4);
    assert_eq!(stats.completed, 4);
    assert_eq!(stats.queued_normal, 0);
}
