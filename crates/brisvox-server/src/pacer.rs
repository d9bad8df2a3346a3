//! Admissions paced to the Smart Turn executor's throughput (sans-IO: every
//! input carries its time).
//!
//! A call reaches its first end of turn a few seconds after it is admitted.
//! Calls admitted together (a burst of dials, refused callers redialling
//! together, a slot freed for many) therefore ask for their analyses together,
//! and an executor that runs one analysis at a time makes the last of them
//! wait for all the others: measured here, 45 calls admitted in 1.2 s gave
//! Smart Turn waits growing from 0 to over its 1 s start deadline, whatever
//! the number of calls running
//! (`bench/results/shedding-2026-12-02-s7-poisson`). Limiting the number of
//! calls ([`crate::forecast`]) does not bound such a burst; limiting the rate
//! of admissions does. [`AdmissionPacer`] is a token bucket:
//!
//! 1. **Analysis time.** The mean run time of one analysis, seeded with the
//!    time measured at startup and learned from the executor's counters: each
//!    new job moves the estimate by [`PacerSettings::per_job_weight`] toward
//!    the mean of the jobs since the previous sample.
//! 2. **Rate.** Tokens refill at `share · threads / analysis` per second: the
//!    analyses per second the executor finishes, times the share. Admissions
//!    spaced at that rate ask for their first analyses spaced at that rate
//!    too, however their turns line up.
//! 3. **Burst.** The bucket holds `wait_budget · threads / analysis` tokens
//!    (at least one): as many analyses as drain within the wait budget when
//!    they all arrive at once. It starts full.
//! 4. **Admission.** A new call is allowed while the bucket holds a whole
//!    token ([`AdmissionPacer::allows`] only looks); an admitted call takes
//!    one ([`AdmissionPacer::admitted`]). Admissions that raced past an empty
//!    bucket leave it in debt (at most one burst deep), repaid by the refill.

use std::time::{Duration, Instant};

use crate::forecast::PoolSample;

/// Settings of an [`AdmissionPacer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacerSettings {
    /// Share of the executor's analyses per second at which calls are
    /// admitted (0..=1).
    pub share: f64,
    /// The wait a burst of first analyses may cause (rule 3).
    pub wait_budget: Duration,
    /// How far one new job moves the analysis time toward its sample (rule 1).
    pub per_job_weight: f64,
}

impl PacerSettings {
    /// The defaults with this share and wait budget.
    pub fn new(share: f64, wait_budget: Duration) -> Self {
        Self {
            share,
            wait_budget,
            per_job_weight: 0.1,
        }
    }
}

/// The token bucket of the module's rules.
#[derive(Debug, Clone)]
pub struct AdmissionPacer {
    settings: PacerSettings,
    threads: usize,
    analysis_s: f64,
    seen: Option<PoolSample>,
    tokens: f64,
    refilled_at: Option<Instant>,
}

impl AdmissionPacer {
    /// A pacer for an executor of `threads` whose analysis takes `analysis`
    /// (measured at startup); the bucket starts full.
    pub fn new(settings: PacerSettings, threads: usize, analysis: Duration) -> Self {
        let mut pacer = Self {
            settings,
            threads: threads.max(1),
            analysis_s: analysis.as_secs_f64().max(1e-4),
            seen: None,
            tokens: 0.0,
            refilled_at: None,
        };
        pacer.tokens = pacer.burst();
        pacer
    }

    /// Feeds the executor's counters sampled at `now` (rule 1).
    pub fn observe(&mut self, now: Instant, sample: PoolSample) {
        self.refill(now);
        let seen = self.seen.replace(sample).unwrap_or(sample);
        let jobs = sample.jobs.saturating_sub(seen.jobs);
        if jobs == 0 {
            return;
        }
        let busy_s = sample.busy_us.saturating_sub(seen.busy_us) as f64 / 1e6;
        let mean = busy_s / jobs as f64;
        let keep = (1.0 - self.settings.per_job_weight).powi(jobs.min(1000) as i32);
        self.analysis_s = (self.analysis_s + (1.0 - keep) * (mean - self.analysis_s)).max(1e-4);
        // A slower analysis shrinks the bucket: what it holds above the new
        // size is not kept.
        self.tokens = self.tokens.min(self.burst());
    }

    /// Whether a call arriving at `now` may be admitted (rule 4; takes
    /// nothing).
    pub fn allows(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    /// A call was admitted at `now`: it takes a token (rule 4).
    pub fn admitted(&mut self, now: Instant) {
        self.refill(now);
        self.tokens = (self.tokens - 1.0).max(-self.burst());
    }

    /// The learned time of one analysis.
    pub fn analysis_time(&self) -> Duration {
        Duration::from_secs_f64(self.analysis_s)
    }

    /// Admissions per second (rule 2).
    pub fn rate(&self) -> f64 {
        self.settings.share * self.threads as f64 / self.analysis_s
    }

    /// The bucket's size in calls (rule 3).
    pub fn burst(&self) -> f64 {
        let drained = self.settings.wait_budget.as_secs_f64() * self.threads as f64;
        (drained / self.analysis_s).floor().max(1.0)
    }

    fn refill(&mut self, now: Instant) {
        let from = self.refilled_at.replace(now).unwrap_or(now);
        let elapsed = now.saturating_duration_since(from).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate()).min(self.burst());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 62.5 ms per analysis (exact in binary), 1 thread, a 250 ms budget:
    /// a burst of 4, and at a share of 0.5, 8 admissions per second.
    fn pacer() -> AdmissionPacer {
        AdmissionPacer::new(
            PacerSettings::new(0.5, Duration::from_millis(250)),
            1,
            Duration::from_micros(62_500),
        )
    }

    fn admit_while_allowed(p: &mut AdmissionPacer, now: Instant) -> usize {
        let mut n = 0;
        while p.allows(now) {
            p.admitted(now);
            n += 1;
            assert!(n < 10_000, "never refused");
        }
        n
    }

    #[test]
    fn a_burst_is_admitted_up_to_what_drains_within_the_budget() {
        let mut p = pacer();
        let t0 = Instant::now();
        assert_eq!(p.burst(), 4.0);
        assert_eq!(p.rate(), 8.0);
        assert_eq!(admit_while_allowed(&mut p, t0), 4);
        assert!(!p.allows(t0 + Duration::from_millis(124)));
        assert!(p.allows(t0 + Duration::from_millis(125)), "one per 125 ms");
    }

    #[test]
    fn looking_takes_nothing() {
        let mut p = pacer();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert!(p.allows(t0));
        }
        assert_eq!(admit_while_allowed(&mut p, t0), 4);
    }

    #[test]
    fn sustained_dials_at_twice_the_rate_are_admitted_at_the_rate_evenly() {
        let mut p = pacer();
        let t0 = Instant::now();
        let mut admitted = Vec::new();
        // One dial every 62.5 ms for 10 s: 16 per second against 8.
        for i in 0..160u64 {
            let now = t0 + Duration::from_micros(62_500 * i);
            if p.allows(now) {
                p.admitted(now);
                admitted.push(i);
            }
        }
        // The bucket of 4 lasts the first 7 dials (it refills half a token
        // per dial), then every second dial: 8 per second.
        assert_eq!(admitted[..7], [0, 1, 2, 3, 4, 5, 6]);
        let paced = &admitted[7..];
        assert!(
            paced.windows(2).all(|w| w[1] - w[0] == 2),
            "one admission every second dial: {paced:?}"
        );
        assert_eq!(admitted.len(), 7 + 76);
    }

    #[test]
    fn learns_a_slower_analysis_and_admits_less() {
        let mut p = pacer();
        let t0 = Instant::now();
        p.observe(t0, PoolSample::default());
        // 200 analyses of 125 ms each.
        let mut s = PoolSample::default();
        for i in 1..=20u64 {
            s.jobs += 10;
            s.busy_us += 10 * 125_000;
            p.observe(t0 + Duration::from_millis(100 * i), s);
        }
        let learned = p.analysis_time().as_secs_f64();
        assert!((learned - 0.125).abs() < 0.0001, "learned {learned}");
        assert!((p.rate() - 4.0).abs() < 0.01);
        assert_eq!(p.burst(), 2.0);
        assert_eq!(admit_while_allowed(&mut p, t0 + Duration::from_secs(2)), 2);
    }

    #[test]
    fn a_sample_without_new_jobs_teaches_nothing() {
        let mut p = pacer();
        let t0 = Instant::now();
        let s = PoolSample {
            busy_us: 5_000_000,
            jobs: 3,
        };
        p.observe(t0, s);
        p.observe(t0 + Duration::from_secs(1), s);
        assert_eq!(p.analysis_time(), Duration::from_micros(62_500));
    }

    #[test]
    fn racing_admissions_leave_a_debt_repaid_by_the_refill() {
        let mut p = pacer();
        let t0 = Instant::now();
        for _ in 0..20 {
            p.admitted(t0);
        }
        // At most one burst of debt (4): 5 tokens to a whole one, 625 ms at 8/s.
        assert!(!p.allows(t0 + Duration::from_millis(624)));
        assert!(p.allows(t0 + Duration::from_millis(625)));
    }

    #[test]
    fn the_bucket_holds_at_least_one_call() {
        let p = AdmissionPacer::new(
            PacerSettings::new(0.9, Duration::from_millis(10)),
            1,
            Duration::from_millis(100),
        );
        assert_eq!(p.burst(), 1.0);
    }
}
