//! A scriptable websocket server: records each connection's request and
//! messages, and answers each text message with what a vendor-specific
//! responder returns.

#![allow(clippy::result_large_err)] // tungstenite's handshake callback type

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// What the server does next.
#[derive(Debug, Clone)]
pub enum Out {
    Text(String),
    Delay(u64),
    /// Drops the TCP connection without a close frame.
    Abort,
    /// Sends a close frame with this code and reason, then stops.
    Close(u16, &'static str),
}

/// A vendor's behaviour: turns each received JSON message into replies.
pub trait Responder: Send + 'static {
    fn on_message(&mut self, message: &Value) -> Vec<Out>;
}

/// What one connection looked like.
#[derive(Debug, Clone, Default)]
pub struct Conn {
    pub uri: String,
    pub headers: Vec<(String, String)>,
    pub received: Vec<Value>,
}

impl Conn {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Inner {
    conns: Mutex<Vec<Conn>>,
    refuse_status: Mutex<Option<u16>>,
    pings: Mutex<u32>,
}

#[derive(Clone)]
pub struct FakeWs {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
}

impl FakeWs {
    /// Starts a server; `make` builds a responder per connection.
    pub async fn start<R: Responder>(make: impl Fn() -> R + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let inner = Arc::new(Inner::default());
        let server = FakeWs {
            addr,
            inner: inner.clone(),
        };
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let inner = inner.clone();
                let responder = make();
                tokio::spawn(serve(tcp, inner, responder));
            }
        });
        server
    }

    /// Refuse every upgrade from now on with `status`.
    pub fn refuse_with(&self, status: u16) {
        *self.inner.refuse_status.lock().unwrap() = Some(status);
    }

    pub fn conns(&self) -> Vec<Conn> {
        self.inner.conns.lock().unwrap().clone()
    }

    pub fn received(&self) -> Vec<Value> {
        self.conns().into_iter().flat_map(|c| c.received).collect()
    }

    pub fn pings(&self) -> u32 {
        *self.inner.pings.lock().unwrap()
    }
}

async fn serve<R: Responder>(tcp: tokio::net::TcpStream, inner: Arc<Inner>, mut responder: R) {
    let refuse = *inner.refuse_status.lock().unwrap();
    let mut conn = Conn::default();
    let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        conn.uri = req.uri().to_string();
        conn.headers = req
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        match refuse {
            Some(status) => {
                let mut e = ErrorResponse::new(Some("refused".into()));
                *e.status_mut() = StatusCode::from_u16(status).unwrap();
                Err(e)
            }
            None => Ok(resp),
        }
    };
    let accepted = tokio_tungstenite::accept_hdr_async(tcp, callback).await;
    let index = {
        let mut conns = inner.conns.lock().unwrap();
        conns.push(conn);
        conns.len() - 1
    };
    let Ok(mut ws) = accepted else { return };
    while let Some(Ok(message)) = ws.next().await {
        let text = match message {
            Message::Text(t) => t.to_string(),
            Message::Ping(_) => {
                *inner.pings.lock().unwrap() += 1;
                continue;
            }
            Message::Close(_) => return,
            _ => continue,
        };
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        inner.conns.lock().unwrap()[index]
            .received
            .push(value.clone());
        for out in responder.on_message(&value) {
            match out {
                Out::Text(t) => {
                    if ws.send(Message::text(t)).await.is_err() {
                        return;
                    }
                }
                Out::Delay(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                Out::Abort => return,
                Out::Close(code, reason) => {
                    let frame = CloseFrame {
                        code: CloseCode::from(code),
                        reason: reason.into(),
                    };
                    let _ = ws.close(Some(frame)).await;
                    return;
                }
            }
        }
    }
}
