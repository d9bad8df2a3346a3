//! A fake OpenAI-compatible Chat Completions server (HTTP, SSE streaming).
//!
//! Each POST to `/v1/chat/completions` takes the next [`Reply`] from the
//! script (the last one repeats); `GET /v1/models` answers `{"data":[]}`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

/// One step of a streamed body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Raw bytes, sent as they are.
    Raw(String),
    /// `data: <json>\n\n`.
    Data(Value),
    /// Waits (ms): a slow server.
    Delay(u64),
    /// Waits until the test opens the gate (`notify_one`): holds the rest of
    /// the body back for as long as the test needs, with no clock involved.
    Gate(Arc<tokio::sync::Notify>),
    /// Breaks the connection (the body fails: the client sees a reset).
    Abort,
}

/// How to answer one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with an SSE body made of these steps (the body ends after the last).
    Stream(Vec<Step>),
    /// A refusal with this status, JSON body and optional Retry-After.
    Status(u16, Value, Option<&'static str>),
    /// Accept the request and never answer.
    Hang,
}

/// What one request looked like.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
    pub peer: SocketAddr,
}

#[derive(Default)]
struct Inner {
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    body_dropped: AtomicBool,
}

/// A running fake; dropped with the test's runtime.
#[derive(Clone)]
pub struct FakeOpenAi {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
}

impl FakeOpenAi {
    pub async fn start(script: Vec<Reply>) -> Self {
        let inner = Arc::new(Inner {
            script: Mutex::new(script.into()),
            ..Default::default()
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", get(models))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        });
        FakeOpenAi { addr, inner }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.inner.seen.lock().unwrap().clone()
    }

    /// Whether a streamed body was dropped before its last step (the client went away).
    pub fn body_dropped(&self) -> bool {
        self.inner.body_dropped.load(Ordering::SeqCst)
    }
}

fn record(inner: &Inner, path: &str, peer: SocketAddr, headers: &HeaderMap, body: Value) {
    inner.seen.lock().unwrap().push(Seen {
        path: path.to_owned(),
        query: None,
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body,
        peer,
    });
}

async fn models(
    State(inner): State<Arc<Inner>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    record(&inner, "/v1/models", peer, &headers, Value::Null);
    json_response(200, json!({"object": "list", "data": []}), None)
}

async fn completions(
    State(inner): State<Arc<Inner>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    record(&inner, "/v1/chat/completions", peer, &headers, body);
    let reply = {
        let mut script = inner.script.lock().unwrap();
        if script.len() > 1 {
            script.pop_front().unwrap()
        } else {
            script.front().cloned().expect("script is empty")
        }
    };
    match reply {
        Reply::Status(status, body, retry_after) => json_response(status, body, retry_after),
        Reply::Hang => std::future::pending().await,
        Reply::Stream(steps) => sse_response(steps, inner.clone()),
    }
}

fn json_response(status: u16, body: Value, retry_after: Option<&'static str>) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json");
    if let Some(r) = retry_after {
        builder = builder.header("retry-after", r);
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

/// Sets `body_dropped` if dropped before `finished`.
struct DropWatch {
    inner: Arc<Inner>,
    finished: bool,
}

impl DropWatch {
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.inner.body_dropped.store(true, Ordering::SeqCst);
        }
    }
}

fn sse_response(steps: Vec<Step>, inner: Arc<Inner>) -> Response {
    let state = (
        VecDeque::from(steps),
        DropWatch {
            inner,
            finished: false,
        },
    );
    let stream = futures_util::stream::unfold(state, |(mut steps, mut watch)| async move {
        loop {
            let Some(step) = steps.pop_front() else {
                watch.finish();
                return None;
            };
            let bytes = match step {
                Step::Delay(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    continue;
                }
                Step::Gate(gate) => {
                    gate.notified().await;
                    continue;
                }
                Step::Raw(s) => s,
                Step::Data(v) => format!("data: {v}\n\n"),
                Step::Abort => {
                    watch.finish();
                    let err = std::io::Error::other("fake abort");
                    return Some((Err(err), (VecDeque::new(), watch)));
                }
            };
            return Some((Ok(Bytes::from(bytes)), (steps, watch)));
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A content delta chunk (the first one also names the upstream, as OpenRouter does).
pub fn text_chunk(text: &str) -> Step {
    Step::Data(json!({
        "id": "gen-1", "object": "chat.completion.chunk", "model": "openai/gpt-test",
        "provider": "OpenAI",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]
    }))
}

pub fn finish_chunk(reason: &str) -> Step {
    Step::Data(json!({
        "id": "gen-1", "object": "chat.completion.chunk", "model": "openai/gpt-test",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]
    }))
}

pub fn usage_chunk(prompt: u32, completion: u32) -> Step {
    Step::Data(json!({
        "id": "gen-1", "object": "chat.completion.chunk", "model": "openai/gpt-test",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    }))
}

pub fn done() -> Step {
    Step::Raw("data: [DONE]\n\n".into())
}

/// A whole answer: the words as deltas, stop, usage, [DONE].
pub fn answer(words: &[&str]) -> Reply {
    let mut steps: Vec<Step> = words.iter().map(|w| text_chunk(w)).collect();
    steps.push(finish_chunk("stop"));
    steps.push(usage_chunk(10, words.len() as u32));
    steps.push(done());
    Reply::Stream(steps)
}
