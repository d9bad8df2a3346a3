//! A caller who has its job's result sees the job counted: the worker records a
//! job's ending and run time before it sends the result, so `stats()` read right
//! after `wait()` (or `.await`) never lags by the last job.

use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig, PoolError, Priority};

#[test]
fn every_result_is_counted_by_the_time_its_caller_has_it() {
    let pool = InferencePool::new(PoolConfig {
        threads: 2,
        ..PoolConfig::named("count-first")
    });
    for i in 0..500u64 {
        assert_eq!(
            pool.submit(Priority::Normal, None, move || i)
                .unwrap()
                .wait(),
            Ok(i)
        );
        let stats = pool.stats();
        assert_eq!(stats.completed, i + 1, "job {i}: completed");
        assert_eq!(stats.run.count, i + 1, "job {i}: run timings");
    }
}

#[test]
fn a_panic_and_a_skip_are_counted_before_their_errors_arrive() {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("count-first-err")
    });
    for i in 0..100u64 {
        let bad = pool.submit(Priority::Normal, None, || -> () { panic!("boom") });
        assert!(matches!(
            bad.unwrap().wait(),
            Err(PoolError::Panicked { .. })
        ));
        assert_eq!(pool.stats().panicked, i + 1, "panic {i}");

        // A deadline already passed when the job is queued (monotonic time is
        // well over a second here: it counts from boot).
        let past = Instant::now().checked_sub(Duration::from_secs(1)).unwrap();
        let late = pool.submit(Priority::Normal, Some(past), || ()).unwrap();
        assert_eq!(late.wait(), Err(PoolError::TimedOut));
        assert_eq!(pool.stats().timed_out, i + 1, "skip {i}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_async_caller_sees_its_job_counted_too() {
    let pool = InferencePool::new(PoolConfig {
        threads: 2,
        ..PoolConfig::named("count-first-async")
    });
    for i in 0..200u64 {
        assert_eq!(
            pool.submit(Priority::High, None, move || i).unwrap().await,
            Ok(i)
        );
        assert_eq!(pool.stats().completed, i + 1, "job {i}");
    }
}
