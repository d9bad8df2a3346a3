//! Load shedding that protects the calls already admitted (sans-IO: every
//! input carries its time).
//!
//! Overload shows first as *waiting* in the model pools: Smart Turn analyses
//! queue behind each other on their executor, VAD batches behind the pool's
//! workers. A wait there adds to every caller's reply time. Rules:
//!
//! 1. [`WaitGuard`] turns samples of one pool's counters into a verdict. Each
//!    sample gives the recent wait: the mean submit-to-start time of the jobs
//!    that started since the previous sample, raised to at least the
//!    sample's interval when jobs wait and none started, and to the limit's
//!    double when a job was skipped for waiting too long (Smart Turn's start
//!    timeout). Samples closer than `min_interval` to the previous one are
//!    ignored (they would measure a handful of jobs).
//! 2. The guard presses once the recent wait has stayed over `limit` for
//!    `confirm` (sustained pressure: a burst of ends of turn that the pool
//!    absorbs must not refuse calls), or at once when a job was skipped for
//!    waiting past its deadline (Smart Turn's start timeout: that turn waits
//!    for its fallback, the failure the guards exist to prevent). It
//!    releases once the wait has stayed at or under `limit / 2` for
//!    `release` (hysteresis: no flapping at the threshold).
//! 3. [`ShedState`] combines the guards with a learned cap on calls: when a
//!    guard starts pressing with N calls running, the cap drops to N (calls
//!    beyond the level that caused the wait are refused even after the wait
//!    has gone, so admitted calls are not pushed back into it); after each
//!    `raise_every` without pressure the cap rises by one. Pressing again at
//!    the cap lowers it again: an additive increase after each decrease.
//! 4. A refused call's reason names the pool that pressed last:
//!    [`Pressure::SmartTurn`] (`smart_turn_pressure`) or [`Pressure::Pool`]
//!    (`pool_pressure`).
//!
//! [`ModelPressure`] is the shell: admission's [`PoolPressure`] over the VAD
//! service and the Smart Turn executor, sampling their counters whenever a
//! call arrives or `/readyz` is asked (rule 1 ignores samples too close
//! together), with the limits of `[limits]` (`load_shedding`,
//! `shed_wait_ms`, `shed_target_load_percent`, `shed_admission_rate_percent`).
//! These guards react to waits already there; before them,
//! [`crate::pacer`] spaces admissions at the rate the Smart Turn executor
//! absorbs their first analyses (its bucket holds what drains within
//! `shed_wait_ms`), and [`crate::forecast`] refuses a call that the predicted
//! load of the pools has no room for (both told the admissions, the forecast
//! the ends of calls too, and fed the pools' run times at the same samples).
//! A call is refused when any says so, with the reason of the first that did
//! (waits, pacing, predicted load).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use brisvox_models::pool::PoolStats;
use brisvox_models::smart_turn::SmartTurnService;
use brisvox_models::vad::service::VadService;

use crate::admission::{PoolPressure, Refusal};
use crate::forecast::{
    FLOOR_ANALYSES_PER_CALL_S, ForecastSettings, LoadForecast, PRIOR_ANALYSES_PER_CALL_S,
    PoolDemand, PoolSample, VAD_FLOOR_COST, VAD_PRIOR_COST,
};
use crate::pacer::{AdmissionPacer, PacerSettings};

pub use crate::forecast::Pressure;

/// One sample of a pool's counters (cumulative, as `InferencePool::stats`
/// gives them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitSample {
    /// Jobs waiting now.
    pub queued: usize,
    /// Jobs that have started so far.
    pub started: u64,
    /// Their summed submit-to-start time, microseconds.
    pub wait_us_total: u64,
    /// Jobs skipped so far because they waited past their deadline.
    pub timed_out: u64,
}

/// Settings of a [`WaitGuard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitLimits {
    /// Recent wait above which the pool is overloaded.
    pub limit: Duration,
    /// How long the wait must stay over `limit` before the guard presses.
    pub confirm: Duration,
    /// How long it must stay at or under `limit / 2` before it releases.
    pub release: Duration,
    /// Samples closer than this to the previous one are ignored.
    pub min_interval: Duration,
}

/// The verdict of one pool's waits (rules 1 and 2).
#[derive(Debug, Clone)]
pub struct WaitGuard {
    limits: WaitLimits,
    previous: Option<(Instant, WaitSample)>,
    over_since: Option<Instant>,
    under_since: Option<Instant>,
    pressing: bool,
    last_wait: Duration,
}

impl WaitGuard {
    /// A guard with these limits, not pressing.
    pub fn new(limits: WaitLimits) -> Self {
        Self {
            limits,
            previous: None,
            over_since: None,
            under_since: None,
            pressing: false,
            last_wait: Duration::ZERO,
        }
    }

    /// Whether the guard presses now.
    pub fn is_pressing(&self) -> bool {
        self.pressing
    }

    /// The recent wait of the last sample taken into account.
    pub fn last_wait(&self) -> Duration {
        self.last_wait
    }

    /// Feeds one sample taken at `now`; returns whether the guard presses.
    pub fn observe(&mut self, now: Instant, sample: WaitSample) -> bool {
        let Some((then, before)) = self.previous else {
            self.previous = Some((now, sample));
            return self.pressing;
        };
        let interval = now.saturating_duration_since(then);
        if interval < self.limits.min_interval {
            return self.pressing;
        }
        self.previous = Some((now, sample));
        let wait = self.recent_wait(interval, before, sample);
        self.last_wait = wait;
        if sample.timed_out > before.timed_out {
            self.over_since.get_or_insert(now);
            self.under_since = None;
            self.pressing = true;
        } else {
            self.update(now, wait);
        }
        self.pressing
    }

    /// Rule 1.
    fn recent_wait(&self, interval: Duration, before: WaitSample, now: WaitSample) -> Duration {
        let started = now.started.saturating_sub(before.started);
        let waited_us = now.wait_us_total.saturating_sub(before.wait_us_total);
        let mut wait = match started {
            0 => Duration::ZERO,
            n => Duration::from_micros(waited_us / n),
        };
        if started == 0 && now.queued > 0 {
            wait = wait.max(interval);
        }
        if now.timed_out > before.timed_out {
            wait = wait.max(self.limits.limit * 2);
        }
        wait
    }

    /// Rule 2.
    fn update(&mut self, now: Instant, wait: Duration) {
        if wait > self.limits.limit {
            self.under_since = None;
            let since = *self.over_since.get_or_insert(now);
            if now.saturating_duration_since(since) >= self.limits.confirm {
                self.pressing = true;
            }
        } else {
            self.over_since = None;
            if wait <= self.limits.limit / 2 {
                let since = *self.under_since.get_or_insert(now);
                if now.saturating_duration_since(since) >= self.limits.release {
                    self.pressing = false;
                }
            } else {
                self.under_since = None;
            }
        }
    }
}

/// The guards of every pool and the learned cap (rules 3 and 4).
#[derive(Debug, Clone)]
pub struct ShedState {
    guards: Vec<(Pressure, WaitGuard)>,
    cap: Option<usize>,
    raise_every: Duration,
    calm_since: Option<Instant>,
    last: Pressure,
    was_pressing: bool,
}

impl ShedState {
    /// A state over `guards`; the cap rises by one after each `raise_every`
    /// without pressure.
    pub fn new(guards: Vec<(Pressure, WaitGuard)>, raise_every: Duration) -> Self {
        let last = guards.first().map_or(Pressure::Pool, |(p, _)| *p);
        Self {
            guards,
            cap: None,
            raise_every,
            calm_since: None,
            last,
            was_pressing: false,
        }
    }

    /// The learned cap on calls (`None`: no cap).
    pub fn cap(&self) -> Option<usize> {
        self.cap
    }

    /// Feeds one sample per guard, in the order given to [`ShedState::new`],
    /// taken at `now` with `active` calls running; returns why a new call
    /// must be refused, if it must.
    pub fn observe(
        &mut self,
        now: Instant,
        active: usize,
        samples: &[WaitSample],
    ) -> Option<Pressure> {
        let mut pressing = None;
        for ((kind, guard), sample) in self.guards.iter_mut().zip(samples) {
            if guard.observe(now, *sample) {
                pressing = Some(*kind);
            }
        }
        match pressing {
            Some(kind) => {
                self.last = kind;
                self.calm_since = None;
                if !self.was_pressing {
                    self.was_pressing = true;
                    self.cap = Some(self.cap.map_or(active, |cap| cap.min(active)));
                }
                Some(kind)
            }
            None => {
                self.was_pressing = false;
                self.raise_cap(now);
                self.cap.filter(|&cap| active >= cap).map(|_| self.last)
            }
        }
    }

    fn raise_cap(&mut self, now: Instant) {
        let Some(cap) = self.cap else { return };
        let since = *self.calm_since.get_or_insert(now);
        let steps =
            now.saturating_duration_since(since).as_micros() / self.raise_every.as_micros().max(1);
        if steps == 0 {
            return;
        }
        self.calm_since = Some(now);
        // A cap raised past any plausible call count is no cap; the count of
        // steps is small (one per `raise_every` since the last observation).
        self.cap = cap.checked_add(usize::try_from(steps).unwrap_or(usize::MAX));
    }

    /// The guards, for reporting.
    pub fn guards(&self) -> impl Iterator<Item = (Pressure, &WaitGuard)> {
        self.guards.iter().map(|(p, g)| (*p, g))
    }
}

/// How long the wait must stay over the limit before calls are refused
/// (sustained pressure, not one burst of ends of turn).
pub const SHED_CONFIRM: Duration = Duration::from_millis(2000);
/// How long it must stay under half the limit before they are admitted again.
pub const SHED_RELEASE: Duration = Duration::from_millis(2000);
/// Samples closer together than this are ignored.
pub const SHED_MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The learned cap rises by one call after each of these without pressure.
pub const SHED_RAISE_EVERY: Duration = Duration::from_secs(2);

/// The limits of both pools' guards for a wait limit of `wait_ms`.
pub fn wait_limits(wait_ms: u32) -> WaitLimits {
    WaitLimits {
        limit: Duration::from_millis(u64::from(wait_ms)),
        confirm: SHED_CONFIRM,
        release: SHED_RELEASE,
        min_interval: SHED_MIN_INTERVAL,
    }
}

fn sample_of(pool: &PoolStats, queued_elsewhere: u64) -> WaitSample {
    WaitSample {
        queued: pool.queued_high
            + pool.queued_normal
            + usize::try_from(queued_elsewhere).unwrap_or(usize::MAX),
        started: pool.wait.count,
        wait_us_total: pool.wait.total_us,
        timed_out: pool.timed_out,
    }
}

/// Admission's pool pressure over the model services' waits (the module's
/// rules) and their predicted load ([`crate::forecast`]).
#[derive(Debug)]
pub struct ModelPressure {
    vad: Option<VadService>,
    smart_turn: Option<SmartTurnService>,
    state: Arc<Mutex<Guards>>,
}

/// The reactive guards, the pacer and the forecast, under one lock.
#[derive(Debug)]
struct Guards {
    waits: ShedState,
    forecast: LoadForecast,
    /// Present when Smart Turn runs.
    pacer: Option<AdmissionPacer>,
}

/// What load shedding has learned, for `/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShedEstimates {
    /// Each pool's estimated cost (pool-seconds per call-second) and the
    /// calls its target allows.
    pub pools: Vec<(Pressure, f64, usize)>,
    /// The wait guards' learned cap on calls.
    pub cap: Option<usize>,
    /// The pacer's admissions per second and its burst in calls.
    pub pacing: Option<(f64, f64)>,
}

/// The forecast's estimates, read by `/metrics` at each scrape.
#[derive(Debug, Clone)]
pub struct ShedReport(Arc<Mutex<Guards>>);

impl ShedReport {
    /// A report over these guards, each under the lock the report shares
    /// with nothing else ([`ModelPressure::report`] shares its own).
    pub fn new(waits: ShedState, forecast: LoadForecast, pacer: Option<AdmissionPacer>) -> Self {
        Self(Arc::new(Mutex::new(Guards {
            waits,
            forecast,
            pacer,
        })))
    }

    /// What the guards have learned.
    pub fn estimates(&self) -> ShedEstimates {
        let g = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ShedEstimates {
            pools: g.forecast.estimates().collect(),
            cap: g.waits.cap(),
            pacing: g.pacer.as_ref().map(|p| (p.rate(), p.burst())),
        }
    }
}

/// A speech-like probe for timing one Smart Turn analysis at startup.
fn probe_pcm() -> Vec<i16> {
    (0..4 * 16_000)
        .map(|i| {
            let t = f64::from(i) / 16_000.0;
            let env = (t * 3.0 * std::f64::consts::PI).sin().abs();
            (env * (2.0 * std::f64::consts::PI * (150.0 + 300.0 * t) * t).sin() * 6000.0) as i16
        })
        .collect()
}

/// The time of one Smart Turn analysis, run here on the caller's thread
/// (the model is warm; at startup, before any call).
fn analysis_time(turn: &SmartTurnService) -> Duration {
    let pcm = probe_pcm();
    (0..2)
        .filter_map(|_| turn.model().analyze(&pcm).ok())
        .map(|v| Duration::from_micros(v.features_us + v.model_us))
        .min()
        .unwrap_or(FALLBACK_ANALYSIS_TIME)
}

/// The analysis time assumed when the startup probe fails.
const FALLBACK_ANALYSIS_TIME: Duration = Duration::from_millis(100);

/// The pools the forecast watches, with their priors (the forecast's rule
/// 1), given Smart Turn's executor threads and analysis time.
fn demands(vad: Option<&VadService>, turn: Option<(usize, Duration)>) -> Vec<PoolDemand> {
    let vad = vad.map(|v| PoolDemand {
        kind: Pressure::Pool,
        threads: v.pool().stats().threads.max(1),
        prior: VAD_PRIOR_COST,
        floor: VAD_FLOOR_COST,
    });
    let turn = turn.map(|(threads, analysis)| {
        let analysis = analysis.as_secs_f64();
        PoolDemand {
            kind: Pressure::SmartTurn,
            threads,
            prior: analysis * PRIOR_ANALYSES_PER_CALL_S,
            floor: analysis * FLOOR_ANALYSES_PER_CALL_S,
        }
    });
    vad.into_iter().chain(turn).collect()
}

/// Smart Turn's executor threads and the time of one analysis measured now.
fn executor_of(turn: &SmartTurnService) -> (usize, Duration) {
    let analysis = analysis_time(turn);
    tracing::info!(
        analysis_ms = analysis.as_secs_f64() * 1e3,
        "load shedding: Smart Turn analysis time measured at startup"
    );
    (turn.pool().stats().threads.max(1), analysis)
}

/// The limits of `[limits]` that load shedding follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShedLimits {
    /// `shed_wait_ms`: the wait guards' limit and the pacer's wait budget.
    pub wait_ms: u32,
    /// `shed_target_load_percent`: the forecast's target.
    pub target_percent: u32,
    /// `shed_admission_rate_percent`: the pacer's share of the executor.
    pub rate_percent: u32,
}

impl ModelPressure {
    /// Pressure over `vad` and `smart_turn` with `limits`; `None` when
    /// neither runs (nothing to watch). Times one Smart Turn analysis
    /// (blocking, tens of ms): call it at startup.
    pub fn new(
        vad: Option<VadService>,
        smart_turn: Option<SmartTurnService>,
        limits: ShedLimits,
    ) -> Option<Self> {
        let ShedLimits {
            wait_ms,
            target_percent,
            rate_percent,
        } = limits;
        let limits = wait_limits(wait_ms);
        let mut guards = Vec::new();
        if vad.is_some() {
            guards.push((Pressure::Pool, WaitGuard::new(limits)));
        }
        if smart_turn.is_some() {
            guards.push((Pressure::SmartTurn, WaitGuard::new(limits)));
        }
        if guards.is_empty() {
            return None;
        }
        let executor = smart_turn.as_ref().map(executor_of);
        let forecast = LoadForecast::new(
            ForecastSettings::with_target(f64::from(target_percent) / 100.0),
            demands(vad.as_ref(), executor),
        );
        let pacing = PacerSettings::new(f64::from(rate_percent) / 100.0, limits.limit);
        let state = Guards {
            waits: ShedState::new(guards, SHED_RAISE_EVERY),
            forecast,
            pacer: executor
                .map(|(threads, analysis)| AdmissionPacer::new(pacing, threads, analysis)),
        };
        Some(Self {
            vad,
            smart_turn,
            state: Arc::new(Mutex::new(state)),
        })
    }

    /// The learned cap on calls, if pressure has set one.
    pub fn cap(&self) -> Option<usize> {
        self.lock().waits.cap()
    }

    /// The estimates, for `/metrics`.
    pub fn report(&self) -> ShedReport {
        ShedReport(Arc::clone(&self.state))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Guards> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One sample per guard, in the guards' order, and the pools' run
    /// counters in the forecast's order (the same order).
    fn samples(&self) -> (Vec<WaitSample>, Vec<PoolSample>) {
        let vad = self
            .vad
            .as_ref()
            .map(|v| (v.pool().stats(), v.stats().queued));
        let turn = self.smart_turn.as_ref().map(|t| (t.pool().stats(), 0));
        let pools: Vec<_> = vad.into_iter().chain(turn).collect();
        let waits = pools.iter().map(|(p, q)| sample_of(p, *q)).collect();
        let busy = pools
            .iter()
            .map(|(p, _)| PoolSample {
                busy_us: p.run.total_us,
                jobs: p.run.count,
            })
            .collect();
        (waits, busy)
    }
}

/// The wall clock of the server shell (the cores above take it as input).
#[allow(clippy::disallowed_methods)]
fn now() -> Instant {
    Instant::now()
}

impl PoolPressure for ModelPressure {
    fn under_pressure(&self) -> bool {
        self.refusal(0).is_some()
    }

    fn refusal(&self, active: usize) -> Option<Refusal> {
        let (waits, busy) = self.samples();
        let now = now();
        let mut g = self.lock();
        let reactive = g.waits.observe(now, active, &waits);
        g.forecast.observe(now, &busy);
        let predicted = g.forecast.refusal(active);
        let paced = match (&mut g.pacer, busy.last()) {
            (Some(pacer), Some(&turn)) => {
                pacer.observe(now, turn);
                (!pacer.allows(now)).then_some(Pressure::SmartTurn)
            }
            _ => None,
        };
        Some(match reactive.or(paced).or(predicted)? {
            Pressure::Pool => Refusal::PoolPressure,
            Pressure::SmartTurn => Refusal::SmartTurnPressure,
        })
    }

    fn admitted(&self) {
        let now = now();
        let mut g = self.lock();
        g.forecast.admitted(now);
        if let Some(pacer) = &mut g.pacer {
            pacer.admitted(now);
        }
    }

    fn ended(&self) {
        self.lock().forecast.ended(now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> WaitLimits {
        WaitLimits {
            limit: Duration::from_millis(100),
            confirm: Duration::from_millis(500),
            release: Duration::from_millis(1000),
            min_interval: Duration::from_millis(100),
        }
    }

    /// Samples every 100 ms with `jobs` jobs starting per sample, each
    /// having waited `wait_ms`; returns the verdict after each.
    struct Driver {
        t0: Instant,
        ms: u64,
        sample: WaitSample,
    }

    impl Driver {
        fn new() -> Self {
            Self {
                t0: Instant::now(),
                ms: 0,
                sample: WaitSample::default(),
            }
        }

        fn step(&mut self, jobs: u64, wait_ms: u64, queued: usize) -> (Instant, WaitSample) {
            self.ms += 100;
            self.sample.started += jobs;
            self.sample.wait_us_total += jobs * wait_ms * 1000;
            self.sample.queued = queued;
            (self.t0 + Duration::from_millis(self.ms), self.sample)
        }
    }

    #[test]
    fn a_short_burst_of_waiting_does_not_press() {
        let mut g = WaitGuard::new(limits());
        let mut d = Driver::new();
        let (t, s) = d.step(0, 0, 0);
        g.observe(t, s);
        for _ in 0..4 {
            let (t, s) = d.step(3, 300, 5);
            assert!(!g.observe(t, s), "400 ms of waiting is a burst");
        }
        let (t, s) = d.step(3, 10, 0);
        assert!(!g.observe(t, s));
        for _ in 0..4 {
            let (t, s) = d.step(3, 300, 5);
            assert!(!g.observe(t, s), "a dip restarted the confirmation");
        }
    }

    #[test]
    fn a_sustained_wait_presses_and_a_long_calm_releases() {
        let mut g = WaitGuard::new(limits());
        let mut d = Driver::new();
        let (t, s) = d.step(0, 0, 0);
        g.observe(t, s);
        let pressed_at = (1..=20)
            .find(|_| {
                let (t, s) = d.step(2, 250, 4);
                g.observe(t, s)
            })
            .expect("presses");
        assert_eq!(
            pressed_at, 6,
            "over from the 1st sample, confirmed 500 ms later"
        );
        // 80 ms is under the limit but over its half: still pressing.
        for _ in 0..20 {
            let (t, s) = d.step(2, 80, 1);
            assert!(g.observe(t, s), "hysteresis");
        }
        let released_at = (1..=30)
            .find(|_| {
                let (t, s) = d.step(2, 20, 0);
                !g.observe(t, s)
            })
            .expect("releases");
        assert_eq!(
            released_at, 11,
            "calm from the 1st sample, 1000 ms to release"
        );
    }

    #[test]
    fn jobs_stuck_in_the_queue_or_timed_out_count_as_waiting() {
        let mut g = WaitGuard::new(limits());
        let mut d = Driver::new();
        let (t, s) = d.step(0, 0, 0);
        g.observe(t, s);
        let (t, s) = d.step(0, 0, 3);
        g.observe(t, s);
        assert_eq!(
            g.last_wait(),
            Duration::from_millis(100),
            "nothing started, 3 wait"
        );
        let (t, mut s) = d.step(1, 0, 0);
        s.timed_out += 1;
        g.observe(t, s);
        assert_eq!(g.last_wait(), Duration::from_millis(200), "a skipped job");
    }

    #[test]
    fn a_skipped_job_presses_at_once_and_a_long_calm_releases() {
        let mut g = WaitGuard::new(limits());
        let mut d = Driver::new();
        let (t, s) = d.step(0, 0, 0);
        g.observe(t, s);
        let (t, mut s) = d.step(1, 20, 0);
        s.timed_out += 1;
        d.sample = s;
        assert!(g.observe(t, s), "a job past its deadline: no confirmation");
        let released_at = (1..=30)
            .find(|_| {
                let (t, s) = d.step(2, 20, 0);
                !g.observe(t, s)
            })
            .expect("releases");
        assert_eq!(released_at, 11, "calm for the release time, 1000 ms");
    }

    #[test]
    fn samples_too_close_together_are_ignored() {
        let mut g = WaitGuard::new(limits());
        let t0 = Instant::now();
        g.observe(t0, WaitSample::default());
        let busy = WaitSample {
            queued: 9,
            started: 1,
            wait_us_total: 900_000,
            timed_out: 0,
        };
        g.observe(t0 + Duration::from_millis(10), busy);
        assert_eq!(g.last_wait(), Duration::ZERO);
    }

    fn shed() -> ShedState {
        let guards = vec![
            (Pressure::Pool, WaitGuard::new(limits())),
            (Pressure::SmartTurn, WaitGuard::new(limits())),
        ];
        ShedState::new(guards, Duration::from_secs(5))
    }

    #[test]
    fn pressure_caps_calls_at_the_level_that_caused_it_then_the_cap_rises() {
        let mut s = shed();
        let mut d = Driver::new();
        let idle = WaitSample::default();
        let (t, _) = d.step(0, 0, 0);
        assert_eq!(s.observe(t, 10, &[idle, idle]), None);
        let mut refused = None;
        for _ in 0..6 {
            let (t, busy) = d.step(2, 400, 6);
            refused = s.observe(t, 40, &[idle, busy]);
        }
        assert_eq!(refused, Some(Pressure::SmartTurn));
        assert_eq!(s.cap(), Some(40));
        // The wait goes; the guard releases after its calm; the cap stays.
        let mut now = t;
        for _ in 0..15 {
            let (t, calm) = d.step(2, 10, 0);
            now = t;
            s.observe(t, 39, &[idle, calm]);
        }
        assert_eq!(s.observe(now, 39, &[idle, d.sample]), None, "under the cap");
        assert_eq!(
            s.observe(now, 40, &[idle, d.sample]),
            Some(Pressure::SmartTurn),
            "at the cap, refused with the last pool's reason"
        );
        let later = now + Duration::from_secs(11);
        assert_eq!(s.observe(later, 40, &[idle, d.sample]), None);
        assert_eq!(s.cap(), Some(42), "one call more per 5 s of calm");
    }
}
