//! Prometheus metrics for `/metrics`, in their own registry.
//!
//! Conventions: names in base units (`_seconds`, `_total` for counters), one
//! series per measure, label sets bounded by fixed lists (every label value
//! is pre-registered at zero, so a dashboard sees a series from the start).
//!
//! - Fed by the server itself: active calls, calls by outcome, refusals by
//!   reason, dropped input frames, failed auth attempts and the limiter's
//!   refusals, the build's version.
//! - Fed by the engine's events ([`EventObserver`], synchronously on the
//!   engine's task, so a slow or broken socket cannot lose them): each turn's
//!   latencies ([`EngineEvent::TurnMetrics`]) and, at the end of each call
//!   ([`EngineEvent::CallEnded`]), output underruns, provider errors by stage
//!   and kind, and LLM requests and tokens; each finished tool call
//!   ([`EngineEvent::ToolCallFinished`]) by tool and outcome.
//! - Read from the model services at each scrape ([`crate::model_metrics`]):
//!   pool waits, run times and queue depths, VAD windows and batches, Smart
//!   Turn results.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use brisvox_core::timeline::TurnRecord;
use brisvox_engine::report::{CallReport, ProviderStage};
use brisvox_engine::{EngineEvent, EventObserver};
use brisvox_providers::ErrorKind;

use crate::model_metrics::ModelStatsSource;

/// Bucket bounds of the per-turn latency histograms, in seconds.
pub const TURN_SECONDS_BUCKETS: [f64; 14] = [
    0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0,
];

/// The per-turn measures: `brisvox_turn_<name>_seconds`, with their help text.
pub const TURN_MEASURES: [(&str, &str); 6] = [
    (
        "end_of_turn_delay",
        "From the end of the caller's speech to the end-of-turn decision.",
    ),
    (
        "stt_final_delay",
        "From the end of the caller's speech to the STT's final transcript.",
    ),
    ("llm_ttft", "From the LLM request to its first token."),
    (
        "tts_ttfb",
        "From the first TTS request of a response to its first audio.",
    ),
    (
        "response_latency",
        "From the end of the caller's speech to the first answer audio sent (server-side voice-to-voice).",
    ),
    (
        "time_to_silence",
        "From a barge-in to the bot's audio stopping.",
    ),
];

/// Every `stage` label of `brisvox_provider_errors_total`.
pub const PROVIDER_STAGES: [&str; 4] = [
    "stt",
    "llm_before_first_token",
    "llm_after_first_token",
    "tts",
];

/// Every `kind` label of `brisvox_provider_errors_total`.
pub const PROVIDER_ERROR_KINDS: [&str; 9] = [
    "connect",
    "auth",
    "rate_limited",
    "timeout",
    "protocol",
    "disconnected",
    "server",
    "cancelled",
    "other",
];

/// Every `outcome` label of `brisvox_calls_total` (pre-set to 0).
pub const CALL_OUTCOMES: [&str; 10] = [
    "completed",
    "client_end",
    "disconnected",
    "protocol_error",
    "handler_error",
    "max_duration",
    "server_draining",
    "start_timeout",
    "unauthorized",
    "transferred",
];

/// Every `reason` label of `brisvox_calls_refused_total` (pre-set to 0).
pub const REFUSAL_REASONS: [&str; 4] = [
    "server_full",
    "pool_pressure",
    "smart_turn_pressure",
    "server_draining",
];

/// Every `event` label of `brisvox_turn_events_total`: what the calls' turn
/// machines counted (pre-set to 0).
pub const TURN_EVENTS: [&str; 13] = [
    "turn",
    "response",
    "empty_turn",
    "taken_back",
    "barge_in",
    "short_speech_ignored",
    "backchannel_ignored",
    "false_interruption_resumed",
    "verdict_failed",
    "verdict_fallback",
    "incomplete_timeout",
    "shortened_fallback",
    "final_timeout",
];

/// Every `result` label of `brisvox_early_analyses_total` (pre-set to 0).
pub const EARLY_RESULTS: [&str; 4] = ["started", "reused", "wasted", "failed"];

/// Every `result` label of `brisvox_speculation_runs_total` (pre-set to 0).
pub const SPECULATION_RESULTS: [&str; 4] = ["started", "committed", "discarded", "withdrawn"];

/// Distinct `tool` labels at most; the calls of further tools (a model that
/// invents names) are counted under `other`.
pub const MAX_TOOL_LABELS: usize = 64;

/// Every `outcome` label of `brisvox_tool_calls_total`: a result; an error
/// result (the tool failed, timed out or could not be reached: the model read
/// an error); a result that came after the caller interrupted the turn
/// (recorded, not spoken).
pub const TOOL_OUTCOMES: [&str; 3] = ["ok", "error", "late"];

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
    /// One histogram per entry of [`TURN_MEASURES`], in seconds.
    turn_seconds: Vec<Histogram>,
    /// Output frames the pacer handed over late (underruns), summed at each call's end.
    pub audio_underruns_total: IntCounter,
    /// Caller frames dropped because the handler fell behind.
    pub input_frames_dropped_total: IntCounter,
    /// Failed token or signature checks (401, 403, a carrier stream closed
    /// for its token).
    pub auth_failures_total: IntCounter,
    /// Requests refused by the failed-auth limiter (429).
    pub auth_rate_limited_total: IntCounter,
    /// WebRTC callers' lost 20 ms frames filled in (Opus in-band FEC or
    /// packet-loss concealment), summed at each call's end.
    pub webrtc_filled_frames_total: IntCounter,
    /// Call-control requests to a carrier's REST API by `carrier`, `action`
    /// (`hang_up`, `transfer`) and `result` (`ok`, `refused`: the carrier
    /// answered with an error status, `failed`: no answer, `unsupported`: no
    /// access configured or an action the carrier lacks, `invalid`: a
    /// transfer target that is neither a number nor a SIP URI).
    pub call_control_total: IntCounterVec,
    /// Call recordings by `result`: `written`, or `failed` (a full disk, the
    /// directory's budget; the call itself goes on).
    pub recordings_total: IntCounterVec,
    /// Provider failures by `stage` and `kind`, at each call's end.
    provider_errors_total: IntCounterVec,
    /// LLM completions requested, at each call's end.
    llm_requests_total: IntCounter,
    /// LLM tokens as the provider reported them, by `kind` (`input`, `output`).
    llm_tokens_total: IntCounterVec,
    /// The turn machines' counts, by `event` ([`TURN_EVENTS`]), at each call's end.
    turn_events_total: IntCounterVec,
    /// Early Smart Turn analyses by `result` ([`EARLY_RESULTS`]), at each call's end.
    early_analyses_total: IntCounterVec,
    /// Speculative LLM runs by `result` ([`SPECULATION_RESULTS`]), at each call's end.
    speculation_runs_total: IntCounterVec,
    /// Tokens of speculative runs that were not used, by `kind` (`output`;
    /// `input`: as the provider reported it).
    speculation_wasted_tokens_total: IntCounterVec,
    /// TTS chunks spoken as written (their normalisation failed or timed out).
    normalize_failures_total: IntCounter,
    /// Always 1, labelled with the build's version.
    build_info: IntGaugeVec,
    /// Tool call latency (handed to its executor to its outcome), by `tool`.
    tool_call_seconds: HistogramVec,
    /// Finished tool calls by `tool` and `outcome` ([`TOOL_OUTCOMES`]).
    tool_calls_total: IntCounterVec,
    /// The tool labels in use (at most [`MAX_TOOL_LABELS`]).
    tool_labels: Arc<Mutex<HashSet<String>>>,
    /// The model services read at each scrape.
    models: ModelStatsSource,
    /// Every call's agent link statistics, read at each scrape.
    agent_link: Option<crate::agent_link::AgentLinkTotals>,
}

impl ServerMetrics {
    /// Registers every metric in a fresh registry.
    pub fn new() -> Self {
        let turn_seconds = TURN_MEASURES
            .iter()
            .map(|(name, help)| {
                histogram(
                    &format!("brisvox_turn_{name}_seconds"),
                    help,
                    &TURN_SECONDS_BUCKETS,
                )
            })
            .collect();
        let m = Self {
            registry: Registry::new(),
            active_calls: IntGauge::new("brisvox_active_calls", "Calls running now.")
                .unwrap_or_else(bug),
            calls_total: counter_vec(
                "brisvox_calls_total",
                "Finished calls by outcome.",
                &["outcome"],
            ),
            refused_total: counter_vec(
                "brisvox_calls_refused_total",
                "Calls refused before the websocket upgrade, by reason.",
                &["reason"],
            ),
            turn_seconds,
            audio_underruns_total: counter(
                "brisvox_audio_underruns_total",
                "Answer frames handed to the transport later than their due time.",
            ),
            input_frames_dropped_total: counter(
                "brisvox_input_frames_dropped_total",
                "Caller frames dropped because the call fell behind.",
            ),
            auth_failures_total: counter(
                "brisvox_auth_failures_total",
                "Failed token or signature checks on the routes that have them.",
            ),
            auth_rate_limited_total: counter(
                "brisvox_auth_rate_limited_total",
                "Requests refused (429) from an address with too many failed auth attempts.",
            ),
            webrtc_filled_frames_total: counter(
                "brisvox_webrtc_filled_frames_total",
                "WebRTC callers' lost 20 ms audio frames filled by Opus FEC or concealment.",
            ),
            call_control_total: counter_vec(
                "brisvox_call_control_total",
                "Call-control requests to carriers' REST APIs.",
                &["carrier", "action", "result"],
            ),
            provider_errors_total: counter_vec(
                "brisvox_provider_errors_total",
                "Provider failures by stage and kind (each attempt that failed).",
                &["stage", "kind"],
            ),
            llm_requests_total: counter("brisvox_llm_requests_total", "LLM completions requested."),
            llm_tokens_total: counter_vec(
                "brisvox_llm_tokens_total",
                "LLM tokens as the provider reported them, by kind (input, output).",
                &["kind"],
            ),
            turn_events_total: counter_vec(
                "brisvox_turn_events_total",
                "Turn-taking events the calls' turn machines counted, by event.",
                &["event"],
            ),
            early_analyses_total: counter_vec(
                "brisvox_early_analyses_total",
                "Early Smart Turn analyses (at the VAD's falling hint) by result.",
                &["result"],
            ),
            speculation_runs_total: counter_vec(
                "brisvox_speculation_runs_total",
                "Speculative LLM runs by result.",
                &["result"],
            ),
            speculation_wasted_tokens_total: counter_vec(
                "brisvox_speculation_wasted_tokens_total",
                "Tokens of speculative LLM runs that were not used, by kind.",
                &["kind"],
            ),
            normalize_failures_total: counter(
                "brisvox_normalize_failures_total",
                "TTS chunks spoken as written because their normalisation failed or timed out.",
            ),
            build_info: IntGaugeVec::new(
                Opts::new(
                    "brisvox_build_info",
                    "Always 1; the labels say which build runs.",
                ),
                &["version"],
            )
            .unwrap_or_else(bug),
            recordings_total: counter_vec(
                "brisvox_recordings_total",
                "Call recordings by result.",
                &["result"],
            ),
            tool_call_seconds: HistogramVec::new(
                HistogramOpts::new(
                    "brisvox_tool_call_seconds",
                    "Tool call latency, from the call handed to its executor to its outcome, by tool.",
                )
                .buckets(TURN_SECONDS_BUCKETS.to_vec()),
                &["tool"],
            )
            .unwrap_or_else(bug),
            tool_calls_total: counter_vec(
                "brisvox_tool_calls_total",
                "Finished tool calls by tool and outcome (ok, error, late).",
                &["tool", "outcome"],
            ),
            tool_labels: Arc::default(),
            models: ModelStatsSource::default(),
            agent_link: None,
        };
        m.register_all();
        m
    }

    fn register_all(&self) {
        // Labelled series appear in the exposition from the start, at zero.
        for outcome in CALL_OUTCOMES {
            self.calls_total.with_label_values(&[outcome]);
        }
        for reason in REFUSAL_REASONS {
            self.refused_total.with_label_values(&[reason]);
        }
        for result in ["written", "failed"] {
            self.recordings_total.with_label_values(&[result]);
        }
        for stage in PROVIDER_STAGES {
            for kind in PROVIDER_ERROR_KINDS {
                self.provider_errors_total.with_label_values(&[stage, kind]);
            }
        }
        for kind in ["input", "output"] {
            self.llm_tokens_total.with_label_values(&[kind]);
            self.speculation_wasted_tokens_total
                .with_label_values(&[kind]);
        }
        for event in TURN_EVENTS {
            self.turn_events_total.with_label_values(&[event]);
        }
        for result in EARLY_RESULTS {
            self.early_analyses_total.with_label_values(&[result]);
        }
        for result in SPECULATION_RESULTS {
            self.speculation_runs_total.with_label_values(&[result]);
        }
        self.build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let mut collectors: Vec<Box<dyn prometheus::core::Collector>> = vec![
            Box::new(self.call_control_total.clone()),
            Box::new(self.recordings_total.clone()),
            Box::new(self.active_calls.clone()),
            Box::new(self.calls_total.clone()),
            Box::new(self.refused_total.clone()),
            Box::new(self.audio_underruns_total.clone()),
            Box::new(self.input_frames_dropped_total.clone()),
            Box::new(self.auth_failures_total.clone()),
            Box::new(self.auth_rate_limited_total.clone()),
            Box::new(self.webrtc_filled_frames_total.clone()),
            Box::new(self.provider_errors_total.clone()),
            Box::new(self.llm_requests_total.clone()),
            Box::new(self.llm_tokens_total.clone()),
            Box::new(self.build_info.clone()),
            Box::new(self.turn_events_total.clone()),
            Box::new(self.early_analyses_total.clone()),
            Box::new(self.speculation_runs_total.clone()),
            Box::new(self.speculation_wasted_tokens_total.clone()),
            Box::new(self.normalize_failures_total.clone()),
            Box::new(self.tool_call_seconds.clone()),
            Box::new(self.tool_calls_total.clone()),
        ];
        collectors.extend(
            self.turn_seconds
                .iter()
                .map(|h| Box::new(h.clone()) as Box<dyn prometheus::core::Collector>),
        );
        for c in collectors {
            self.registry.register(c).unwrap_or_else(bug);
        }
    }

    /// Shows the counters of these model services too (read at each scrape).
    pub fn with_models(mut self, models: ModelStatsSource) -> Self {
        self.models = models;
        self
    }

    /// Shows the agent link's totals too (read at each scrape).
    pub fn with_agent_link(mut self, totals: Option<crate::agent_link::AgentLinkTotals>) -> Self {
        self.agent_link = totals;
        self
    }

    /// Records one turn's latencies; a measure the turn did not have is skipped.
    pub fn observe_turn(&self, record: &TurnRecord) {
        let m = record.metrics();
        let values = [
            m.end_of_turn_delay,
            m.stt_final_delay,
            m.llm_ttft,
            m.tts_ttfb,
            m.response_latency,
            m.time_to_silence,
        ];
        for (histogram, value) in self.turn_seconds.iter().zip(values) {
            if let Some(d) = value {
                histogram.observe(d.as_secs_f64());
            }
        }
    }

    /// Adds a finished call's counters: underruns, provider errors, LLM
    /// usage, turn-taking events, early analyses, speculative runs and
    /// normalisation failures.
    pub fn observe_call(&self, report: &CallReport) {
        self.observe_call_turns(report);
        self.audio_underruns_total.inc_by(report.pacer.underruns);
        for failure in &report.provider_failures {
            self.provider_errors_total
                .with_label_values(&[stage_label(failure.stage), kind_label(failure.kind)])
                .inc_by(failure.count);
        }
        self.llm_requests_total.inc_by(report.llm_usage.requests);
        let tokens = &self.llm_tokens_total;
        tokens
            .with_label_values(&["input"])
            .inc_by(report.llm_usage.input_tokens);
        tokens
            .with_label_values(&["output"])
            .inc_by(report.llm_usage.output_tokens);
    }

    /// The turn-taking part of [`observe_call`](Self::observe_call).
    fn observe_call_turns(&self, report: &CallReport) {
        let t = &report.turn_counters;
        let turn_events = [
            t.turns,
            t.responses,
            t.empty_turns,
            t.taken_back,
            t.barge_ins,
            t.short_speech_ignored,
            t.backchannels_ignored,
            t.false_interruptions_resumed,
            t.verdicts_failed,
            t.verdict_fallbacks,
            t.incomplete_timeouts,
            t.shortened_fallbacks,
            t.final_timeouts,
        ];
        add(&self.turn_events_total, &TURN_EVENTS, &turn_events);
        let e = &report.early_analysis;
        let early = [e.started, e.reused, e.wasted, e.failed];
        add(&self.early_analyses_total, &EARLY_RESULTS, &early);
        let s = &report.speculation;
        let runs = [s.started, s.committed, s.discarded, s.withdrawn];
        add(&self.speculation_runs_total, &SPECULATION_RESULTS, &runs);
        let wasted = [s.wasted_output_tokens, s.wasted_input_tokens];
        add(
            &self.speculation_wasted_tokens_total,
            &["output", "input"],
            &wasted,
        );
        self.normalize_failures_total
            .inc_by(report.normalize_failures);
    }

    /// The turn-taking counters of [`observe_call`](Self::observe_call) as
    /// `name{label="value"}` and their values, in a fixed order (for reports).
    pub fn call_counter_values(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let families: [(&str, &IntCounterVec, &str, &[&str]); 4] = [
            (
                "brisvox_turn_events_total",
                &self.turn_events_total,
                "event",
                &TURN_EVENTS,
            ),
            (
                "brisvox_early_analyses_total",
                &self.early_analyses_total,
                "result",
                &EARLY_RESULTS,
            ),
            (
                "brisvox_speculation_runs_total",
                &self.speculation_runs_total,
                "result",
                &SPECULATION_RESULTS,
            ),
            (
                "brisvox_speculation_wasted_tokens_total",
                &self.speculation_wasted_tokens_total,
                "kind",
                &["output", "input"],
            ),
        ];
        for (name, family, label, values) in families {
            for value in values {
                let n = family.with_label_values(&[value]).get();
                out.push((format!("{name}{{{label}=\"{value}\"}}"), n));
            }
        }
        out.push((
            "brisvox_normalize_failures_total".to_owned(),
            self.normalize_failures_total.get(),
        ));
        out
    }

    /// Records one finished tool call.
    pub fn observe_tool_call(&self, name: &str, is_error: bool, late: bool, took: Duration) {
        let outcome = match (late, is_error) {
            (true, _) => TOOL_OUTCOMES[2],
            (false, true) => TOOL_OUTCOMES[1],
            (false, false) => TOOL_OUTCOMES[0],
        };
        let tool = self.tool_label(name);
        self.tool_call_seconds
            .with_label_values(&[tool])
            .observe(took.as_secs_f64());
        self.tool_calls_total
            .with_label_values(&[tool, outcome])
            .inc();
    }

    /// `name`, or `other` once [`MAX_TOOL_LABELS`] other names are in use.
    fn tool_label<'a>(&self, name: &'a str) -> &'a str {
        let mut labels = self
            .tool_labels
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if labels.contains(name) {
            return name;
        }
        if labels.len() >= MAX_TOOL_LABELS {
            return "other";
        }
        labels.insert(name.to_owned());
        for outcome in TOOL_OUTCOMES {
            self.tool_calls_total.with_label_values(&[name, outcome]);
        }
        name
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
        render_provider_retries(&mut text);
        render_runtime(&mut text);
        if let Some(totals) = &self.agent_link {
            let totals = *totals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            crate::agent_link::render_totals(&totals, &mut text);
        }
        text
    }
}

/// `brisvox_provider_retries_total{kind}`: the adapters' own retries (STT
/// reconnects, re-opened TTS contexts), process-wide, read at each scrape.
fn render_provider_retries(out: &mut String) {
    use brisvox_providers::retries::{RetryKind, total};
    use std::fmt::Write as _;
    let name = "brisvox_provider_retries_total";
    let _ = writeln!(
        out,
        "# HELP {name} Retries the provider adapters made on their own (STT reconnects, re-opened TTS contexts).\n# TYPE {name} counter"
    );
    for kind in RetryKind::ALL {
        let _ = writeln!(out, "{name}{{kind=\"{}\"}} {}", kind.label(), total(kind));
    }
}

/// `brisvox_runtime_alive_tasks` and `brisvox_runtime_workers`: the async
/// runtime serving this scrape, read at each scrape (a soak watches the tasks
/// for leaks). Nothing is written outside a tokio runtime.
fn render_runtime(out: &mut String) {
    use std::fmt::Write as _;
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let m = handle.metrics();
    for (name, help, value) in [
        (
            "brisvox_runtime_alive_tasks",
            "Async tasks alive in the server's runtime (spawned and not yet finished).",
            m.num_alive_tasks(),
        ),
        (
            "brisvox_runtime_workers",
            "Worker threads of the server's async runtime.",
            m.num_workers(),
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    }
}

impl EventObserver for ServerMetrics {
    /// Records each turn's latencies from the engine's [`EngineEvent::TurnMetrics`]
    /// (once per caller's turn), each call's counters from
    /// [`EngineEvent::CallEnded`] and each tool call from
    /// [`EngineEvent::ToolCallFinished`].
    fn observe(&self, event: &EngineEvent) {
        match event {
            EngineEvent::TurnMetrics { record } => self.observe_turn(record),
            EngineEvent::CallEnded { report } => self.observe_call(report),
            EngineEvent::ToolCallFinished {
                name,
                is_error,
                latency,
                late,
                ..
            } => self.observe_tool_call(name, *is_error, *late, *latency),
            _ => {}
        }
    }
}

fn stage_label(stage: ProviderStage) -> &'static str {
    match stage {
        ProviderStage::Stt => PROVIDER_STAGES[0],
        ProviderStage::LlmBeforeFirstToken => PROVIDER_STAGES[1],
        ProviderStage::LlmAfterFirstToken => PROVIDER_STAGES[2],
        ProviderStage::Tts => PROVIDER_STAGES[3],
    }
}

fn kind_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Connect => "connect",
        ErrorKind::Auth => "auth",
        ErrorKind::RateLimited => "rate_limited",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Protocol => "protocol",
        ErrorKind::Disconnected => "disconnected",
        ErrorKind::Server => "server",
        ErrorKind::Cancelled => "cancelled",
        _ => "other",
    }
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Adds `values[i]` to the series `labels[i]` of `family`.
fn add(family: &IntCounterVec, labels: &[&str], values: &[u64]) {
    for (label, value) in labels.iter().zip(values) {
        family.with_label_values(&[label]).inc_by(*value);
    }
}

fn counter(name: &str, help: &str) -> IntCounter {
    IntCounter::new(name, help).unwrap_or_else(bug)
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(bug)
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
    use std::time::{Duration, Instant};

    use brisvox_core::Epoch;
    use brisvox_core::timeline::{TimelineRecorder, TurnEvent};

    use super::*;

    fn alive_tasks(text: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("brisvox_runtime_alive_tasks "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no alive tasks in\n{text}"))
    }

    #[test]
    fn the_runtime_s_alive_tasks_are_counted_at_each_scrape() {
        let m = ServerMetrics::new();
        assert!(
            !m.render().contains("brisvox_runtime_alive_tasks"),
            "outside a runtime there is nothing to read"
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let before = alive_tasks(&m.render());
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(async move {
                let _ = rx.await;
            });
            assert_eq!(alive_tasks(&m.render()), before + 1);
            tx.send(()).unwrap();
            task.await.unwrap();
            assert_eq!(alive_tasks(&m.render()), before);
            assert!(m.render().contains("brisvox_runtime_workers 1"));
        });
    }

    #[test]
    fn every_metric_renders_in_base_units_from_the_start() {
        let m = ServerMetrics::new();
        m.active_calls.set(3);
        m.calls_total.with_label_values(&["completed"]).inc();
        let text = m.render();
        for name in [
            "brisvox_active_calls 3",
            "brisvox_calls_total{outcome=\"completed\"} 1",
            "brisvox_turn_llm_ttft_seconds_count 0",
            "brisvox_turn_response_latency_seconds_bucket{le=\"0.5\"} 0",
            "brisvox_audio_underruns_total 0",
            "brisvox_provider_errors_total{kind=\"timeout\",stage=\"tts\"} 0",
            "brisvox_llm_tokens_total{kind=\"output\"} 0",
            "brisvox_calls_refused_total{reason=\"pool_pressure\"} 0",
            "brisvox_turn_events_total{event=\"backchannel_ignored\"} 0",
            "brisvox_early_analyses_total{result=\"reused\"} 0",
            "brisvox_speculation_runs_total{result=\"committed\"} 0",
            "brisvox_speculation_wasted_tokens_total{kind=\"input\"} 0",
            "brisvox_normalize_failures_total 0",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
        assert!(text.contains(&format!(
            "brisvox_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(
            !text.contains("brisvox_turn_ms"),
            "the old ms histogram is gone"
        );
        assert!(text.contains("brisvox_provider_retries_total{kind=\"tts_context_retry\"} "));
    }

    #[test]
    fn the_adapters_retries_show_at_the_next_scrape() {
        use brisvox_providers::retries::{RetryKind, record, total};
        let m = ServerMetrics::new();
        record(RetryKind::SttReconnect);
        let shown = m
            .render()
            .lines()
            .find_map(|l| l.strip_prefix("brisvox_provider_retries_total{kind=\"stt_reconnect\"} "))
            .map(|v| v.parse::<u64>().expect("a count"))
            .expect("the series");
        assert!(shown >= 1 && shown <= total(RetryKind::SttReconnect));
    }

    #[test]
    fn a_turn_is_observed_in_seconds_once_per_measure_it_has() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let mut rec = TimelineRecorder::new();
        let e = Epoch(1);
        rec.mark(e, TurnEvent::UserSpeechEnd, t0);
        rec.mark(e, TurnEvent::LlmRequest, t0 + Duration::from_millis(100));
        rec.mark(e, TurnEvent::LlmFirstToken, t0 + Duration::from_millis(450));
        rec.finish();
        let record = rec.drain_finished().next().expect("the turn was marked");
        let m = ServerMetrics::new();
        m.observe(&EngineEvent::TurnMetrics {
            record: Box::new(record),
        });
        let text = m.render();
        assert!(
            text.contains("brisvox_turn_llm_ttft_seconds_bucket{le=\"0.3\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("brisvox_turn_llm_ttft_seconds_bucket{le=\"0.5\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("brisvox_turn_llm_ttft_seconds_sum 0.35"),
            "{text}"
        );
        assert!(
            text.contains("brisvox_turn_tts_ttfb_seconds_count 0"),
            "{text}"
        );
    }

    #[test]
    fn each_finished_tool_call_counts_by_tool_and_outcome_in_seconds() {
        let m = ServerMetrics::new();
        let finished = |name: &str, is_error, late, ms| EngineEvent::ToolCallFinished {
            epoch: brisvox_core::Epoch(1),
            call_id: "call_1".to_owned(),
            name: name.to_owned(),
            is_error,
            latency: Duration::from_millis(ms),
            late,
        };
        m.observe(&finished("order_status", false, false, 40));
        m.observe(&finished("order_status", true, false, 900));
        m.observe(&finished("opening_hours", false, true, 2_500));
        let text = m.render();
        for want in [
            "brisvox_tool_call_seconds_bucket{tool=\"order_status\",le=\"0.05\"} 1",
            "brisvox_tool_call_seconds_count{tool=\"order_status\"} 2",
            "brisvox_tool_calls_total{outcome=\"ok\",tool=\"order_status\"} 1",
            "brisvox_tool_calls_total{outcome=\"error\",tool=\"order_status\"} 1",
            "brisvox_tool_calls_total{outcome=\"late\",tool=\"opening_hours\"} 1",
            "brisvox_tool_calls_total{outcome=\"error\",tool=\"opening_hours\"} 0",
        ] {
            assert!(text.contains(want), "{want} missing in\n{text}");
        }
        for i in 0..MAX_TOOL_LABELS + 5 {
            m.observe(&finished(&format!("invented_{i}"), true, false, 1));
        }
        let text = m.render();
        assert!(
            text.contains("brisvox_tool_calls_total{outcome=\"error\",tool=\"other\"} 7"),
            "{text}"
        );
    }
}
