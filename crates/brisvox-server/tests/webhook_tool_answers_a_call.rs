//! A webhook tool of the agent file answers a real call end to end: a caller
//! on /call speaks, the (mock) model calls `order_status`, the server posts
//! the call's id, the tool call's id, the arguments and the call's metadata
//! (from the `start` message) to a real local HTTP server, and the answer the
//! bot hands to the TTS is built from the webhook's JSON. A webhook that
//! fails (HTTP 500) gives the model an error result it answers from, and the
//! call goes on. `/metrics` counts each tool call by tool and outcome.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use brisvox_engine::{EngineEvent, EventObserver};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// Every engine event of every call.
#[derive(Default)]
struct Recorder(Mutex<Vec<EngineEvent>>);

impl EventObserver for Recorder {
    fn observe(&self, event: &EngineEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Recorder {
    /// The text the bot handed to the TTS, all chunks of all turns.
    fn bot_text(&self) -> String {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::BotText { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn finished_tools(&self) -> Vec<(String, bool)> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::ToolCallFinished { name, is_error, .. } => {
                    Some((name.clone(), *is_error))
                }
                _ => None,
            })
            .collect()
    }
}

type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// The tools' HTTP server: `/orders` answers with the order's status,
/// `/down` fails with a 500.
async fn webhook_server(seen: Seen) -> String {
    let orders = move |headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        async move {
            let body: Value = serde_json::from_slice(&body).unwrap();
            seen.lock().unwrap().push((headers, body));
            axum::Json(json!({"status": "shipped"}))
        }
    };
    let app = Router::new().route("/orders", post(orders)).route(
        "/down",
        post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "database down") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn sections(base: &str, path: &str) -> String {
    format!(
        r#"
[llm.mock]
first_token_ms = 20
token_interval_ms = 5
tool_result_answer = "Result {{result}}"
tool_calls = [{{ when_heard = "mock transcript", tool = "order_status", arguments = '{{"order_id":"42"}}' }}]

[[tools]]
name = "order_status"
description = "The status of an order."
parameters = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = ["order_id"] }}
webhook = {{ url = "{base}/{path}", timeout_ms = 2000, headers = {{ Authorization = "Bearer ${{ORDERS_TOKEN}}" }} }}
"#
    )
}

/// Plays 600 ms of "speech" then silence in real time, reading whatever
/// comes back, until `done` holds (at most [`common::WAIT`]).
async fn speak_until(ws: &mut common::Ws, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let mut n = 0;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        common::send_binary(ws, common::tone_frame(n, n < 30)).await;
        n += 1;
        let until = tokio::time::Instant::now() + Duration::from_millis(20);
        while let Ok(Some(msg)) = tokio::time::timeout_at(until, ws.next()).await {
            msg.expect("the call stays open");
        }
    }
}

async fn call_with(
    path: &str,
) -> (
    Arc<Recorder>,
    Seen,
    common::Ws,
    brisvox_server::serve::RunningServer,
) {
    let seen = Seen::default();
    let base = webhook_server(seen.clone()).await;
    let rec = Arc::new(Recorder::default());
    let srv = common::engine_server("", &sections(&base, path), Some(rec.clone())).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    let start = common::START_PCM16.replace(
        r#""call_id":"t1""#,
        r#""call_id":"t1","metadata":{"customer":"7"}"#,
    );
    common::send_text(&mut ws, &start).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    (rec, seen, ws, srv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_is_built_from_the_webhooks_result() {
    let (rec, seen, mut ws, srv) = call_with("orders").await;
    speak_until(&mut ws, || rec.bot_text().contains("shipped")).await;
    assert_eq!(rec.bot_text(), r#"Result {"status":"shipped"}"#);
    let (headers, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(body["call_id"], "t1");
    assert_eq!(body["tool"], "order_status");
    assert_eq!(body["arguments"], json!({"order_id": "42"}));
    assert_eq!(body["metadata"], json!({"customer": "7"}));
    assert!(
        body["tool_call_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(headers["authorization"], "Bearer tok-ORDERS_TOKEN");
    assert_eq!(rec.finished_tools(), [("order_status".to_owned(), false)]);
    let metrics = common::wait_metric(
        srv.local_addr(),
        "brisvox_tool_calls_total{outcome=\"ok\",tool=\"order_status\"} 1",
    )
    .await;
    assert!(
        metrics.contains("brisvox_tool_call_seconds_count{tool=\"order_status\"} 1"),
        "{metrics}"
    );
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_webhook_is_an_error_the_model_answers_from() {
    let (rec, _seen, mut ws, srv) = call_with("down").await;
    speak_until(&mut ws, || rec.bot_text().contains("database down")).await;
    assert_eq!(rec.finished_tools(), [("order_status".to_owned(), true)]);
    common::wait_metric(
        srv.local_addr(),
        "brisvox_tool_calls_total{outcome=\"error\",tool=\"order_status\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}
