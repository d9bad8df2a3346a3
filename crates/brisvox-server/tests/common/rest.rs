//! A fake carrier REST API on 127.0.0.1:0: records every request (method,
//! path, headers, body) and answers `status` with an empty JSON object.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use tokio::sync::mpsc;

/// One request the fake API received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub struct FakeApi {
    pub addr: SocketAddr,
    pub requests: mpsc::UnboundedReceiver<Received>,
}

impl FakeApi {
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next request, waiting at most the tests' patience.
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(super::WAIT, self.requests.recv())
            .await
            .expect("the carrier API was called in time")
            .expect("the fake API is running")
    }
}

/// Starts the fake API, answering `status` to everything.
pub async fn fake_api(status: u16) -> FakeApi {
    let (tx, requests) = mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(Received {
                    method,
                    path: uri.path().to_owned(),
                    headers,
                    body: body.to_vec(),
                });
                (
                    StatusCode::from_u16(status).expect("a status"),
                    [("content-type", "application/json")],
                    "{}",
                )
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeApi { addr, requests }
}
