//! The model services' counters on `/metrics`, read at each scrape.
//!
//! The VAD service, the Smart Turn service and their inference pools keep
//! lock-free counters and wait / run histograms of their own
//! ([`PoolStats`], [`VadServiceStats`], [`SmartTurnStats`]). Rather than copy
//! every job into a Prometheus histogram on the inference thread, `/metrics`
//! reads those counters when it is scraped and writes them in the Prometheus
//! text format ([`render_model_stats`], appended to the registry's text by
//! [`ServerMetrics::render`](crate::metrics::ServerMetrics::render)).
//!
//! Series (label `pool` is `vad` or `smart_turn`):
//!
//! - `brisvox_model_wait_seconds{pool}`: histogram of the time a job waited
//!   for an inference thread (VAD: one batch job; Smart Turn: one analysis).
//!   Skipped jobs (deadline passed, cancelled) are not in it.
//! - `brisvox_model_run_seconds{pool}`: histogram of the jobs' run times.
//! - `brisvox_model_queued_jobs{pool}`: jobs waiting now (gauge).
//! - `brisvox_model_jobs_total{pool,outcome}`: jobs by how they ended
//!   (`completed`, `rejected`: the line was full, `timed_out`: not started
//!   before the deadline, `cancelled`: the caller stopped waiting before the
//!   start, `panicked`).
//! - `brisvox_smart_turn_analyses_total{result}`: `complete`, `incomplete`,
//!   `refused`, `timed_out`, `failed` (as the calls saw them).
//! - `brisvox_smart_turn_compute_seconds_total{part}`: `features` and `model`
//!   time of the completed analyses.
//! - `brisvox_vad_windows_total{result}`: `scored`, `failed`, `rejected`;
//!   `brisvox_vad_batches_total`; `brisvox_vad_queued_windows` (gauge);
//!   `brisvox_vad_schedule_retries_total`: batch jobs the pool refused, whose
//!   windows stayed queued and were offered again; `brisvox_vad_lingers_total`:
//!   batch jobs that waited for other calls' windows (`[runtime] vad_linger_ms`).
//! - With `[limits] load_shedding` ([`crate::forecast`]):
//!   `brisvox_shed_call_cost{pool}`, the estimate of the pool's busy seconds
//!   per second of call; `brisvox_shed_predicted_calls{pool}`, the calls that
//!   load its threads to `shed_target_load_percent` at that estimate (the
//!   predicted limit); `brisvox_shed_wait_cap_calls`, the cap the waits set
//!   (absent until they set one); with Smart Turn ([`crate::pacer`]):
//!   `brisvox_shed_admission_rate`, the calls per second the pacer admits,
//!   and `brisvox_shed_admission_burst_calls`, its bucket's size.

use std::fmt::Write as _;

use brisvox_models::pool::{PoolStats, TIMING_BUCKET_BOUNDS_US, TimingStats};
use brisvox_models::smart_turn::{SmartTurnService, SmartTurnStats};
use brisvox_models::vad::service::{VadService, VadServiceStats};

use crate::shedding::{Pressure, ShedEstimates, ShedReport};

/// The model services whose counters `/metrics` shows; either may be absent
/// (energy VAD, a fixed turn verdict).
#[derive(Debug, Clone, Default)]
pub struct ModelStatsSource {
    /// The batched Silero VAD service.
    pub vad: Option<VadService>,
    /// The Smart Turn executor.
    pub smart_turn: Option<SmartTurnService>,
    /// Load shedding's estimates (`[limits] load_shedding`).
    pub shedding: Option<ShedReport>,
}

impl ModelStatsSource {
    /// Appends the services' series to `out` (Prometheus text format).
    pub fn render_into(&self, out: &mut String) {
        let vad = self.vad.as_ref().map(|s| (s.stats(), s.pool().stats()));
        let turn = self
            .smart_turn
            .as_ref()
            .map(|s| (s.stats(), s.pool().stats()));
        render_model_stats(
            out,
            vad.as_ref().map(|(s, p)| (s, p)),
            turn.as_ref().map(|(s, p)| (s, p)),
        );
        if let Some(report) = &self.shedding {
            write_shedding(out, report);
        }
    }
}

fn pool_label(p: Pressure) -> &'static str {
    match p {
        Pressure::Pool => "vad",
        Pressure::SmartTurn => "smart_turn",
    }
}

/// The `brisvox_shed_*` series of the module doc.
fn write_shedding(out: &mut String, report: &ShedReport) {
    let ShedEstimates {
        pools: estimates,
        cap,
        pacing,
    } = report.estimates();
    head(
        out,
        "brisvox_shed_call_cost",
        "gauge",
        "Load shedding's estimate of a pool's busy seconds per second of call.",
    );
    for (pool, cost, _) in &estimates {
        let pool = pool_label(*pool);
        let _ = writeln!(out, "brisvox_shed_call_cost{{pool=\"{pool}\"}} {cost}");
    }
    head(
        out,
        "brisvox_shed_predicted_calls",
        "gauge",
        "Calls that load a pool's threads to shed_target_load_percent at that estimate.",
    );
    for (pool, _, calls) in &estimates {
        let pool = pool_label(*pool);
        let _ = writeln!(
            out,
            "brisvox_shed_predicted_calls{{pool=\"{pool}\"}} {calls}"
        );
    }
    if let Some(cap) = cap {
        head(
            out,
            "brisvox_shed_wait_cap_calls",
            "gauge",
            "The cap on calls the pools' waits set (absent: none).",
        );
        let _ = writeln!(out, "brisvox_shed_wait_cap_calls {cap}");
    }
    if let Some((rate, burst)) = pacing {
        head(
            out,
            "brisvox_shed_admission_rate",
            "gauge",
            "Calls per second load shedding admits (a share of the Smart Turn executor's analyses per second).",
        );
        let _ = writeln!(out, "brisvox_shed_admission_rate {rate}");
        head(
            out,
            "brisvox_shed_admission_burst_calls",
            "gauge",
            "Calls admitted at once before the admission rate applies.",
        );
        let _ = writeln!(out, "brisvox_shed_admission_burst_calls {burst}");
    }
}

/// Writes the series of the module doc for the services given.
pub fn render_model_stats(
    out: &mut String,
    vad: Option<(&VadServiceStats, &PoolStats)>,
    smart_turn: Option<(&SmartTurnStats, &PoolStats)>,
) {
    let pools: Vec<(&str, &PoolStats)> = [
        vad.map(|(_, p)| ("vad", p)),
        smart_turn.map(|(_, p)| ("smart_turn", p)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !pools.is_empty() {
        write_pools(out, &pools);
    }
    if let Some((s, _)) = smart_turn {
        write_smart_turn(out, s);
    }
    if let Some((s, _)) = vad {
        write_vad(out, s);
    }
}

fn write_pools(out: &mut String, pools: &[(&str, &PoolStats)]) {
    head(
        out,
        "brisvox_model_wait_seconds",
        "histogram",
        "Time a model job waited for an inference thread (vad: a batch job, smart_turn: an analysis).",
    );
    for (pool, stats) in pools {
        histogram(out, "brisvox_model_wait_seconds", pool, &stats.wait);
    }
    head(
        out,
        "brisvox_model_run_seconds",
        "histogram",
        "Run time of a model job on its inference thread.",
    );
    for (pool, stats) in pools {
        histogram(out, "brisvox_model_run_seconds", pool, &stats.run);
    }
    head(
        out,
        "brisvox_model_queued_jobs",
        "gauge",
        "Model jobs waiting for an inference thread now.",
    );
    for (pool, stats) in pools {
        let queued = stats.queued_high + stats.queued_normal;
        let _ = writeln!(out, "brisvox_model_queued_jobs{{pool=\"{pool}\"}} {queued}");
    }
    head(
        out,
        "brisvox_model_jobs_total",
        "counter",
        "Model jobs by how they ended.",
    );
    for (pool, s) in pools {
        for (outcome, n) in [
            ("completed", s.completed),
            ("rejected", s.rejected),
            ("timed_out", s.timed_out),
            ("cancelled", s.cancelled),
            ("panicked", s.panicked),
        ] {
            let _ = writeln!(
                out,
                "brisvox_model_jobs_total{{pool=\"{pool}\",outcome=\"{outcome}\"}} {n}"
            );
        }
    }
}

fn write_smart_turn(out: &mut String, s: &SmartTurnStats) {
    head(
        out,
        "brisvox_smart_turn_analyses_total",
        "counter",
        "Smart Turn analyses by result.",
    );
    for (result, n) in [
        ("complete", s.complete_verdicts),
        (
            "incomplete",
            s.completed.saturating_sub(s.complete_verdicts),
        ),
        ("refused", s.refused),
        ("timed_out", s.timed_out),
        ("failed", s.failed),
    ] {
        let _ = writeln!(
            out,
            "brisvox_smart_turn_analyses_total{{result=\"{result}\"}} {n}"
        );
    }
    head(
        out,
        "brisvox_smart_turn_compute_seconds_total",
        "counter",
        "Feature and model time of the completed Smart Turn analyses.",
    );
    for (part, us) in [
        ("features", s.features_us_total),
        ("model", s.model_us_total),
    ] {
        let _ = writeln!(
            out,
            "brisvox_smart_turn_compute_seconds_total{{part=\"{part}\"}} {}",
            seconds(us)
        );
    }
}

fn write_vad(out: &mut String, s: &VadServiceStats) {
    head(
        out,
        "brisvox_vad_windows_total",
        "counter",
        "VAD windows by result (rejected: refused at submit).",
    );
    for (result, n) in [
        ("scored", s.windows_scored),
        ("failed", s.windows_failed),
        ("rejected", s.windows_rejected),
    ] {
        let _ = writeln!(out, "brisvox_vad_windows_total{{result=\"{result}\"}} {n}");
    }
    head(
        out,
        "brisvox_vad_batches_total",
        "counter",
        "Batched Silero model runs.",
    );
    let _ = writeln!(out, "brisvox_vad_batches_total {}", s.batches);
    head(
        out,
        "brisvox_vad_queued_windows",
        "gauge",
        "VAD windows waiting for a batch now.",
    );
    let _ = writeln!(out, "brisvox_vad_queued_windows {}", s.queued);
    head(
        out,
        "brisvox_vad_schedule_retries_total",
        "counter",
        "VAD batch jobs the pool refused (line full); their windows stayed queued and were offered again.",
    );
    let _ = writeln!(
        out,
        "brisvox_vad_schedule_retries_total {}",
        s.schedule_retries
    );
    head(
        out,
        "brisvox_vad_lingers_total",
        "counter",
        "VAD batch jobs that waited for other calls' windows before their run ([runtime] vad_linger_ms).",
    );
    let _ = writeln!(out, "brisvox_vad_lingers_total {}", s.lingers);
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// One histogram series from a pool's buckets. The counters are read one by
/// one, so the count is taken as the sum of the buckets (consistent with them).
fn histogram(out: &mut String, name: &str, pool: &str, t: &TimingStats) {
    let mut cumulative = 0u64;
    for (bound_us, n) in TIMING_BUCKET_BOUNDS_US.iter().zip(t.buckets) {
        cumulative += n;
        let _ = writeln!(
            out,
            "{name}_bucket{{pool=\"{pool}\",le=\"{}\"}} {cumulative}",
            seconds(*bound_us)
        );
    }
    cumulative += t.buckets[TIMING_BUCKET_BOUNDS_US.len()..]
        .iter()
        .sum::<u64>();
    let _ = writeln!(
        out,
        "{name}_bucket{{pool=\"{pool}\",le=\"+Inf\"}} {cumulative}"
    );
    let _ = writeln!(out, "{name}_sum{{pool=\"{pool}\"}} {}", seconds(t.total_us));
    let _ = writeln!(out, "{name}_count{{pool=\"{pool}\"}} {cumulative}");
}

/// Microseconds as seconds (Rust prints f64 without an exponent).
fn seconds(us: u64) -> f64 {
    us as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisvox_models::pool::TIMING_BUCKETS;

    fn pool(wait_buckets: &[(usize, u64)]) -> PoolStats {
        let mut wait = TimingStats::default();
        for &(i, n) in wait_buckets {
            wait.buckets[i] = n;
            wait.count += n;
        }
        wait.total_us = 1_500_000;
        PoolStats {
            completed: 7,
            rejected: 2,
            cancelled: 3,
            queued_normal: 4,
            wait,
            ..PoolStats::default()
        }
    }

    #[test]
    fn pool_histograms_are_cumulative_in_seconds() {
        let at = |bound_us: u64| {
            TIMING_BUCKET_BOUNDS_US
                .iter()
                .position(|&b| b == bound_us)
                .unwrap()
        };
        let p = pool(&[(at(20_000), 5), (at(100_000), 2), (TIMING_BUCKETS - 1, 1)]);
        let st = SmartTurnStats {
            completed: 10,
            complete_verdicts: 6,
            refused: 1,
            model_us_total: 250_000,
            ..SmartTurnStats::default()
        };
        let mut out = String::new();
        render_model_stats(&mut out, None, Some((&st, &p)));
        for line in [
            "# TYPE brisvox_model_wait_seconds histogram",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"0.01\"} 0",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"0.02\"} 5",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"0.05\"} 5",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"0.1\"} 7",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"10\"} 7",
            "brisvox_model_wait_seconds_bucket{pool=\"smart_turn\",le=\"+Inf\"} 8",
            "brisvox_model_wait_seconds_sum{pool=\"smart_turn\"} 1.5",
            "brisvox_model_wait_seconds_count{pool=\"smart_turn\"} 8",
            "brisvox_model_queued_jobs{pool=\"smart_turn\"} 4",
            "brisvox_model_jobs_total{pool=\"smart_turn\",outcome=\"cancelled\"} 3",
            "brisvox_model_jobs_total{pool=\"smart_turn\",outcome=\"rejected\"} 2",
            "brisvox_smart_turn_analyses_total{result=\"complete\"} 6",
            "brisvox_smart_turn_analyses_total{result=\"incomplete\"} 4",
            "brisvox_smart_turn_analyses_total{result=\"refused\"} 1",
            "brisvox_smart_turn_compute_seconds_total{part=\"model\"} 0.25",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
        assert!(!out.contains("pool=\"vad\""));
        assert!(!out.contains("brisvox_vad_"));
    }

    #[test]
    fn vad_series_appear_with_the_vad_service() {
        let v = VadServiceStats {
            windows_scored: 100,
            windows_rejected: 3,
            batches: 40,
            queued: 2,
            schedule_retries: 5,
            lingers: 7,
            ..VadServiceStats::default()
        };
        let p = pool(&[(0, 1)]);
        let mut out = String::new();
        render_model_stats(&mut out, Some((&v, &p)), None);
        for line in [
            "brisvox_model_wait_seconds_bucket{pool=\"vad\",le=\"0.00001\"} 1",
            "brisvox_vad_windows_total{result=\"scored\"} 100",
            "brisvox_vad_windows_total{result=\"rejected\"} 3",
            "brisvox_vad_batches_total 40",
            "brisvox_vad_queued_windows 2",
            "brisvox_vad_schedule_retries_total 5",
            "brisvox_vad_lingers_total 7",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
        assert!(!out.contains("pool=\"smart_turn\""));
        assert!(!out.contains("brisvox_smart_turn_"));
    }

    #[test]
    fn no_services_render_nothing() {
        let mut out = String::new();
        render_model_stats(&mut out, None, None);
        assert!(out.is_empty());
    }

    #[test]
    fn the_shedding_series_show_the_forecast_the_wait_cap_and_the_pacing() {
        use crate::forecast::{ForecastSettings, LoadForecast, PoolDemand};
        use crate::pacer::{AdmissionPacer, PacerSettings};
        use crate::shedding::{ShedState, WaitGuard, WaitSample, wait_limits};
        use std::time::{Duration, Instant};

        let demand = PoolDemand {
            kind: Pressure::SmartTurn,
            threads: 1,
            prior: 0.01,
            floor: 0.001,
        };
        let forecast = LoadForecast::new(ForecastSettings::with_target(0.4), vec![demand]);
        let guard = WaitGuard::new(wait_limits(100));
        let mut waits = ShedState::new(vec![(Pressure::SmartTurn, guard)], Duration::from_secs(2));
        // Analyses waiting 400 ms each, sampled every 100 ms with 12 calls
        // running: the guard presses after its confirmation, capping at 12.
        let t0 = Instant::now();
        for i in 0..30u64 {
            let sample = WaitSample {
                queued: 6,
                started: 2 * i,
                wait_us_total: 2 * i * 400_000,
                timed_out: 0,
            };
            waits.observe(t0 + Duration::from_millis(100 * i), 12, &[sample]);
        }
        let mut text = String::new();
        ModelStatsSource {
            shedding: Some(ShedReport::new(
                waits,
                forecast,
                Some(AdmissionPacer::new(
                    PacerSettings::new(0.5, Duration::from_millis(250)),
                    1,
                    Duration::from_micros(62_500),
                )),
            )),
            ..ModelStatsSource::default()
        }
        .render_into(&mut text);
        for line in [
            "brisvox_shed_call_cost{pool=\"smart_turn\"} 0.01",
            "brisvox_shed_predicted_calls{pool=\"smart_turn\"} 40",
            "brisvox_shed_wait_cap_calls 12",
            "brisvox_shed_admission_rate 8",
            "brisvox_shed_admission_burst_calls 4",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
    }
}
