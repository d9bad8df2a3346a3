//! OpenTelemetry traces of calls, exported over OTLP/HTTP (protobuf), off
//! unless the standard OpenTelemetry environment names a collector.
//!
//! Each call is a `call` span (the call's id, route, how it ended, its
//! counters); each caller turn is a `turn` span under it, with one child span
//! per stage it waited for (`vad.stop`, `stt.final`, `turn.end`,
//! `llm.first_token`, `tts.first_byte`, `playout`) and one per tool call. The
//! spans are built from the engine's events by a [`CallTrace`] observer, with
//! the times the engine's turn timeline marked (not the time the observer ran),
//! and handed to the SDK's batch processor, which exports from its own thread:
//! nothing here waits on the network inside a call.
//!
//! Configuration is the OpenTelemetry SDK's own (see docs/DEPLOY.md):
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! turns it on; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps
//! it off; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` and the
//! `OTEL_BSP_*` batch settings are read by the SDK.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_engine::{CallEnd, CallReport, EngineEvent, EventObserver};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// Why tracing could not start (the server refuses to start: an operator who
/// set a collector expects traces).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or its traces variant) names a
    /// protocol this build does not export.
    #[error(
        "{var}={value}: brisvox exports OTLP over HTTP with protobuf (the collector's port 4318); \
         set it to http/protobuf or unset it"
    )]
    UnsupportedProtocol {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The exporter could not be built (a malformed endpoint or header).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

/// The process's tracer, when a collector is configured.
#[derive(Clone, Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

/// Environment lookups, so the decision is testable without touching the
/// process environment.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

/// Whether the environment asks for traces: a collector endpoint is named
/// and neither the SDK nor the traces exporter is switched off.
pub fn wanted(env: &impl Env) -> Result<bool, TelemetryError> {
    let disabled = env
        .get("OTEL_SDK_DISABLED")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let exporter_off = env
        .get("OTEL_TRACES_EXPORTER")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    let endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        || env.get("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    if disabled || exporter_off || !endpoint {
        return Ok(false);
    }
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(value) = env.get(var)
            && value.trim() != "http/protobuf"
        {
            return Err(TelemetryError::UnsupportedProtocol { var, value });
        }
    }
    Ok(true)
}

impl Telemetry {
    /// The tracer the process environment asks for, or `None` when it names
    /// no collector. Blocking (the HTTP client starts its own thread): call it
    /// off the async workers.
    pub fn from_env() -> Result<Option<Telemetry>, TelemetryError> {
        if !wanted(&ProcessEnv)? {
            return Ok(None);
        }
        // The blocking client must be built (and later dropped) outside any
        // async runtime; a plain thread is that everywhere.
        std::thread::spawn(Telemetry::build)
            .join()
            .unwrap_or_else(|_| Err(TelemetryError::Exporter("the setup thread panicked".into())))
            .map(Some)
    }

    fn build() -> Result<Telemetry, TelemetryError> {
        use opentelemetry_otlp::{Protocol, WithExportConfig as _};
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(service_name())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "brisvox");
        Ok(Telemetry { provider, tracer })
    }

    /// The observer that traces one call.
    pub fn call(&self, call_id: &str, transport: &str) -> Arc<CallTrace> {
        Arc::new(CallTrace::new(self.tracer.clone(), call_id, transport))
    }

    /// Exports what is still queued and stops the exporter (at shutdown,
    /// after the last call). Blocking: call it off the async workers.
    pub fn shutdown(self) {
        let provider = self.provider;
        let done =
            std::thread::spawn(move || provider.shutdown_with_timeout(Duration::from_secs(5)));
        match done.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "traces not all exported at shutdown"),
            Err(_) => tracing::warn!("the trace exporter's shutdown panicked"),
        }
    }
}

/// `OTEL_SERVICE_NAME`, else `brisvox`.
fn service_name() -> String {
    ProcessEnv
        .get("OTEL_SERVICE_NAME")
        .unwrap_or_else(|| "brisvox".to_owned())
}

/// One call's trace: observes its events and builds its spans.
pub struct CallTrace {
    tracer: SdkTracer,
    clock: Clock,
    state: Mutex<TraceState>,
}

impl std::fmt::Debug for CallTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallTrace").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct TraceState {
    /// The open `call` span (taken when it ends).
    call: Option<Context>,
    /// Tool calls of each turn, finished or running, until the turn's span.
    tools: HashMap<u64, Vec<ToolSpan>>,
}

struct ToolSpan {
    name: String,
    start: Instant,
    /// When it finished, and whether as an error, or after its turn was cut.
    end: Option<ToolEnd>,
}

#[derive(Clone, Copy)]
struct ToolEnd {
    at: Instant,
    is_error: bool,
    late: bool,
}

/// Maps the engine's instants onto wall-clock time, from one reading of both.
#[derive(Debug, Clone, Copy)]
struct Clock {
    instant: Instant,
    system: SystemTime,
}

impl Clock {
    fn now() -> Clock {
        Clock {
            instant: Instant::now(),
            system: SystemTime::now(),
        }
    }

    fn wall(&self, at: Instant) -> SystemTime {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.system + after,
            None => self.system - self.instant.duration_since(at),
        }
    }
}

impl CallTrace {
    fn new(tracer: SdkTracer, call_id: &str, transport: &str) -> CallTrace {
        CallTrace::started_at(tracer, call_id, transport, Clock::now())
    }

    /// A call's trace whose `call` span began at `clock`.
    fn started_at(tracer: SdkTracer, call_id: &str, transport: &str, clock: Clock) -> CallTrace {
        let span = tracer
            .span_builder("call")
            .with_kind(SpanKind::Server)
            .with_start_time(clock.system)
            .with_attributes([
                KeyValue::new("brisvox.call_id", call_id.to_owned()),
                KeyValue::new("brisvox.transport", transport.to_owned()),
            ])
            .start(&tracer);
        CallTrace {
            tracer,
            clock,
            state: Mutex::new(TraceState {
                call: Some(Context::new().with_span(span)),
                tools: HashMap::new(),
            }),
        }
    }

    /// The wall-clock time of an engine instant, never before the call's
    /// span began (the engine backdates a caller's speech start to its first
    /// speech window, which can precede the moment the route admitted the
    /// call by a few milliseconds).
    fn wall(&self, at: Instant) -> SystemTime {
        self.clock.wall(at.max(self.clock.instant))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TraceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn's span and its stages' spans, as the timeline marked them.
    fn turn(&self, record: &TurnRecord) {
        let mut state = self.state();
        let Some(call) = state.call.clone() else {
            return;
        };
        let tools = state.tools.remove(&record.epoch().0).unwrap_or_default();
        drop(state);
        let marks: Vec<Instant> = TurnEvent::ALL
            .iter()
            .filter_map(|e| record.at(*e))
            .collect();
        let (Some(first), Some(last)) = (marks.iter().min(), marks.iter().max()) else {
            return;
        };
        let m = record.metrics();
        let ms = |name: &'static str, d: Option<Duration>| {
            d.map(|d| KeyValue::new(name, d.as_secs_f64() * 1000.0))
        };
        let mut attributes = vec![
            KeyValue::new(
                "brisvox.turn",
                i64::try_from(record.epoch().0).unwrap_or(i64::MAX),
            ),
            KeyValue::new("brisvox.interrupted", record.was_interrupted()),
        ];
        attributes.extend(
            [
                ms("brisvox.response_latency_ms", m.response_latency),
                ms("brisvox.end_of_turn_delay_ms", m.end_of_turn_delay),
                ms("brisvox.stt_final_delay_ms", m.stt_final_delay),
                ms("brisvox.llm_ttft_ms", m.llm_ttft),
            ]
            .into_iter()
            .flatten(),
        );
        let span = self
            .tracer
            .span_builder("turn")
            .with_kind(SpanKind::Internal)
            .with_start_time(self.wall(*first))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &call);
        let turn = call.with_span(span);
        for (name, from, to) in STAGES {
            if let Some(to_at) = record.at(*to)
                && let Some(from_at) = from.iter().find_map(|e| record.at(*e))
                && to_at >= from_at
            {
                self.child(&turn, name, from_at, to_at, Vec::new());
            }
        }
        if let Some(from_at) = record.at(TurnEvent::FirstAudioOut)
            && let Some(to_at) = record
                .at(TurnEvent::AudioOutStopped)
                .or(record.at(TurnEvent::LastAudioOut))
        {
            self.child(&turn, "playout", from_at, to_at.max(from_at), Vec::new());
        }
        for tool in tools {
            self.tool(&turn, tool, *last);
        }
        turn.span().end_with_timestamp(self.wall(*last));
    }

    /// A tool call's span; one still running is shown up to `until`.
    fn tool(&self, parent: &Context, tool: ToolSpan, until: Instant) {
        let end = tool.end.unwrap_or(ToolEnd {
            at: until,
            is_error: false,
            late: false,
        });
        let attributes = vec![
            KeyValue::new("brisvox.tool", tool.name),
            KeyValue::new("brisvox.tool.error", end.is_error),
            KeyValue::new("brisvox.tool.late", end.late),
            KeyValue::new("brisvox.tool.finished", tool.end.is_some()),
        ];
        self.child(
            parent,
            "tool",
            tool.start,
            end.at.max(tool.start),
            attributes,
        );
    }

    fn child(
        &self,
        parent: &Context,
        name: &'static str,
        from: Instant,
        to: Instant,
        attributes: Vec<KeyValue>,
    ) {
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(self.wall(from))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        span.end_with_timestamp(self.wall(to));
    }

    fn tool_started(&self, epoch: u64, name: &str) {
        self.state().tools.entry(epoch).or_default().push(ToolSpan {
            name: name.to_owned(),
            start: Instant::now(),
            end: None,
        });
    }

    /// A finished tool call: it started `latency` ago.
    fn tool_finished(&self, epoch: u64, name: &str, latency: Duration, is_error: bool, late: bool) {
        let now = Instant::now();
        let end = ToolEnd {
            at: now,
            is_error,
            late,
        };
        let start = now.checked_sub(latency).unwrap_or(now);
        let mut state = self.state();
        let tools = state.tools.entry(epoch).or_default();
        match tools.iter_mut().find(|t| t.name == name && t.end.is_none()) {
            Some(tool) => {
                tool.start = start;
                tool.end = Some(end);
            }
            None => tools.push(ToolSpan {
                name: name.to_owned(),
                start,
                end: Some(end),
            }),
        }
    }

    /// Ends the `call` span with what the report says.
    fn ended(&self, report: Option<&CallReport>) {
        let (call, tools) = {
            let mut state = self.state();
            (state.call.take(), std::mem::take(&mut state.tools))
        };
        let Some(call) = call else {
            return;
        };
        // Tool calls whose turn had no span (finished after it, or a turn
        // without metrics) are shown under the call.
        let now = Instant::now();
        for tool in tools.into_values().flatten() {
            self.tool(&call, tool, now);
        }
        let span = call.span();
        if let Some(report) = report {
            let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            span.set_attributes([
                KeyValue::new("brisvox.call.end", end_label(&report.end)),
                KeyValue::new("brisvox.call.turns", count(report.turn_counters.turns)),
                KeyValue::new(
                    "brisvox.call.responses",
                    count(report.turn_counters.responses),
                ),
                KeyValue::new(
                    "brisvox.call.barge_ins",
                    count(report.turn_counters.barge_ins),
                ),
                KeyValue::new(
                    "brisvox.llm.input_tokens",
                    count(report.llm_usage.input_tokens),
                ),
                KeyValue::new(
                    "brisvox.llm.output_tokens",
                    count(report.llm_usage.output_tokens),
                ),
                KeyValue::new("brisvox.audio.underruns", count(report.pacer.underruns)),
            ]);
            if report.failed_responses > 0 || matches!(report.end, CallEnd::SttLost) {
                span.set_status(Status::error("provider failures"));
            }
        } else {
            span.set_status(Status::error("the call ended without the engine's report"));
        }
        span.end_with_timestamp(SystemTime::now());
    }
}

/// The stages of a turn: a span from the first of `from` that was marked to `to`.
const STAGES: &[(&str, &[TurnEvent], TurnEvent)] = &[
    ("vad.stop", &[TurnEvent::UserSpeechEnd], TurnEvent::VadStop),
    (
        "stt.final",
        &[TurnEvent::SttFinalize, TurnEvent::UserSpeechEnd],
        TurnEvent::SttFinal,
    ),
    ("turn.end", &[TurnEvent::UserSpeechEnd], TurnEvent::TurnEnd),
    (
        "llm.first_token",
        &[TurnEvent::LlmRequest],
        TurnEvent::LlmFirstToken,
    ),
    (
        "tts.first_byte",
        &[TurnEvent::TtsFirstText, TurnEvent::TtsRequest],
        TurnEvent::TtsFirstByte,
    ),
];

/// How a call ended, as the `brisvox.call.end` attribute says it.
fn end_label(end: &CallEnd) -> &'static str {
    match end {
        CallEnd::Hangup => "hangup",
        CallEnd::Machine(_) => "machine",
        CallEnd::SttLost => "stt_lost",
        CallEnd::TransportClosed => "transport_closed",
        CallEnd::Requested => "requested",
        CallEnd::Transferred { .. } => "transferred",
    }
}

impl EventObserver for CallTrace {
    fn observe(&self, event: &EngineEvent) {
        match event {
            EngineEvent::TurnMetrics { record } => self.turn(record),
            EngineEvent::ToolCallStarted { epoch, name, .. } => self.tool_started(epoch.0, name),
            EngineEvent::ToolCallFinished {
                epoch,
                name,
                is_error,
                latency,
                late,
                ..
            } => self.tool_finished(epoch.0, name, *latency, *is_error, *late),
            EngineEvent::CallEnded { report } => self.ended(Some(report)),
            _ => {}
        }
    }
}

impl Drop for CallTrace {
    /// A call whose engine never reported (refused at setup, or its task
    /// failed) still ends its span.
    fn drop(&mut self) {
        self.ended(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vars(Vec<(&'static str, &'static str)>);

    impl Env for Vars {
        fn get(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn traces_are_off_unless_a_collector_is_named() {
        assert!(!wanted(&Vars(vec![])).unwrap());
        assert!(
            wanted(&Vars(vec![(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://c:4318"
            )]))
            .unwrap()
        );
        assert!(
            wanted(&Vars(vec![(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://c:4318/v1/traces"
            )]))
            .unwrap()
        );
    }

    #[test]
    fn the_sdk_switches_keep_traces_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert!(!wanted(&Vars(vec![endpoint, ("OTEL_SDK_DISABLED", "true")])).unwrap());
        assert!(!wanted(&Vars(vec![endpoint, ("OTEL_TRACES_EXPORTER", "none")])).unwrap());
        assert!(wanted(&Vars(vec![endpoint, ("OTEL_SDK_DISABLED", "false")])).unwrap());
    }

    #[test]
    fn grpc_is_refused_with_what_to_set() {
        let err = wanted(&Vars(vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("http/protobuf"), "{err}");
        assert!(
            wanted(&Vars(vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ]))
            .unwrap()
        );
    }

    /// Keeps every exported span.
    #[derive(Debug, Clone, Default)]
    struct Collect(Arc<Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

    impl opentelemetry_sdk::trace::SpanExporter for Collect {
        async fn export(
            &self,
            batch: Vec<opentelemetry_sdk::trace::SpanData>,
        ) -> opentelemetry_sdk::error::OTelSdkResult {
            self.0.lock().unwrap().extend(batch);
            Ok(())
        }
    }

    fn attr(span: &opentelemetry_sdk::trace::SpanData, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    }

    #[test]
    fn a_turn_is_a_span_under_its_call_with_its_stages_and_tools() {
        use brisvox_core::Epoch;
        use brisvox_core::timeline::TimelineRecorder;

        let spans = Collect::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "test");
        // The call began a second ago: the tool calls below started before
        // their events (by their latency), after the call.
        let second = Duration::from_secs(1);
        let clock = Clock {
            instant: Instant::now()
                .checked_sub(second)
                .expect("a second of uptime"),
            system: SystemTime::now() - second,
        };
        let trace = CallTrace::started_at(tracer, "call-9", "twilio", clock);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut rec = TimelineRecorder::new();
        for (event, ms) in [
            (TurnEvent::UserSpeechStart, 0),
            (TurnEvent::UserSpeechEnd, 1000),
            (TurnEvent::VadStop, 1200),
            (TurnEvent::SttFinal, 1250),
            (TurnEvent::TurnEnd, 1260),
            (TurnEvent::LlmRequest, 1260),
            (TurnEvent::LlmFirstToken, 1500),
            (TurnEvent::TtsFirstText, 1550),
            (TurnEvent::TtsFirstByte, 1650),
            (TurnEvent::FirstAudioOut, 1660),
            (TurnEvent::LastAudioOut, 2500),
        ] {
            rec.mark(Epoch(1), event, at(ms));
        }
        let record = Box::new(rec.open_turn().expect("open").clone());
        trace.observe(&EngineEvent::ToolCallStarted {
            epoch: Epoch(1),
            call_id: "call-9".into(),
            name: "order_status".into(),
            arguments: "{}".into(),
        });
        trace.observe(&EngineEvent::ToolCallFinished {
            epoch: Epoch(1),
            call_id: "call-9".into(),
            name: "order_status".into(),
            is_error: false,
            latency: Duration::from_millis(30),
            late: false,
        });
        trace.observe(&EngineEvent::ToolCallFinished {
            epoch: Epoch(1),
            call_id: "call-9".into(),
            name: "book_slot".into(),
            is_error: true,
            latency: Duration::from_millis(10),
            late: true,
        });
        trace.observe(&EngineEvent::TurnMetrics { record });
        drop(trace);

        let spans = spans.0.lock().unwrap().clone();
        let by_name = |n: &str| {
            spans
                .iter()
                .find(|s| s.name == n)
                .unwrap_or_else(|| panic!("no {n} span in {spans:#?}"))
        };
        let call = by_name("call");
        assert_eq!(attr(call, "brisvox.call_id").as_deref(), Some("call-9"));
        assert_eq!(attr(call, "brisvox.transport").as_deref(), Some("twilio"));
        let turn = by_name("turn");
        assert_eq!(turn.parent_span_id, call.span_context.span_id());
        assert_eq!(
            turn.end_time.duration_since(turn.start_time).unwrap(),
            Duration::from_millis(2500)
        );
        for (name, ms) in [
            ("vad.stop", 200),
            ("stt.final", 250),
            ("turn.end", 260),
            ("llm.first_token", 240),
            ("tts.first_byte", 100),
            ("playout", 840),
        ] {
            let s = by_name(name);
            assert_eq!(s.parent_span_id, turn.span_context.span_id(), "{name}");
            assert_eq!(
                s.end_time.duration_since(s.start_time).unwrap(),
                Duration::from_millis(ms),
                "{name}"
            );
        }
        let tools: Vec<_> = spans.iter().filter(|s| s.name == "tool").collect();
        assert_eq!(tools.len(), 2, "{tools:#?}");
        for tool in &tools {
            assert_eq!(tool.parent_span_id, turn.span_context.span_id());
        }
        let order = tools
            .iter()
            .find(|t| attr(t, "brisvox.tool").as_deref() == Some("order_status"))
            .expect("order_status");
        assert_eq!(attr(order, "brisvox.tool.error").as_deref(), Some("false"));
        assert!(
            order.end_time.duration_since(order.start_time).unwrap() >= Duration::from_millis(30)
        );
        let book = tools
            .iter()
            .find(|t| attr(t, "brisvox.tool").as_deref() == Some("book_slot"))
            .expect("book_slot");
        assert_eq!(attr(book, "brisvox.tool.error").as_deref(), Some("true"));
        assert_eq!(attr(book, "brisvox.tool.late").as_deref(), Some("true"));
        assert!(
            spans
                .iter()
                .all(|s| s.span_context.trace_id() == call.span_context.trace_id()),
            "one trace per call"
        );
        assert_eq!(
            call.status,
            Status::error("the call ended without the engine's report"),
            "a call without a report says so"
        );
    }

    #[test]
    fn engine_instants_map_onto_wall_clock_time() {
        let clock = Clock::now();
        let later = clock.instant + Duration::from_millis(250);
        assert_eq!(clock.wall(later), clock.system + Duration::from_millis(250));
        if let Some(earlier) = clock.instant.checked_sub(Duration::from_millis(40)) {
            assert_eq!(
                clock.wall(earlier),
                clock.system - Duration::from_millis(40)
            );
        }
    }
}
