//! Admission control: how many calls may run, and whether new ones are taken.
//!
//! A call is admitted with [`Admission::try_admit`], which returns a
//! [`CallPermit`]; dropping the permit ends the call's slot. New calls are
//! refused when the server is draining, at `max_calls`, or when the
//! [`PoolPressure`] hook says the inference pool is overloaded. `/readyz` is
//! [`Admission::is_ready`]: false while draining or full, so a load balancer
//! sends calls elsewhere.
//!
//! A drain has two steps: [`Admission::stop_ready`] turns readiness false while
//! calls are still admitted (the load balancer's time to notice), then
//! [`Admission::start_draining`] refuses every new call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Tells whether the inference pools are too busy for a new call. The
/// engine's integration implements it (for example with [`QueueDepthGuard`]
/// over the pool's queue depth, or [`crate::shedding::ModelPressure`] over the
/// pools' waits).
pub trait PoolPressure: Send + Sync + 'static {
    /// True when a new call should be refused.
    fn under_pressure(&self) -> bool;

    /// Why a new call should be refused with `active` calls running, if it
    /// should. The default refuses with [`Refusal::PoolPressure`] when
    /// [`PoolPressure::under_pressure`] says so.
    fn refusal(&self, active: usize) -> Option<Refusal> {
        let _ = active;
        self.under_pressure().then_some(Refusal::PoolPressure)
    }

    /// A call was admitted (after [`PoolPressure::refusal`] let it in and
    /// `max_calls` had room). Default: nothing.
    fn admitted(&self) {}

    /// An admitted call ended (its permit was dropped). Default: nothing.
    fn ended(&self) {}
}

/// No pool, no pressure.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPoolPressure;

impl PoolPressure for NoPoolPressure {
    fn under_pressure(&self) -> bool {
        false
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// At `max_calls`.
    #[error("the server is at its limit of {max_calls} calls")]
    Full {
        /// The limit.
        max_calls: usize,
    },
    /// The VAD's inference pool is overloaded.
    #[error("the server's model pool is overloaded")]
    PoolPressure,
    /// The Smart Turn executor is overloaded: its analyses wait.
    #[error("the server's turn detection is overloaded")]
    SmartTurnPressure,
    /// The server is shutting down.
    #[error("the server is draining")]
    Draining,
}

impl Refusal {
    /// Stable code for the `error` event and the metrics label.
    pub fn code(self) -> &'static str {
        match self {
            Self::Full { .. } => "server_full",
            Self::PoolPressure => "pool_pressure",
            Self::SmartTurnPressure => "smart_turn_pressure",
            Self::Draining => "server_draining",
        }
    }
}

/// The admission state shared by every route.
pub struct Admission {
    max_calls: usize,
    active: AtomicUsize,
    draining: AtomicBool,
    not_ready: AtomicBool,
    pressure: Box<dyn PoolPressure>,
    idle: Notify,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("max_calls", &self.max_calls)
            .field("active", &self.active())
            .field("draining", &self.is_draining())
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// Admission for at most `max_calls` calls, asking `pressure` too.
    pub fn new(max_calls: usize, pressure: Box<dyn PoolPressure>) -> Arc<Self> {
        Arc::new(Self {
            max_calls,
            active: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            not_ready: AtomicBool::new(false),
            pressure,
            idle: Notify::new(),
        })
    }

    /// Admits a call, or says why not.
    pub fn try_admit(self: &Arc<Self>) -> Result<CallPermit, Refusal> {
        if self.is_draining() {
            return Err(Refusal::Draining);
        }
        if let Some(refusal) = self.pressure.refusal(self.active()) {
            return Err(refusal);
        }
        self.active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_calls).then_some(n + 1)
            })
            .map_err(|_| Refusal::Full {
                max_calls: self.max_calls,
            })?;
        self.pressure.admitted();
        Ok(CallPermit {
            admission: Arc::clone(self),
        })
    }

    /// Calls running now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The call limit.
    pub fn max_calls(&self) -> usize {
        self.max_calls
    }

    /// True once draining began.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// True once a drain began, admitting or not ([`Admission::stop_ready`]).
    pub fn is_stopping(&self) -> bool {
        self.not_ready.load(Ordering::Acquire) || self.is_draining()
    }

    /// The first step of a drain: readiness turns false, calls are still admitted.
    pub fn stop_ready(&self) {
        self.not_ready.store(true, Ordering::Release);
    }

    /// Stops admitting calls (readiness turns false).
    pub fn start_draining(&self) {
        self.stop_ready();
        self.draining.store(true, Ordering::Release);
    }

    /// Ready for a new call: not draining, not full, no pool pressure.
    pub fn is_ready(&self) -> bool {
        let active = self.active();
        !self.is_stopping() && active < self.max_calls && self.pressure.refusal(active).is_none()
    }

    /// Waits until no call is running.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.active() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// One admitted call's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct CallPermit {
    admission: Arc<Admission>,
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        self.admission.pressure.ended();
        if self.admission.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.admission.idle.notify_waiters();
        }
    }
}

/// A sans-IO guard over the inference pool's queue depth: pressure only once
/// the depth has stayed over `limit` for `confirm` (a burst of dials on an
/// idle pool must not refuse calls; spec: "Railway", 100 ms).
#[derive(Debug, Clone)]
pub struct QueueDepthGuard {
    limit: usize,
    confirm: Duration,
    over_since: Option<Instant>,
}

/// Default confirmation time of [`QueueDepthGuard`].
pub const DEFAULT_QUEUE_CONFIRM: Duration = Duration::from_millis(100);

impl QueueDepthGuard {
    /// A guard that reports pressure after `confirm` over `limit`.
    pub fn new(limit: usize, confirm: Duration) -> Self {
        Self {
            limit,
            confirm,
            over_since: None,
        }
    }

    /// Feeds one observation of the queue `depth` at `now`; true under pressure.
    pub fn observe(&mut self, now: Instant, depth: usize) -> bool {
        if depth <= self.limit {
            self.over_since = None;
            return false;
        }
        let since = *self.over_since.get_or_insert(now);
        now.duration_since(since) >= self.confirm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Always;
    impl PoolPressure for Always {
        fn under_pressure(&self) -> bool {
            true
        }
    }

    #[test]
    fn permits_count_and_free_slots() {
        let a = Admission::new(2, Box::new(NoPoolPressure));
        let p1 = a.try_admit().unwrap();
        let _p2 = a.try_admit().unwrap();
        assert_eq!(a.try_admit().unwrap_err(), Refusal::Full { max_calls: 2 });
        assert!(!a.is_ready());
        drop(p1);
        assert!(a.is_ready());
        a.start_draining();
        assert_eq!(a.try_admit().unwrap_err(), Refusal::Draining);
        assert!(!a.is_ready());
    }

    #[test]
    fn a_drain_first_stops_readiness_then_admission() {
        let a = Admission::new(2, Box::new(NoPoolPressure));
        a.stop_ready();
        assert!(!a.is_ready(), "the load balancer must see it at once");
        assert!(a.is_stopping() && !a.is_draining());
        let late = a
            .try_admit()
            .expect("still admitted while the balancer catches up");
        a.start_draining();
        assert_eq!(a.try_admit().unwrap_err(), Refusal::Draining);
        drop(late);
        assert_eq!(a.active(), 0);
    }

    #[test]
    fn pool_pressure_refuses() {
        let a = Admission::new(2, Box::new(Always));
        assert_eq!(a.try_admit().unwrap_err(), Refusal::PoolPressure);
        assert!(!a.is_ready());
    }

    struct TurnsWait;
    impl PoolPressure for TurnsWait {
        fn under_pressure(&self) -> bool {
            true
        }
        fn refusal(&self, active: usize) -> Option<Refusal> {
            (active >= 1).then_some(Refusal::SmartTurnPressure)
        }
    }

    #[test]
    fn the_pressures_reason_and_the_active_calls_reach_admission() {
        let a = Admission::new(5, Box::new(TurnsWait));
        let _first = a.try_admit().expect("no call running: admitted");
        let refused = a.try_admit().unwrap_err();
        assert_eq!(refused, Refusal::SmartTurnPressure);
        assert_eq!(refused.code(), "smart_turn_pressure");
        assert!(!a.is_ready());
    }

    /// Counts the admissions and ends it is told of.
    #[derive(Default)]
    struct Counting {
        admitted: AtomicUsize,
        ended: AtomicUsize,
    }
    impl PoolPressure for Arc<Counting> {
        fn under_pressure(&self) -> bool {
            false
        }
        fn admitted(&self) {
            self.admitted.fetch_add(1, Ordering::Relaxed);
        }
        fn ended(&self) {
            self.ended.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn the_pressure_is_told_of_admissions_and_ends_but_not_of_refusals() {
        let seen = Arc::new(Counting::default());
        let a = Admission::new(1, Box::new(Arc::clone(&seen)));
        let permit = a.try_admit().unwrap();
        assert!(a.try_admit().is_err(), "full");
        assert_eq!(seen.admitted.load(Ordering::Relaxed), 1);
        assert_eq!(seen.ended.load(Ordering::Relaxed), 0);
        drop(permit);
        assert_eq!(seen.ended.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn queue_guard_needs_confirmation() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut g = QueueDepthGuard::new(10, DEFAULT_QUEUE_CONFIRM);
        assert!(!g.observe(ms(0), 50));
        assert!(!g.observe(ms(99), 50));
        assert!(g.observe(ms(100), 50));
        assert!(!g.observe(ms(101), 3));
        assert!(!g.observe(ms(150), 50), "a dip restarts the confirmation");
    }
}
