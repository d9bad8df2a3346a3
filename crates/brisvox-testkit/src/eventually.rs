//! Waiting for a condition with a deadline: what a test does instead of
//! sleeping "long enough" for something to happen.
//!
//! Each form polls its predicate until it holds (or gives a value) and panics
//! with `what` when the deadline passes first. The deadline is wall-clock time
//! (`std::time::Instant`), so it bounds the test even on tokio's paused clock;
//! it only costs time when the test fails, so take it generous ([`PATIENCE`]):
//! a loaded machine is slow, not wrong.
//!
//! Between polls the sync forms sleep the thread, the async forms sleep on
//! tokio's clock, starting at 1 ms and doubling up to 32 ms. On a paused clock
//! that sleep moves virtual time on by the same amount (tokio advances it when
//! the runtime is idle), which is what the paused-clock tests want when they
//! wait for tasks to wind down.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// A generous deadline for a condition that should hold at once or nearly:
/// only a failing test waits this long.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The first pause between two polls.
const FIRST_POLL: Duration = Duration::from_millis(1);
/// The longest pause between two polls.
const MAX_POLL: Duration = Duration::from_millis(32);

/// Polls `ready` until it returns true; panics with `what` after `within`.
#[track_caller]
pub fn eventually(within: Duration, what: impl Display, mut ready: impl FnMut() -> bool) {
    eventually_some(within, what, || ready().then_some(()))
}

/// Polls `value` until it gives `Some`, and returns that; panics with `what`
/// after `within`.
#[track_caller]
pub fn eventually_some<T>(
    within: Duration,
    what: impl Display,
    mut value: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    let mut pause = FIRST_POLL;
    loop {
        if let Some(v) = value() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("{what}: still not so after {within:?}");
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_POLL);
    }
}

/// Awaits `ready()` until it gives true; panics with `what` after `within`
/// (wall-clock time, even on a paused clock).
///
/// `ready` makes a fresh future each poll, so it may await (an HTTP request,
/// a lock): `|| async { get(addr, "/readyz").await.0 == 200 }`.
pub async fn eventually_async<F, Fut>(within: Duration, what: impl Display, mut ready: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_some_async(within, what, || {
        let fut = ready();
        async move { fut.await.then_some(()) }
    })
    .await
}

/// Awaits `value()` until it gives `Some`, and returns that; panics with `what`
/// after `within` (wall-clock time, even on a paused clock).
pub async fn eventually_some_async<T, F, Fut>(
    within: Duration,
    what: impl Display,
    mut value: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    let mut pause = FIRST_POLL;
    loop {
        if let Some(v) = value().await {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("{what}: still not so after {within:?}");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_POLL);
    }
}

/// A `what` written only when the wait fails, so it can show the last state
/// the predicate saw (kept in a `Cell` or `RefCell` the predicate writes):
/// `eventually(PATIENCE, later(|| format!("last: {:?}", last.borrow())), ...)`.
pub fn later<F: Fn() -> String>(describe: F) -> Later<F> {
    Later(describe)
}

/// See [`later`].
pub struct Later<F>(F);

impl<F: Fn() -> String> Display for Later<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn a_condition_another_thread_makes_true_is_seen() {
        let flag = Arc::new(AtomicU32::new(0));
        let setter = Arc::clone(&flag);
        let t = std::thread::spawn(move || {
            for _ in 0..3 {
                setter.fetch_add(1, Ordering::SeqCst);
                std::thread::yield_now();
            }
        });
        eventually(PATIENCE, "three increments", || {
            flag.load(Ordering::SeqCst) == 3
        });
        t.join().unwrap();
    }

    #[test]
    fn the_value_comes_back() {
        let mut polls = 0;
        let v = eventually_some(PATIENCE, "the third poll", || {
            polls += 1;
            (polls == 3).then_some("ready")
        });
        assert_eq!((v, polls), ("ready", 3));
    }

    #[test]
    #[should_panic(expected = "never: still not so after")]
    fn a_condition_that_never_holds_fails_at_the_deadline() {
        eventually(Duration::from_millis(20), "never", || false);
    }

    #[tokio::test]
    async fn an_async_predicate_may_await() {
        let n = AtomicU32::new(0);
        let got = eventually_some_async(PATIENCE, "the fifth poll", || async {
            tokio::task::yield_now().await;
            let seen = n.fetch_add(1, Ordering::SeqCst) + 1;
            (seen == 5).then_some(seen)
        })
        .await;
        assert_eq!(got, 5);
    }

    #[test]
    #[should_panic(expected = "last seen 7: still not so after")]
    fn a_later_description_shows_the_last_state() {
        let last = std::cell::Cell::new(0);
        eventually(
            Duration::from_millis(20),
            later(|| format!("last seen {}", last.get())),
            || {
                last.set(7);
                false
            },
        );
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "never: still not so after")]
    async fn the_async_deadline_is_wall_clock_time_even_when_paused() {
        eventually_async(Duration::from_millis(20), "never", || async { false }).await;
    }
}
