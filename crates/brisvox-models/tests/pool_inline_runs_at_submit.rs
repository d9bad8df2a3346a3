//! Inline mode runs each job on the caller's thread inside submit.

use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};

#[test]
fn results_are_ready_when_submit_returns_and_run_on_the_caller() {
    let pool = InferencePool::inline(PoolConfig::named("inline"));
    assert!(pool.is_inline());
    let caller = std::thread::current().id();
    let mut handle = pool
        .submit(Priority::High, None, move || std::thread::current().id())
        .unwrap();
    assert_eq!(handle.try_take(), Some(Ok(caller)));

    let mut bad = pool
        .submit(Priority::Normal, None, || -> u8 { panic!("inline boom") })
        .unwrap();
    assert!(matches!(
        bad.try_take(),
        Some(Err(PoolError::Panicked { .. }))
    ));

    let mut late = pool
        .submit(
            Priority::Normal,
            Some(Instant::now() - Duration::from_millis(1)),
            || 1,
        )
        .unwrap();
    assert_eq!(late.try_take(), Some(Err(PoolError::TimedOut)));

    let stats = pool.stats();
    assert_eq!(stats.threads, 0);
    assert_eq!(stats.submitted, 3);
    assert_eq!(stats.completed, 1);
    assert_eq!(stats.panicked, 1);
    assert_eq!(stats.timed_out, 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_inline_handle_resolves_on_the_paused_clock_without_advancing_it() {
    let pool = InferencePool::inline(PoolConfig::named("inline-async"));
    let t0 = tokio::time::Instant::now();
    let v = pool.submit(Priority::High, None, || 42).unwrap().await;
    assert_eq!(v, Ok(42));
    assert_eq!(tokio::time::Instant::now(), t0);
}
