//! A panicking job fails only itself: its caller gets Panicked, the worker lives on.

use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};

#[test]
fn a_panicking_job_fails_alone_and_the_worker_keeps_serving() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("panic")
    });
    let before = pool.submit(Priority::Normal, None, || 1).unwrap();
    let bad = pool
        .submit(Priority::Normal, None, || -> u32 {
            panic!("model exploded")
        })
        .unwrap();
    let after: Vec<_> = (0..10)
        .map(|i| {
            pool.submit(Priority::Normal, None, move || {
                std::thread::current()
                    .name()
                    .map(str::to_owned)
                    .zip(Some(i))
            })
            .unwrap()
        })
        .collect();

    assert_eq!(before.wait(), Ok(1));
    match bad.wait() {
        Err(PoolError::Panicked { message }) => assert!(message.contains("model exploded")),
        other => panic!("expected Panicked, got {other:?}"),
    }
    for (i, handle) in after.into_iter().enumerate() {
        let (name, value) = handle.wait().unwrap().unwrap();
        assert_eq!(name, "panic-0", "runs on the same, named worker");
        assert_eq!(value, i);
    }
    let stats = pool.stats();
    assert_eq!(stats.panicked, 1);
    assert_eq!(stats.completed, 11);
    assert_eq!(stats.run.count, 12);
}

#[tokio::test(flavor = "current_thread")]
async fn an_async_caller_gets_the_panic_as_an_error() {
    let pool = InferencePool::new(PoolConfig {
        threads: 2,
        ..PoolConfig::named("panic-async")
    });
    let bad = pool
        .submit(Priority::High, None, || -> () {
            panic!("{}", String::from("owned"))
        })
        .unwrap();
    let good = pool.submit(Priority::High, None, || "ok").unwrap();
    let bad = tokio::time::timeout(Duration::from_secs(5), bad).await;
    assert!(matches!(bad, Ok(Err(PoolError::Panicked { ref message })) if message == "owned"));
    assert_eq!(good.await, Ok("ok"));
}
