//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the real binary exports each
//! call's trace over OTLP/HTTP (protobuf) to a collector: here a local HTTP
//! server that decodes what it receives as OTLP's `ExportTraceServiceRequest`.
//! One call over `/call` (mock providers, the energy VAD, one second of tone
//! as the caller's one utterance, in real time) gives a `call` span with the
//! call's id, a `turn` span under it and the turn's stage spans under that, in
//! one trace.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::{Seen, Ws};
use futures_util::SinkExt as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

const CALL_ID: &str = "otel-call-1";

/// A collector: every span of every export request, with its service name.
async fn collector() -> (
    std::net::SocketAddr,
    mpsc::UnboundedReceiver<(String, Span)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route("/v1/traces", post(receive))
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, rx)
}

async fn receive(
    State(tx): State<mpsc::UnboundedSender<(String, Span)>>,
    body: Bytes,
) -> (
    axum::http::StatusCode,
    [(&'static str, &'static str); 1],
    Vec<u8>,
) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                Value::StringValue(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                let _ = tx.send((service.clone(), span));
            }
        }
    }
    (
        axum::http::StatusCode::OK,
        [("content-type", "application/x-protobuf")],
        Vec::new(),
    )
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s.clone()),
            other => Some(format!("{other:?}")),
        })
}

// Multi-threaded: the collector must answer while the test waits for the
// binary to exit (it exports what is left at shutdown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_exported_as_one_trace_of_call_turn_and_stage_spans() {
    let (collector_addr, mut spans) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://{collector_addr}");
    let mut server = common::Binary::start(
        dir.path(),
        "[stt]\nprovider = \"mock\"\n[llm]\nprovider = \"mock\"\n[tts]\nprovider = \"mock\"\n\
         [vad]\ndetector = \"energy\"\n[turn]\nanalyzer = \"always_complete\"\n\
         [server]\ndrain_admit_s = 0\n",
        &[
            ("RUST_LOG", "info"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "brisvox-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );

    let mut ws = common::connect(server.addr, "/call").await;
    let start = common::START_PCM16.replace("\"t1\"", &format!("\"{CALL_ID}\""));
    common::send_text(&mut ws, &start).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    play_until_answered(&mut ws).await;
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));

    // Every span of the call, until its `call` span arrived (it ends last,
    // when the engine reports the call's end).
    let mut all: Vec<Span> = Vec::new();
    let deadline = Instant::now() + common::WAIT;
    while !all.iter().any(|s| s.name == "call") {
        let (service, span) = tokio::time::timeout_at(deadline, spans.recv())
            .await
            .unwrap_or_else(|_| panic!("no call span; seen {:?}", names(&all)))
            .expect("the collector runs");
        assert_eq!(service, "brisvox-test");
        all.push(span);
    }
    assert!(server.terminate(), "a clean exit");
    let call = all.iter().find(|s| s.name == "call").expect("the call");
    assert_eq!(attr(call, "brisvox.call_id").as_deref(), Some(CALL_ID));
    assert_eq!(
        attr(call, "brisvox.transport").as_deref(),
        Some("brisvox_ws")
    );
    assert_eq!(attr(call, "brisvox.call.end").as_deref(), Some("hangup"));
    assert!(call.parent_span_id.is_empty(), "the call is the root");
    let turns: Vec<&Span> = all.iter().filter(|s| s.name == "turn").collect();
    assert_eq!(turns.len(), 1, "one utterance, one turn: {:?}", names(&all));
    let turn = turns[0];
    assert_eq!(turn.parent_span_id, call.span_id);
    let seen: HashMap<&str, &Span> = all
        .iter()
        .filter(|s| s.parent_span_id == turn.span_id)
        .map(|s| (s.name.as_str(), s))
        .collect();
    assert!(turn.start_time_unix_nano >= call.start_time_unix_nano);
    assert!(turn.end_time_unix_nano <= call.end_time_unix_nano);
    for name in [
        "vad.stop",
        "stt.final",
        "turn.end",
        "llm.first_token",
        "tts.first_byte",
        "playout",
    ] {
        let span = seen
            .get(name)
            .unwrap_or_else(|| panic!("no {name} span under the turn; seen {:?}", names(&all)));
        assert_eq!(
            span.trace_id, call.trace_id,
            "{name} is in the call's trace"
        );
        assert!(
            span.start_time_unix_nano >= turn.start_time_unix_nano
                && span.end_time_unix_nano <= turn.end_time_unix_nano,
            "{name} lies within its turn"
        );
    }
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// Plays one second of a loud tone in real time (the energy VAD's speech),
/// then silence, until the bot's answer has played and the turn's metrics
/// arrived.
async fn play_until_answered(ws: &mut Ws) {
    let samples: Vec<i16> = (0..16_000)
        .map(|i| {
            let phase = 2.0 * std::f32::consts::PI * 220.0 * i as f32 / 16_000.0;
            (8_000.0 * phase.sin()) as i16
        })
        .collect();
    let mut frames = samples
        .chunks(320)
        .map(|c| Message::Binary(c.iter().flat_map(|s| s.to_le_bytes()).collect()))
        .collect::<Vec<_>>()
        .into_iter();
    let silence = Message::Binary(vec![0; 640].into());
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let deadline = Instant::now() + common::WAIT;
    loop {
        assert!(Instant::now() < deadline, "no answered turn in time");
        tokio::select! {
            _ = tick.tick() => {
                let msg = frames.next().unwrap_or_else(|| silence.clone());
                ws.send(msg).await.expect("send audio");
            }
            m = common::next(ws) => match m {
                Seen::Event(ev) if ev["type"] == "turn_metrics" => return,
                Seen::Closed(code) => panic!("closed ({code:?}) before the answer"),
                _ => {}
            },
        }
    }
}
