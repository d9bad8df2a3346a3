//! Shared helpers: an in-process server on 127.0.0.1:0 and small clients.
#![allow(dead_code, unreachable_pub)]

pub mod agent_link;
pub mod carrier;
pub mod rest;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub mod binary;

use brisvox_server::admission::NoPoolPressure;
use brisvox_server::agent::AgentSettings;
use brisvox_server::handler::{CallHandler, EchoCallHandler};
use brisvox_server::serve::{RunningServer, ServerConfig, start};
use brisvox_testkit::{eventually_async, eventually_some_async, later};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A bound on every wait in these tests (the test kit's `PATIENCE`).
pub const WAIT: Duration = brisvox_testkit::PATIENCE;

pub const START_PCM16: &str =
    r#"{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"t1"}"#;

pub async fn server_with(agent_toml: &str, handler: Arc<dyn CallHandler>) -> RunningServer {
    server_with_env(agent_toml, handler, &|n| Some(format!("tok-{n}"))).await
}

/// [`server_with`], the agent file's `${NAME}`s read through `env`.
pub async fn server_with_env(
    agent_toml: &str,
    handler: Arc<dyn CallHandler>,
    env: &dyn Fn(&str) -> Option<String>,
) -> RunningServer {
    let agent = AgentSettings::from_toml_str(agent_toml, env).unwrap();
    start(ServerConfig {
        agent: Arc::new(agent),
        bind: "127.0.0.1:0".parse().unwrap(),
        handler,
        pressure: Box::new(NoPoolPressure),
        metrics: brisvox_server::metrics::ServerMetrics::new(),
        telemetry: None,
    })
    .await
    .unwrap()
}

pub async fn server() -> RunningServer {
    server_with("", Arc::new(EchoCallHandler)).await
}

/// The engine's sections for tests: the energy VAD and an always-complete
/// verdict (no model files); the providers stay the mocks.
pub const MOCK_ENGINE: &str =
    "[vad]\ndetector = \"energy\"\nmin_silence_ms = 100\n[turn]\nanalyzer = \"always_complete\"\n";

/// A server running the real engine with mock providers: the agent file is
/// `top` (top-level keys; no greeting unless it sets one), [`MOCK_ENGINE`] and
/// `sections` (other sections than `[vad]` and `[turn]`), with `observer` on
/// every call's events when given.
pub async fn engine_server(
    top: &str,
    sections: &str,
    observer: Option<Arc<dyn brisvox_engine::EventObserver>>,
) -> RunningServer {
    engine_server_with_env(top, sections, observer, &|n| Some(format!("tok-{n}"))).await
}

/// [`engine_server`], the agent file's `${NAME}`s read through `env`.
pub async fn engine_server_with_env(
    top: &str,
    sections: &str,
    observer: Option<Arc<dyn brisvox_engine::EventObserver>>,
    env: &dyn Fn(&str) -> Option<String>,
) -> RunningServer {
    let greeting = if top.contains("greeting") {
        ""
    } else {
        "greeting = \"\"\n"
    };
    let toml = format!("{greeting}{top}\n{MOCK_ENGINE}{sections}\n");
    let agent = AgentSettings::from_toml_str(&toml, env).unwrap();
    let mut handler = brisvox_server::engine::EngineCallHandler::new(&agent).unwrap();
    if let Some(observer) = observer {
        handler = handler.with_observer(observer);
    }
    server_with_env(&toml, Arc::new(handler), env).await
}

/// Reads until an event of `kind`, returning the events and the count of
/// audible audio messages (any byte off silence) seen before it.
pub async fn until_event(ws: &mut Ws, kind: &str) -> (Vec<serde_json::Value>, usize) {
    let mut events = Vec::new();
    let mut audible = 0;
    loop {
        match next(ws).await {
            Seen::Event(v) => {
                let done = v["type"] == kind;
                events.push(v);
                if done {
                    return (events, audible);
                }
            }
            Seen::Audio(a) => audible += usize::from(a.chunks(2).any(|s| s != [0, 0])),
            Seen::Closed(c) => panic!("closed ({c:?}) while waiting for {kind}: {events:?}"),
        }
    }
}

/// GET `path`; returns (status, body).
pub async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    exchange(addr, &req).await
}

/// POST `body` to `path` with `headers` (and `Host: {addr}`); returns
/// (status, body).
pub async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    exchange(addr, &req).await
}

/// Sends one HTTP/1.1 request (`Connection: close`) and reads the whole
/// answer; returns (status, body).
async fn exchange(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Opens a websocket to `path` with extra request `headers`; `Err` holds
/// the HTTP status of a refused upgrade.
pub async fn connect_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Ws, u16> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{addr}{path}").into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut().insert(
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("the upgrade to {path} failed without an HTTP answer: {e}"),
    }
}

pub async fn connect(addr: SocketAddr, path: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}{path}"))
        .await
        .unwrap();
    ws
}

/// Polls GET `path` until it answers `want` (status, body); panics after [`WAIT`].
pub async fn eventually_get(addr: SocketAddr, path: &str, want: (u16, &str)) {
    let last = RefCell::new(None);
    let what = later(|| format!("GET {path}: last {:?}, never {want:?}", last.borrow()));
    eventually_async(WAIT, what, || async {
        let got = get(addr, path).await;
        let done = (got.0, got.1.as_str()) == want;
        *last.borrow_mut() = Some(got);
        done
    })
    .await;
}

/// Tries a websocket upgrade that the server must refuse; returns the HTTP
/// status and the JSON body of the refusal.
pub async fn refused_upgrade(addr: SocketAddr, path: &str) -> (u16, serde_json::Value) {
    match tokio_tungstenite::connect_async(format!("ws://{addr}{path}")).await {
        Ok(_) => panic!("the upgrade to {path} was accepted"),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response.body().as_deref().unwrap_or_default();
            let json = serde_json::from_slice(body).expect("a JSON refusal body");
            (response.status().as_u16(), json)
        }
        Err(e) => panic!("the upgrade failed without an HTTP answer: {e}"),
    }
}

/// What the client saw next.
#[derive(Debug)]
pub enum Seen {
    Event(serde_json::Value),
    Audio(Vec<u8>),
    Closed(Option<u16>),
}

pub async fn next(ws: &mut Ws) -> Seen {
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("the server answered in time");
        match msg {
            Some(Ok(Message::Text(t))) => {
                return Seen::Event(serde_json::from_str(t.as_str()).unwrap());
            }
            Some(Ok(Message::Binary(b))) => return Seen::Audio(b.to_vec()),
            Some(Ok(Message::Close(f))) => return Seen::Closed(f.map(|f| u16::from(f.code))),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Seen::Closed(None),
        }
    }
}

/// The next JSON event, skipping audio.
pub async fn next_event(ws: &mut Ws) -> serde_json::Value {
    loop {
        match next(ws).await {
            Seen::Event(v) => return v,
            Seen::Audio(_) => continue,
            Seen::Closed(c) => panic!("closed ({c:?}) while waiting for an event"),
        }
    }
}

/// Reads to the close; returns the events seen and the close code.
pub async fn until_close(ws: &mut Ws) -> (Vec<serde_json::Value>, Option<u16>) {
    let mut events = Vec::new();
    loop {
        match next(ws).await {
            Seen::Event(v) => events.push(v),
            Seen::Audio(_) => {}
            Seen::Closed(c) => return (events, c),
        }
    }
}

pub async fn send_text(ws: &mut Ws, t: &str) {
    ws.send(Message::text(t)).await.unwrap();
}

pub async fn send_binary(ws: &mut Ws, b: Vec<u8>) {
    ws.send(Message::binary(b)).await.unwrap();
}

pub fn code(c: CloseCode) -> u16 {
    u16::from(c)
}

/// Polls `/metrics` until `needle` appears.
pub async fn wait_metric(addr: SocketAddr, needle: &str) -> String {
    let last = RefCell::new(String::new());
    let what = later(|| format!("{needle} never appeared in\n{}", last.borrow()));
    eventually_some_async(WAIT, what, || async {
        let (_, body) = get(addr, "/metrics").await;
        let found = body.contains(needle).then(|| body.clone());
        *last.borrow_mut() = body;
        found
    })
    .await
}

/// The real `brisvox serve` binary on 127.0.0.1:0 with JSON logs; killed when
/// dropped. `lines` receives every log line after "listening".
pub struct Binary {
    pub child: std::process::Child,
    pub addr: SocketAddr,
    pub lines: std::sync::mpsc::Receiver<String>,
}

impl Binary {
    /// Starts the binary on the agent file `agent_toml` (written to `dir`),
    /// with `env` added to its environment, and waits until it listens.
    pub fn start(dir: &std::path::Path, agent_toml: &str, env: &[(&str, &str)]) -> Binary {
        use std::io::BufRead as _;
        let agent = dir.join("agent.toml");
        std::fs::write(&agent, agent_toml).expect("agent file written");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox"))
            .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
            .arg("--agent")
            .arg(&agent)
            .envs(env.iter().copied())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().expect("piped");
        let (line_tx, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = line_tx.send(line);
            }
        });
        let addr = loop {
            let line = lines
                .recv_timeout(WAIT)
                .expect("the server logs until it listens");
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                panic!("a log line that is not JSON: {line}");
            };
            if v["fields"]["message"] == "listening" {
                break v["fields"]["local_addr"]
                    .as_str()
                    .expect("address")
                    .parse()
                    .expect("socket address");
            }
        };
        Binary { child, addr, lines }
    }

    /// Sends SIGTERM and waits for the exit; true when it exited cleanly.
    pub fn terminate(&mut self) -> bool {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("the binary exits").success()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 20 ms frame of 16 kHz PCM16: a 300 Hz tone (speech to the energy VAD)
/// when `loud`, else silence; `n` is the frame's number (the phase runs on).
pub fn tone_frame(n: usize, loud: bool) -> Vec<u8> {
    (0..320)
        .flat_map(|i| {
            let t = (n * 320 + i) as f64 / 16_000.0;
            let v = if loud {
                (8_000.0 * (2.0 * std::f64::consts::PI * 300.0 * t).sin()) as i16
            } else {
                0
            };
            v.to_le_bytes()
        })
        .collect()
}

/// An agent file read as `brisvox check` reads it, every variable set to "x".
pub fn check_agent(
    text: &str,
) -> Result<brisvox_server::agent::AgentSettings, brisvox_server::agent::AgentError> {
    AgentSettings::from_toml_str(text, &|_| Some("x".into()))
}

/// The key an agent file's refused value names; panics on anything else.
pub fn invalid_key(text: &str) -> String {
    match check_agent(text) {
        Err(brisvox_server::agent::AgentError::InvalidValue { key, .. }) => key,
        other => panic!("expected an invalid value for {text}: {other:?}"),
    }
}
