//! Prometheus metrics for `/metrics`, in their own registry.
//!
//! Gauges and counters the server updates itself (active calls, calls by
//! outcome, refusals, dropped input frames), the per-turn metrics in ms, which
//! [`ServerMetrics`] observes as one of every call's event consumers
//! ([`EventObserver`]: synchronously on the engine's task, so a slow or
//! broken socket cannot lose a turn's metrics), and histograms ready for the
//! engine to feed (pool queue depth, VAD batch size, output underruns). The model services' own counters and wait / run histograms
//! are read at each scrape ([`crate::model_metrics`]).

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

use brisvox_engine::{EngineEvent, EventObserver};

use crate::model_metrics::ModelStatsSource;
use crate::wire_events::turn_metrics_ms;

/// Bucket bounds of the per-turn histograms, in ms.
pub const TURN_MS_BUCKETS: [f64; 14] = [
    10.0, 25.0, 50.0, 100.0, 200.0, 300.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0, 5000.0,
    10000.0,
];

/// Bucket bounds of `brisvox_pool_queue_depth`, in jobs.
pub const POOL_QUEUE_BUCKETS: [f64; 12] = [
    0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// Bucket bounds of `brisvox_vad_batch_size`, in windows.
pub const VAD_BATCH_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// The names of the per-turn metrics (label `metric` of `brisvox_turn_ms`).
pub const TURN_METRICS: [&str; 6] = [
    "end_of_turn_delay",
    "stt_final_delay",
    "llm_ttft",
    "tts_ttfb",
    "response_latency",
    "time_to_silence",
];

/// Every `outcome` label of `brisvox_calls_total` (pre-set to 0).
pub const CALL_OUTCOMES: [&str; 9] = [
    "completed",
    "client_end",
    "disconnected",
    "protocol_error",
    "handler_error",
    "max_duration",
    "server_draining",
    "start_timeout",
    "unauthorized",
];

/// Every `reason` label of `brisvox_calls_refused_total` (pre-set to 0).
pub const REFUSAL_REASONS: [&str; 4] = [
    "server_full",
    "pool_pressure",
    "smart_turn_pressure",
    "server_draining",
];

/// The server's metrics.
#[derive(Debug, Clone)]
pub struct ServerMetrics {
    registry: Registry,
    /// Calls running now.
    pub active_calls: IntGauge,
    /// Finished calls by `outcome`.
    pub calls_total: IntCounterVec,
    /// Refused calls by `reason`.
    pub refused_total: IntCounterVec,
    /// Per-turn metrics in ms, by `metric` (see [`TURN_METRICS`]).
    pub turn_ms: HistogramVec,
    /// Inference pool queue depth, observed per job.
    pub pool_queue_depth: Histogram,
    /// Windows per VAD batch.
    pub vad_batch_size: Histogram,
    /// Output frames the pacer found missing (underruns).
    pub audio_underruns_total: IntCounter,
    /// Caller frames dropped because the handler fell behind.
    pub input_frames_dropped_total: IntCounter,
    /// Call-control requests to a carrier's REST API by `carrier`, `action`
    /// and `result` (`ok`, `refused`: the carrier answered with an error
    /// status, `failed`: no answer).
    pub call_control_total: IntCounterVec,
    /// The model services read at each scrape.
    models: ModelStatsSource,
}

impl ServerMetrics {
    /// Registers every metric in a fresh registry.
    pub fn new() -> Self {
        let m = Self {
            registry: Registry::new(),
            active_calls: IntGauge::new("brisvox_active_calls", "Calls running now.")
                .unwrap_or_else(bug),
            calls_total: counter_vec(
                "brisvox_calls_total",
                "Finished calls by outcome.",
                "outcome",
            ),
            refused_total: counter_vec(
                "brisvox_calls_refused_total",
                "Refused calls by reason.",
                "reason",
            ),
            turn_ms: HistogramVec::new(
                HistogramOpts::new("brisvox_turn_ms", "Per-turn metrics in milliseconds.")
                    .buckets(TURN_MS_BUCKETS.to_vec()),
                &["metric"],
            )
            .unwrap_or_else(bug),
            pool_queue_depth: histogram(
                "brisvox_pool_queue_depth",
                "Inference pool queue depth.",
                &POOL_QUEUE_BUCKETS,
            ),
            vad_batch_size: histogram(
                "brisvox_vad_batch_size",
                "VAD windows per batch.",
                &VAD_BATCH_BUCKETS,
            ),
            audio_underruns_total: counter(
                "brisvox_audio_underruns_total",
                "Output frames missing when due.",
            ),
            input_frames_dropped_total: counter(
                "brisvox_input_frames_dropped_total",
                "Caller frames dropped because the call fell behind.",
            ),
            call_control_total: IntCounterVec::new(
                Opts::new(
                    "brisvox_call_control_total",
                    "Call-control requests to carriers' REST APIs.",
                ),
                &["carrier", "action", "result"],
            )
            .unwrap_or_else(bug),
            models: ModelStatsSource::default(),
        };
        m.register_all();
        m
    }

    fn register_all(&self) {
        // Labelled series appear in the exposition from the start, at zero.
        for name in TURN_METRICS {
            self.turn_ms.with_label_values(&[name]);
        }
        for outcome in CALL_OUTCOMES {
            self.calls_total.with_label_values(&[outcome]);
        }
        for reason in REFUSAL_REASONS {
            self.refused_total.with_label_values(&[reason]);
        }
        let collectors: [Box<dyn prometheus::core::Collector>; 9] = [
            Box::new(self.call_control_total.clone()),
            Box::new(self.active_calls.clone()),
            Box::new(self.calls_total.clone()),
            Box::new(self.refused_total.clone()),
            Box::new(self.turn_ms.clone()),
            Box::new(self.pool_queue_depth.clone()),
            Box::new(self.vad_batch_size.clone()),
            Box::new(self.audio_underruns_total.clone()),
            Box::new(self.input_frames_dropped_total.clone()),
        ];
        for c in collectors {
            self.registry.register(c).unwrap_or_else(bug);
        }
    }

    /// Shows the counters of these model services too (read at each scrape).
    pub fn with_models(mut self, models: ModelStatsSource) -> Self {
        self.models = models;
        self
    }

    /// Records one finished turn's metrics (ms); unknown ones are `None`.
    pub fn observe_turn(&self, metrics: &brisvox_transport::brisvox_ws::TurnMetricsMs) {
        let values = [
            metrics.end_of_turn_delay_ms,
            metrics.stt_final_delay_ms,
            metrics.llm_ttft_ms,
            metrics.tts_ttfb_ms,
            metrics.response_latency_ms,
            metrics.time_to_silence_ms,
        ];
        for (name, v) in TURN_METRICS.iter().zip(values) {
            if let Some(v) = v {
                self.turn_ms.with_label_values(&[*name]).observe(v);
            }
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        // Cannot fail: the text encoder writes into a Vec, and the metric
        // names are fixed and valid.
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .unwrap_or_else(bug);
        let mut text = String::from_utf8(buf).unwrap_or_else(bug);
        self.models.render_into(&mut text);
        text
    }
}

impl EventObserver for ServerMetrics {
    /// Records each turn's metrics from the engine's [`EngineEvent::TurnMetrics`]
    /// (sent once per caller's turn).
    fn observe(&self, event: &EngineEvent) {
        if let EngineEvent::TurnMetrics { record } = event {
            self.observe_turn(&turn_metrics_ms(record));
        }
    }
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

fn counter(name: &str, help: &str) -> IntCounter {
    IntCounter::new(name, help).unwrap_or_else(bug)
}

fn counter_vec(name: &str, help: &str, label: &str) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), &[label]).unwrap_or_else(bug)
}

fn histogram(name: &str, help: &str, buckets: &[f64]) -> Histogram {
    Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
        .unwrap_or_else(bug)
}

/// The metric definitions above are constants: an error building or
/// registering them is a bug in this file, caught by the unit test below.
fn bug<T, E: std::fmt::Debug>(e: E) -> T {
    panic!("metric definition bug: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_renders() {
        let m = ServerMetrics::new();
        m.active_calls.set(3);
        m.calls_total.with_label_values(&["completed"]).inc();
        m.observe_turn(&brisvox_transport::brisvox_ws::TurnMetricsMs {
            llm_ttft_ms: Some(350.0),
            ..Default::default()
        });
        let text = m.render();
        for name in [
            "brisvox_active_calls 3",
            "brisvox_calls_total{outcome=\"completed\"} 1",
            "brisvox_turn_ms_bucket{metric=\"llm_ttft\",le=\"500\"} 1",
            "brisvox_pool_queue_depth_bucket",
            "brisvox_vad_batch_size_bucket",
            "brisvox_audio_underruns_total 0",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
    }
}
