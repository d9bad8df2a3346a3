//! A local fake of Deepgram's websocket endpoints (`/v1/listen`, `/v1/speak`)
//! and a log capture, for the Deepgram adapter tests.
//!
//! The fake accepts upgrades on 127.0.0.1 and hands each accepted socket to
//! the test as a [`FakeConn`], so every test scripts the server side itself
//! (answer a Finalize, close with 1011, send garbage). Upgrades can be refused
//! with a status ([`FakeWs::refuse_next`]).
#![allow(dead_code, unreachable_pub, missing_docs, clippy::result_large_err)]

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// How long a test waits for something that should happen at once.
pub use brisvox_testkit::PATIENCE;

/// Statuses (and `Retry-After` values) to refuse the next upgrades with.
type Refusals = Arc<Mutex<VecDeque<(u16, Option<&'static str>)>>>;

pub struct FakeWs {
    /// `ws://127.0.0.1:PORT` (append the path).
    pub base: String,
    conns: mpsc::Receiver<FakeConn>,
    refusals: Refusals,
    /// Upgrade requests seen (accepted or refused).
    pub upgrades: Arc<AtomicUsize>,
}

/// One accepted websocket, server side.
pub struct FakeConn {
    /// Path and query of the upgrade request.
    pub uri: String,
    /// The `Authorization` header of the upgrade, if any.
    pub auth: Option<String>,
    ws: WebSocketStream<TcpStream>,
}

impl FakeWs {
    pub async fn start() -> FakeWs {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("ws://{}", listener.local_addr().unwrap());
        let (tx, conns) = mpsc::channel(8);
        let refusals: Refusals = Arc::default();
        let upgrades = Arc::new(AtomicUsize::new(0));
        let (r, u) = (refusals.clone(), upgrades.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (tx, r, u) = (tx.clone(), r.clone(), u.clone());
                tokio::spawn(async move {
                    let seen = Arc::new(Mutex::new((String::new(), None::<String>)));
                    let s = seen.clone();
                    let callback = move |req: &Request, resp: Response| {
                        u.fetch_add(1, Ordering::SeqCst);
                        let auth = req
                            .headers()
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned());
                        *s.lock().unwrap() = (req.uri().to_string(), auth);
                        if let Some((status, retry_after)) = r.lock().unwrap().pop_front() {
                            let mut refusal = ErrorResponse::new(Some("refused".into()));
                            *refusal.status_mut() = StatusCode::from_u16(status).unwrap();
                            if let Some(after) = retry_after {
                                refusal
                                    .headers_mut()
                                    .insert("retry-after", after.parse().unwrap());
                            }
                            return Err(refusal);
                        }
                        Ok(resp)
                    };
                    if let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await {
                        let (uri, auth) = seen.lock().unwrap().clone();
                        let _ = tx.send(FakeConn { uri, auth, ws }).await;
                    }
                });
            }
        });
        FakeWs {
            base,
            conns,
            refusals,
            upgrades,
        }
    }

    /// Answers the next upgrade with `status` (and a `Retry-After` header).
    pub fn refuse_next(&self, status: u16, retry_after: Option<&'static str>) {
        self.refusals
            .lock()
            .unwrap()
            .push_back((status, retry_after));
    }

    /// The next accepted socket.
    pub async fn accept(&mut self) -> FakeConn {
        tokio::time::timeout(PATIENCE, self.conns.recv())
            .await
            .expect("no connection in time")
            .expect("fake server gone")
    }

    /// Whether a socket was accepted within `wait`.
    pub async fn accepts_within(&mut self, wait: Duration) -> Option<FakeConn> {
        tokio::time::timeout(wait, self.conns.recv())
            .await
            .ok()
            .flatten()
    }
}

/// What the client sent, in a form easy to assert on.
#[derive(Debug, Clone, PartialEq)]
pub enum Got {
    Text(String),
    Audio(Vec<u8>),
    Closed,
}

impl FakeConn {
    /// The next message from the client (pings skipped).
    pub async fn recv(&mut self) -> Got {
        loop {
            let next = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("client sent nothing in time");
            return match next {
                Some(Ok(Message::Text(t))) => Got::Text(t.to_string()),
                Some(Ok(Message::Binary(b))) => Got::Audio(b.to_vec()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => Got::Closed,
                Some(Ok(_)) => continue,
            };
        }
    }

    /// Audio bytes received until the text message `want`; other texts fail the test.
    pub async fn audio_until(&mut self, want: &str) -> Vec<u8> {
        let mut audio = Vec::new();
        loop {
            match self.recv().await {
                Got::Audio(b) => audio.extend(b),
                Got::Text(t) if t == want => return audio,
                other => panic!("expected audio then {want}, got {other:?}"),
            }
        }
    }

    /// Receives until `n` audio bytes have arrived; returns them and any texts seen.
    pub async fn audio_bytes(&mut self, n: usize) -> (Vec<u8>, Vec<String>) {
        let (mut audio, mut texts) = (Vec::new(), Vec::new());
        while audio.len() < n {
            match self.recv().await {
                Got::Audio(b) => audio.extend(b),
                Got::Text(t) => texts.push(t),
                Got::Closed => panic!("closed after {} of {n} bytes", audio.len()),
            }
        }
        (audio, texts)
    }

    pub async fn send_text(&mut self, text: impl Into<String>) {
        self.ws.send(Message::text(text.into())).await.unwrap();
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::binary(bytes)).await.unwrap();
    }

    /// Closes with `code` and `reason` (1011 "NET-0001" is Deepgram's idle timeout).
    pub async fn close(mut self, code: u16, reason: &str) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.to_owned().into(),
        };
        let _ = self.ws.close(Some(frame)).await;
        // Let the close frame leave before the socket drops.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.next()).await;
    }

    /// Drops the TCP connection without a close frame.
    pub fn reset(self) {
        drop(self);
    }
}

/// A Deepgram `Results` message.
pub fn results(
    text: &str,
    is_final: bool,
    from_finalize: bool,
    start: f64,
    duration: f64,
) -> String {
    serde_json::json!({
        "type": "Results",
        "channel_index": [0, 1],
        "duration": duration,
        "start": start,
        "is_final": is_final,
        "speech_final": is_final,
        "from_finalize": from_finalize,
        "channel": {"alternatives": [{"transcript": text, "confidence": 0.9, "words": []}]},
        "metadata": {"request_id": "fake"}
    })
    .to_string()
}

/// `n` 20 ms frames at 16 kHz whose samples count up from `first`, so replayed
/// audio can be recognised.
pub fn counting_frames(first: i16, n: usize) -> Vec<brisvox_core::AudioFrame> {
    (0..n)
        .map(|k| {
            let base = first.wrapping_add((k * 320) as i16);
            let samples: Vec<i16> = (0..320).map(|i| base.wrapping_add(i as i16)).collect();
            brisvox_core::AudioFrame::from_samples(&samples, 16_000).unwrap()
        })
        .collect()
}

/// PCM16 little-endian bytes of `frames`.
pub fn bytes_of(frames: &[brisvox_core::AudioFrame]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| f.samples().iter().flat_map(|s| s.to_le_bytes()))
        .collect()
}

/// Captures every `tracing` line (all levels) written while the guard lives,
/// on this thread (use a current-thread runtime).
pub struct LogCapture {
    buf: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

#[derive(Clone)]
struct BufWriter(Arc<Mutex<Vec<u8>>>);

impl Write for BufWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    pub fn start() -> LogCapture {
        let buf: Arc<Mutex<Vec<u8>>> = Arc::default();
        let writer = BufWriter(buf.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        LogCapture { buf, _guard: guard }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap()).into_owned()
    }
}
