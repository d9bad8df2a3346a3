//! A local fake of an OpenAI-compatible `POST /v1/audio/transcriptions`
//! (axum on 127.0.0.1), scripted per test with queued replies; it records
//! each request's `Authorization` header and multipart fields.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status and body.
    Status(u16, String),
    /// 429 with a `Retry-After` header, in seconds.
    RateLimited(&'static str),
    /// Wait, then answer 200 with the body.
    Slow(Duration, String),
    /// Send 200 headers and part of a body, then break the connection.
    BreakOff,
}

/// One multipart field.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub auth: Option<String>,
    pub fields: Vec<Field>,
}

impl Recorded {
    pub fn text(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| String::from_utf8_lossy(&f.data).into_owned())
    }

    pub fn file(&self) -> &Field {
        self.fields
            .iter()
            .find(|f| f.name == "file")
            .expect("a file field")
    }
}

#[derive(Clone, Default)]
struct Shared {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

pub struct FakeTranscribe {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    shared: Shared,
}

pub fn ok_text(text: &str) -> Reply {
    Reply::Status(200, serde_json::json!({ "text": text }).to_string())
}

impl FakeTranscribe {
    pub async fn start() -> FakeTranscribe {
        let shared = Shared::default();
        let app = axum::Router::new()
            .route("/v1/audio/transcriptions", post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeTranscribe { base_url, shared }
    }

    pub fn reply(&self, reply: Reply) {
        self.shared.replies.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

async fn handle(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let boundary = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_owned())
        .unwrap_or_default();
    shared.requests.lock().unwrap().push(Recorded {
        path: "/v1/audio/transcriptions".into(),
        auth: headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
        fields: parse_multipart(&body, &boundary),
    });
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Status(status, body)) => response(status, body),
        Some(Reply::RateLimited(after)) => {
            let mut r = response(429, r#"{"error":{"message":"slow down"}}"#.into());
            r.headers_mut()
                .insert("retry-after", after.parse().unwrap());
            r
        }
        Some(Reply::Slow(wait, body)) => {
            tokio::time::sleep(wait).await;
            response(200, body)
        }
        Some(Reply::BreakOff) => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from_static(b"{\"te")),
                Err(std::io::Error::other("broken on purpose")),
            ];
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from_stream(futures_util::stream::iter(chunks)))
                .unwrap()
        }
        None => response(500, r#"{"error":"no reply scripted"}"#.into()),
    }
}

fn response(status: u16, body: String) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// A minimal multipart/form-data parser (enough for reqwest's output).
fn parse_multipart(body: &[u8], boundary: &str) -> Vec<Field> {
    let delimiter = format!("--{boundary}");
    let mut fields = Vec::new();
    for part in split(body, delimiter.as_bytes()).into_iter().skip(1) {
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let Some(split_at) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split_at]).into_owned();
        let mut data = &part[split_at + 4..];
        data = data.strip_suffix(b"\r\n").unwrap_or(data);
        let attr = |key: &str| {
            head.split(';')
                .find_map(|p| p.trim().strip_prefix(&format!("{key}=\"")))
                .map(|v| v.split('"').next().unwrap().to_owned())
        };
        let Some(name) = attr("name") else { continue };
        let content_type = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("Content-Type: ")
                    .or(l.strip_prefix("content-type: "))
            })
            .map(str::to_owned);
        fields.push(Field {
            name,
            filename: attr("filename"),
            content_type,
            data: data.to_vec(),
        });
    }
    fields
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut hay: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    while let Some(at) = find(hay, delimiter) {
        parts.push(&hay[..at]);
        hay = &hay[at + delimiter.len()..];
    }
    parts.push(hay);
    parts
}
