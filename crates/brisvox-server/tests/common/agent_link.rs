//! An agent and callers for end-to-end tests of the agent link: the agent is
//! a plain websocket server written against docs/AGENT_PROTOCOL.md (raw
//! JSON, as an agent in another language would be), driven per connection
//! by a script; the callers speak a tone on `/call` or `/twilio`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use brisvox_audio::g711;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// An agent file for agent link tests: no greeting, the energy VAD, every
/// stop complete, fast mocks; `top` goes at the top level, `llm_mock` into
/// `[llm.mock]`, `rest` after `[agent_link]` (whose `url` is `agent_url`).
pub fn agent_file(top: &str, llm_mock: &str, agent_url: &str, rest: &str) -> String {
    format!(
        r#"greeting = ""
{top}
[vad]
detector = "energy"
min_silence_ms = 100
[turn]
analyzer = "always_complete"
[llm.mock]
first_token_ms = 20
token_interval_ms = 5
{llm_mock}
[tts.mock]
first_byte_ms = 20
[agent_link]
url = "{agent_url}"
{rest}"#
    )
}

/// One connection's way back to the server.
#[derive(Clone)]
pub struct Reply {
    out: mpsc::UnboundedSender<Option<Value>>,
    /// The connection's number (0 for the first).
    pub connection: usize,
}

impl Reply {
    /// Sends `command`.
    pub fn send(&self, command: Value) {
        let _ = self.out.send(Some(command));
    }

    /// Sends a raw text frame (for bad input).
    pub fn send_raw(&self, text: &str) {
        let _ = self.out.send(Some(Value::String(text.to_owned())));
    }

    /// Drops the connection (no close handshake).
    pub fn drop_connection(&self) {
        let _ = self.out.send(None);
    }
}

/// What the agent does with each event of one connection (called in order).
pub type Script = Box<dyn FnMut(&Value, &Reply) + Send>;

/// A test agent: each connection runs a script made by its factory; every
/// event it receives goes to the test, in order.
pub struct TestAgent {
    pub url: String,
    events: mpsc::UnboundedReceiver<Value>,
    /// Every event seen so far, in order.
    pub seen: Vec<Value>,
}

impl TestAgent {
    pub async fn start(scripts: impl Fn() -> Script + Send + Sync + 'static) -> TestAgent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let (tx, events) = mpsc::unbounded_channel();
        let scripts = Arc::new(scripts);
        tokio::spawn(async move {
            let mut connection = 0;
            while let Ok((tcp, _)) = listener.accept().await {
                let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
                tokio::spawn(serve(ws, tx.clone(), scripts(), connection));
                connection += 1;
            }
        });
        TestAgent {
            url,
            events,
            seen: Vec::new(),
        }
    }

    /// Waits for an event for which `want` holds (at most [`super::WAIT`]
    /// overall), while `tick` keeps the caller's side going.
    pub async fn until<F>(&mut self, want: impl Fn(&Value) -> bool, tick: &mut F) -> Value
    where
        F: AsyncFnMut(),
    {
        let deadline = tokio::time::Instant::now() + super::WAIT;
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the agent never saw it; it saw {:#?}",
                self.seen
            );
            tokio::select! {
                event = self.events.recv() => {
                    let event = event.expect("the agent runs");
                    self.seen.push(event.clone());
                    if want(&event) {
                        return event;
                    }
                }
                () = tick() => {}
            }
        }
    }

    /// The text of every `bot.text` seen, joined by spaces.
    pub fn bot_text(&self) -> String {
        self.seen
            .iter()
            .filter(|e| e["type"] == "bot.text")
            .map(|e| e["text"].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

type AgentWs = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn serve(
    ws: AgentWs,
    events: mpsc::UnboundedSender<Value>,
    mut script: Script,
    connection: usize,
) {
    let (mut write, mut read) = ws.split();
    let (out, mut out_rx) = mpsc::unbounded_channel::<Option<Value>>();
    let reply = Reply { out, connection };
    let (gone_tx, mut gone) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        while let Some(Some(command)) = out_rx.recv().await {
            let text = match command {
                Value::String(raw) => raw,
                other => other.to_string(),
            };
            if write.send(Message::text(text)).await.is_err() {
                return;
            }
        }
        // `None`: drop the connection (the reader stops with it).
        let _ = gone_tx.send(());
    });
    loop {
        let msg = tokio::select! {
            msg = read.next() => msg,
            _ = &mut gone => return,
        };
        let Some(Ok(msg)) = msg else { return };
        let Message::Text(text) = msg else { continue };
        let mut event: Value = serde_json::from_str(&text).expect("events are JSON");
        script(&event, &reply);
        event["connection"] = json!(connection);
        let _ = events.send(event);
    }
}

/// `tools.set` in answer to `started`, declaring tools without parameters.
pub fn tools_set(started: &Value, names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "description": "A test tool.", "parameters": {"type": "object", "properties": {}}}))
        .collect();
    json!({"type": "tools.set", "re": started["id"], "tools": tools})
}

/// A caller's side: sends one 20 ms frame per tick (speech while `loud`),
/// reading whatever the server sends back.
pub struct Caller {
    pub ws: super::Ws,
    frame: Box<dyn Fn(usize, bool) -> Message + Send>,
    n: usize,
    loud_until: usize,
}

impl Caller {
    /// Speaks for 600 ms from the next frame on.
    pub fn speak(&mut self) {
        self.loud_until = self.n + 30;
    }

    pub async fn tick(&mut self) {
        assert!(self.step().await, "the call stays open");
    }

    /// One frame and 20 ms of reading; false once the server closed the
    /// call (then it only waits).
    pub async fn step(&mut self) -> bool {
        let msg = (self.frame)(self.n, self.n < self.loud_until);
        self.n += 1;
        let until = tokio::time::Instant::now() + Duration::from_millis(20);
        let mut open = self.ws.send(msg).await.is_ok();
        while let Ok(Some(msg)) = tokio::time::timeout_at(until, self.ws.next()).await {
            open &= msg.is_ok_and(|m| !m.is_close());
        }
        tokio::time::sleep_until(until).await;
        open
    }
}

fn tone(n: usize, samples: usize, rate: f64, loud: bool) -> impl Iterator<Item = i16> {
    (0..samples).map(move |i| {
        let t = (n * samples + i) as f64 / rate;
        if loud {
            (8_000.0 * (2.0 * std::f64::consts::PI * 300.0 * t).sin()) as i16
        } else {
            0
        }
    })
}

/// A caller on `/call` (call id `e2e-call`, metadata caller and customer).
pub async fn call_caller(addr: SocketAddr) -> Caller {
    let mut ws = super::connect(addr, "/call").await;
    let start = json!({"type": "start", "protocol_version": 1, "codec": "pcm16",
        "sample_rate": 16000, "call_id": "e2e-call",
        "metadata": {"caller": "+15550100", "customer": "7"}});
    super::send_text(&mut ws, &start.to_string()).await;
    assert_eq!(super::next_event(&mut ws).await["type"], "started");
    Caller {
        ws,
        frame: Box::new(|n, loud| {
            Message::Binary(
                tone(n, 320, 16_000.0, loud)
                    .flat_map(i16::to_le_bytes)
                    .collect(),
            )
        }),
        n: 0,
        loud_until: 0,
    }
}

/// A caller on `/twilio` (call SID `CA-e2e`, custom parameter caller).
pub async fn twilio_caller(addr: SocketAddr) -> Caller {
    let mut ws = super::connect(addr, "/twilio").await;
    let sid = "MZ00000000000000000000000000000002";
    let connected = json!({"event": "connected", "protocol": "Call", "version": "1.0.0"});
    super::send_text(&mut ws, &connected.to_string()).await;
    let start = json!({
        "event": "start", "sequenceNumber": "1", "streamSid": sid,
        "start": {
            "streamSid": sid, "accountSid": "AC0", "callSid": "CA-e2e",
            "tracks": ["inbound"], "customParameters": {"caller": "+15550199"},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        }
    });
    super::send_text(&mut ws, &start.to_string()).await;
    let b64 = base64::engine::general_purpose::STANDARD;
    Caller {
        ws,
        frame: Box::new(move |n, loud| {
            let payload: Vec<u8> = tone(n, 160, 8_000.0, loud).map(g711::ulaw_encode).collect();
            let msg = json!({
                "event": "media", "sequenceNumber": (n + 2).to_string(), "streamSid": sid,
                "media": {"track": "inbound", "chunk": (n + 1).to_string(),
                          "timestamp": (n * 20).to_string(), "payload": b64.encode(payload)}
            });
            Message::Text(msg.to_string().into())
        }),
        n: 0,
        loud_until: 0,
    }
}

pub fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == kind
}

pub fn bot_says(part: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "bot.text" && e["text"].as_str().is_some_and(|t| t.contains(part))
}
