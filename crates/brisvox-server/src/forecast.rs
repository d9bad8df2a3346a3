//! Admission on predicted load (sans-IO: every input carries its time).
//!
//! The waits that [`crate::shedding`] watches appear only once calls reach
//! their ends of turn, seconds after they were admitted: every call that
//! arrives before the first wait is admitted, and those calls then wait
//! together. [`LoadForecast`] refuses on what the calls *will* cost instead:
//!
//! 1. **Demand per call.** For each model pool (Smart Turn's executor, the
//!    VAD's pool) the forecast keeps an estimate of the pool's busy time per
//!    second of call (`cost`, pool-seconds per call-second). It starts at a
//!    conservative prior (for Smart Turn: the warm-up's analysis time times
//!    [`PRIOR_ANALYSES_PER_CALL_S`]) and never falls under a floor (for Smart
//!    Turn: one analysis per 10 s of call, [`FLOOR_ANALYSES_PER_CALL_S`]).
//! 2. **Learning.** The pools' cumulative run times are sampled whenever
//!    admission asks. Their growth is divided by the call time of the
//!    *settled* calls over the same window: a call's first `settle` seconds
//!    are not counted, since a call that has not spoken yet costs nothing and
//!    would pull the estimate down just before its turns arrive. For the same
//!    reason a pool learns nothing before it has run `learn_after_jobs` jobs
//!    (a burst of new calls, none of which has reached a turn, keeps the
//!    prior). A window closes once it holds `learn_call_time` of settled call
//!    time and `learn_min_wall` of wall time; its sample moves the estimate
//!    by the weight `rise` when higher (a higher cost is believed at once) or
//!    `fall` when lower (a lower one slowly).
//! 3. **Admission.** A new call is refused when, with it, the calls running
//!    (those admitted but not yet speaking included, at the full cost) would
//!    load a pool's threads over `target`: `(active + 1) · cost > target ·
//!    threads`. Once refusing, the pool refuses until the load with one more
//!    call is at or under `target - band` (hysteresis: calls ending one by
//!    one at the limit do not make admission flap).
//! 4. The refusal names the pool ([`Pressure::SmartTurn`] before
//!    [`Pressure::Pool`] when both refuse).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Which pool's load refuses a call (the forecast's and
/// [`crate::shedding`]'s guards').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pressure {
    /// The VAD's inference pool or queue.
    Pool,
    /// The Smart Turn executor.
    SmartTurn,
}

/// Prior Smart Turn analyses per second of call (one every 5 s; the
/// benchmark's calls make about one per 9 s). It holds until the executor
/// has run 8 analyses; bursts of admissions before then are the pacer's
/// ([`crate::pacer`]).
pub const PRIOR_ANALYSES_PER_CALL_S: f64 = 0.2;
/// The Smart Turn estimate never falls under one analysis per 20 s of call.
pub const FLOOR_ANALYSES_PER_CALL_S: f64 = 0.05;
/// Prior VAD pool time per second of call: 31.25 Silero windows per second
/// at 64 µs each (twice the batched cost measured here).
pub const VAD_PRIOR_COST: f64 = 0.002;
/// The VAD estimate never falls under a tenth of its prior.
pub const VAD_FLOOR_COST: f64 = VAD_PRIOR_COST / 10.0;

/// One pool the forecast watches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolDemand {
    /// The refusal reason when this pool refuses.
    pub kind: Pressure,
    /// The pool's threads (jobs it runs at once).
    pub threads: usize,
    /// Starting estimate, pool-seconds per call-second.
    pub prior: f64,
    /// The estimate never falls under this.
    pub floor: f64,
}

/// Settings of a [`LoadForecast`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForecastSettings {
    /// Predicted utilisation of a pool's threads (0..1) above which new calls
    /// are refused.
    pub target: f64,
    /// Hysteresis: once refusing, admit again at `target - band`.
    pub band: f64,
    /// A call's first seconds, not counted in the demand (rule 2).
    pub settle: Duration,
    /// Settled call time a learning window needs.
    pub learn_call_time: Duration,
    /// Jobs a pool must have run before it learns.
    pub learn_after_jobs: u64,
    /// Wall time a learning window needs.
    pub learn_min_wall: Duration,
    /// Weight of a sample above the estimate.
    pub rise: f64,
    /// Weight of a sample under the estimate.
    pub fall: f64,
}

impl ForecastSettings {
    /// The defaults with this target (a share of the pools' threads).
    pub fn with_target(target: f64) -> Self {
        Self {
            target,
            band: 0.05,
            settle: Duration::from_secs(3),
            learn_call_time: Duration::from_secs(20),
            learn_after_jobs: 8,
            learn_min_wall: Duration::from_secs(2),
            rise: 0.5,
            fall: 0.2,
        }
    }
}

#[derive(Debug, Clone)]
struct PoolModel {
    demand: PoolDemand,
    cost: f64,
    seen: Option<PoolSample>,
    jobs: u64,
    window_busy_us: u64,
    refusing: bool,
}

/// One pool's cumulative counters, sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolSample {
    /// Summed run time of its jobs, microseconds.
    pub busy_us: u64,
    /// Jobs run.
    pub jobs: u64,
}

/// The predicted load of the model pools (the module's rules).
#[derive(Debug, Clone)]
pub struct LoadForecast {
    settings: ForecastSettings,
    pools: Vec<PoolModel>,
    /// Admission times of the calls running, oldest first.
    calls: VecDeque<Instant>,
    credited_to: Option<Instant>,
    window_start: Option<Instant>,
    window_calls: Duration,
}

impl LoadForecast {
    /// A forecast over `pools`, each at its prior.
    pub fn new(settings: ForecastSettings, pools: Vec<PoolDemand>) -> Self {
        let pools = pools
            .into_iter()
            .map(|demand| PoolModel {
                cost: demand.prior.max(demand.floor),
                demand,
                seen: None,
                jobs: 0,
                window_busy_us: 0,
                refusing: false,
            })
            .collect();
        Self {
            settings,
            pools,
            calls: VecDeque::new(),
            credited_to: None,
            window_start: None,
            window_calls: Duration::ZERO,
        }
    }

    /// A call was admitted at `now`.
    pub fn admitted(&mut self, now: Instant) {
        self.credit(now);
        self.calls.push_back(now);
    }

    /// A call ended at `now`. Calls are not told apart: the oldest is taken
    /// as the one that ended (only its settled time depends on it).
    pub fn ended(&mut self, now: Instant) {
        self.credit(now);
        self.calls.pop_front();
    }

    /// Feeds the pools' counters, in the order given to
    /// [`LoadForecast::new`], sampled at `now` (rule 2).
    pub fn observe(&mut self, now: Instant, samples: &[PoolSample]) {
        self.credit(now);
        for (pool, &sample) in self.pools.iter_mut().zip(samples) {
            let seen = pool.seen.replace(sample).unwrap_or(sample);
            pool.window_busy_us += sample.busy_us.saturating_sub(seen.busy_us);
            pool.jobs += sample.jobs.saturating_sub(seen.jobs);
        }
        let start = *self.window_start.get_or_insert(now);
        if self.window_calls < self.settings.learn_call_time
            || now.saturating_duration_since(start) < self.settings.learn_min_wall
        {
            return;
        }
        let call_s = self.window_calls.as_secs_f64();
        let after_jobs = self.settings.learn_after_jobs;
        for pool in self.pools.iter_mut().filter(|p| p.jobs >= after_jobs) {
            let sample = pool.window_busy_us as f64 / 1e6 / call_s;
            let weight = if sample > pool.cost {
                self.settings.rise
            } else {
                self.settings.fall
            };
            pool.cost = (pool.cost + weight * (sample - pool.cost)).max(pool.demand.floor);
        }
        for pool in &mut self.pools {
            pool.window_busy_us = 0;
        }
        self.window_start = Some(now);
        self.window_calls = Duration::ZERO;
    }

    /// Why one more call must be refused with `active` calls running, if it
    /// must (rules 3 and 4).
    pub fn refusal(&mut self, active: usize) -> Option<Pressure> {
        let target = self.settings.target;
        let band = self.settings.band;
        let mut refused = None;
        for pool in &mut self.pools {
            let load = (active + 1) as f64 * pool.cost / pool.demand.threads.max(1) as f64;
            let limit = if pool.refusing { target - band } else { target };
            pool.refusing = load > limit;
            if pool.refusing && refused != Some(Pressure::SmartTurn) {
                refused = Some(pool.demand.kind);
            }
        }
        refused
    }

    /// Each pool's estimate (pool-seconds per call-second) and the calls it
    /// predicts at `target`, for reporting.
    pub fn estimates(&self) -> impl Iterator<Item = (Pressure, f64, usize)> + '_ {
        self.pools.iter().map(|p| {
            let calls = self.settings.target * p.demand.threads.max(1) as f64 / p.cost;
            // A hair over, so an exact quotient is not floored one short.
            (p.demand.kind, p.cost, (calls + 1e-9).floor() as usize)
        })
    }

    /// Adds the settled call time since the last credit (rule 2).
    fn credit(&mut self, now: Instant) {
        let from = self.credited_to.replace(now).unwrap_or(now);
        let settle = self.settings.settle;
        let mut added = Duration::ZERO;
        for &admitted in &self.calls {
            let start = from.max(admitted + settle);
            added += now.saturating_duration_since(start);
        }
        self.window_calls += added;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Powers of two: the limits below come out exact in binary floating
    /// point.
    const PRIOR: f64 = 1.0 / 64.0;
    const FLOOR: f64 = 1.0 / 512.0;

    fn turn_pool() -> PoolDemand {
        PoolDemand {
            kind: Pressure::SmartTurn,
            threads: 1,
            prior: PRIOR,
            floor: FLOOR,
        }
    }

    fn at(busy_us: u64, jobs: u64) -> [PoolSample; 1] {
        [PoolSample { busy_us, jobs }]
    }

    fn forecast() -> LoadForecast {
        LoadForecast::new(ForecastSettings::with_target(0.5), vec![turn_pool()])
    }

    /// Admits calls one by one at `now` until refused; returns how many.
    fn admit_until_refused(f: &mut LoadForecast, now: Instant) -> usize {
        let mut n = 0;
        while f.refusal(n).is_none() {
            f.admitted(now);
            n += 1;
            assert!(n < 10_000, "never refused");
        }
        n
    }

    #[test]
    fn admits_up_to_the_predicted_limit_and_refuses_past_it() {
        let mut f = forecast();
        let t0 = Instant::now();
        f.observe(t0, &at(0, 0));
        // 0.5 of a thread at 1/64 s per call-second: 32 calls.
        let n = admit_until_refused(&mut f, t0);
        assert_eq!(n, 32);
        assert_eq!(f.refusal(32), Some(Pressure::SmartTurn));
        let (_, _, predicted) = f.estimates().next().unwrap();
        assert_eq!(predicted, 32);
    }

    #[test]
    fn a_burst_of_calls_before_any_turn_is_held_at_the_prior() {
        let mut f = forecast();
        let t0 = Instant::now();
        f.observe(t0, &at(0, 0));
        let n = admit_until_refused(&mut f, t0);
        // Seconds pass, past the settle time, and no turn has come yet: the
        // silent calls teach nothing, so the limit does not rise under them.
        for s in 1..=10 {
            f.observe(t0 + Duration::from_secs(s), &at(0, 0));
        }
        assert_eq!(f.estimates().next().unwrap().1, PRIOR);
        assert_eq!(f.refusal(n), Some(Pressure::SmartTurn));
        // The first analyses (fewer than the 8 learning waits for) do not
        // either.
        f.observe(t0 + Duration::from_secs(12), &at(10_000, 7));
        assert_eq!(f.estimates().next().unwrap().1, PRIOR);
    }

    /// Admits `calls` calls at `t0` and lets their settle time pass without
    /// work; returns the time reached.
    fn settled_calls(f: &mut LoadForecast, t0: Instant, calls: usize) -> Instant {
        f.observe(t0, &at(0, 0));
        for _ in 0..calls {
            f.admitted(t0);
        }
        let settled = t0 + ForecastSettings::with_target(0.5).settle;
        f.observe(settled, &at(0, 0));
        settled
    }

    /// Runs `calls` settled calls for `secs`, the pool busy `cost` seconds
    /// per call-second (one job per 100 ms), observing every 100 ms;
    /// returns the time reached.
    fn run(
        f: &mut LoadForecast,
        from: Instant,
        busy: &mut PoolSample,
        (calls, cost): (u64, f64),
        secs: u64,
    ) -> Instant {
        let mut now = from;
        for _ in 0..secs * 10 {
            now += Duration::from_millis(100);
            busy.busy_us += (calls as f64 * cost * 100_000.0).round() as u64;
            busy.jobs += 1;
            f.observe(now, &[*busy]);
        }
        now
    }

    #[test]
    fn learns_a_higher_cost_and_refuses_sooner() {
        let mut f = forecast();
        let t0 = Instant::now();
        let settled = settled_calls(&mut f, t0, 20);
        let mut busy = PoolSample::default();
        // Each call costs 1/16 s per second: 4x the prior.
        run(&mut f, settled, &mut busy, (20, 0.0625), 30);
        let (_, cost, predicted) = f.estimates().next().unwrap();
        assert!((cost - 0.0625).abs() < 0.0005, "learned {cost}");
        assert_eq!(predicted, 8);
        assert_eq!(f.refusal(7), None);
        assert_eq!(f.refusal(8), Some(Pressure::SmartTurn));
    }

    #[test]
    fn learns_a_lower_cost_slowly_and_never_under_the_floor() {
        let mut f = forecast();
        let t0 = Instant::now();
        let settled = settled_calls(&mut f, t0, 20);
        let mut busy = PoolSample::default();
        // Two windows (the first after 20 call-s, the next 2 s later) at a
        // third of the prior: each moves the estimate a fifth of the way.
        let now = run(&mut f, settled, &mut busy, (20, 0.005), 4);
        let (_, after_two, _) = f.estimates().next().unwrap();
        let expected = 0.005 + (PRIOR - 0.005) * 0.8f64.powi(2);
        assert!(
            (after_two - expected).abs() < 1e-9,
            "{after_two} against {expected}"
        );
        run(&mut f, now, &mut busy, (20, 0.0), 120);
        let (_, cost, predicted) = f.estimates().next().unwrap();
        assert_eq!(cost, FLOOR);
        assert_eq!(predicted, 256);
    }

    #[test]
    fn recovers_when_calls_end_with_hysteresis() {
        let mut f = forecast();
        let t0 = Instant::now();
        f.observe(t0, &at(0, 0));
        let n = admit_until_refused(&mut f, t0);
        let t1 = t0 + Duration::from_secs(1);
        f.ended(t1);
        // 31 running: one more is the 32nd, at the target but not under
        // target - band (0.45 of the thread is 28.8 calls).
        assert_eq!(f.refusal(n - 1), Some(Pressure::SmartTurn), "hysteresis");
        for _ in 0..4 {
            f.ended(t1);
        }
        assert_eq!(f.refusal(n - 5), None, "27 + 1 calls load 0.4375");
        assert_eq!(f.refusal(n - 1), None, "admitting again up to the target");
        assert_eq!(f.refusal(n), Some(Pressure::SmartTurn));
    }

    #[test]
    fn smart_turn_is_named_before_the_vad_pool() {
        let vad = PoolDemand {
            kind: Pressure::Pool,
            threads: 1,
            prior: 0.5,
            floor: 0.5,
        };
        let mut f = LoadForecast::new(ForecastSettings::with_target(0.5), vec![vad, turn_pool()]);
        assert_eq!(f.refusal(0), None, "one call loads the VAD pool 0.5");
        assert_eq!(f.refusal(1), Some(Pressure::Pool));
        assert_eq!(f.refusal(100), Some(Pressure::SmartTurn));
    }

    #[test]
    fn only_settled_call_time_is_learned_from() {
        let mut f = forecast();
        let t0 = Instant::now();
        f.observe(t0, &at(0, 0));
        f.admitted(t0);
        f.observe(t0 + Duration::from_secs(3), &at(0, 0));
        assert_eq!(
            f.window_calls,
            Duration::ZERO,
            "the first 3 s are not counted"
        );
        f.observe(t0 + Duration::from_secs(5), &at(0, 0));
        assert_eq!(f.window_calls, Duration::from_secs(2));
        f.ended(t0 + Duration::from_secs(6));
        f.observe(t0 + Duration::from_secs(9), &at(0, 0));
        assert_eq!(
            f.window_calls,
            Duration::from_secs(3),
            "an ended call stops counting"
        );
    }
}
