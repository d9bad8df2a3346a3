//! The real `brisvox serve` binary with an agent file naming a webhook tool
//! and an agent link (mock providers, the energy VAD: no model files), over
//! real sockets:
//!
//! - a caller on `/call` and one on `/twilio` each take two turns: the first
//!   makes the (scripted mock) model call the webhook tool `order_status` on
//!   a real local HTTP server, the second the tool `opening_hours` that the
//!   agent declared with `tools.set` and answers with `tool.result`; each
//!   answer the agent sees the bot speak (`bot.text`) is built from that
//!   tool's result. The agent sees `call.started` with the route, the caller
//!   and the metadata, the caller's speech and transcripts, and `call.ended`.
//! - a caller who talks over a slow agent tool: the result that arrives
//!   after the barge-in is never spoken (no `bot.text` carries it) and
//!   `/metrics` counts it as late; the next turn is answered from a fresh
//!   call of the tool.
//!
//! The agent here is a plain websocket server written against
//! docs/AGENT_PROTOCOL.md, as an agent in another language would be.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use base64::Engine as _;
use brisvox_audio::g711;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::tungstenite::Message;

/// The binary on `agent_toml`, and the directory of its agent file.
struct Server {
    binary: common::Binary,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Server {
    type Target = common::Binary;
    fn deref(&self) -> &common::Binary {
        &self.binary
    }
}

fn start_server(agent_toml: &str) -> Server {
    let dir = tempfile::tempdir().expect("a temp dir");
    let binary = common::Binary::start(dir.path(), agent_toml, &[("ORDERS_TOKEN", "s3cret")]);
    Server { binary, _dir: dir }
}

/// The webhook tool's server: `/orders` answers with the order's status.
async fn webhook_server() -> String {
    let app = Router::new().route(
        "/orders",
        post(|| async { axum::Json(json!({"status": "shipped"})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A test agent: declares `opening_hours` (answered at once) and
/// `slow_lookup` (its first call answered `"STALE"` when the test releases
/// it, later ones `"FRESH"` at once); every event it receives goes to
/// `events`.
struct TestAgent {
    url: String,
    events: mpsc::UnboundedReceiver<Value>,
    release: Arc<Notify>,
    /// Every event seen so far, in order.
    seen: Vec<Value>,
}

impl TestAgent {
    async fn start() -> TestAgent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let (tx, events) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let gate = Arc::clone(&release);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
                tokio::spawn(serve_agent(ws, tx.clone(), Arc::clone(&gate)));
            }
        });
        TestAgent {
            url,
            events,
            release,
            seen: Vec::new(),
        }
    }

    /// Waits for an event for which `want` holds (at most [`common::WAIT`]
    /// overall), while `tick` keeps the caller's side going.
    async fn until<F>(&mut self, want: impl Fn(&Value) -> bool, tick: &mut F) -> Value
    where
        F: AsyncFnMut(),
    {
        let deadline = tokio::time::Instant::now() + common::WAIT;
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

    fn bot_text(&self) -> String {
        self.seen
            .iter()
            .filter(|e| e["type"] == "bot.text")
            .map(|e| e["text"].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

type AgentWs = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn serve_agent(ws: AgentWs, events: mpsc::UnboundedSender<Value>, release: Arc<Notify>) {
    let (mut write, mut read) = ws.split();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        while let Some(command) = out_rx.recv().await {
            if write
                .send(Message::text(command.to_string()))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    // The first `slow_lookup` waits for the test; later ones answer at once.
    let mut slow_seen = false;
    while let Some(Ok(msg)) = read.next().await {
        let Message::Text(text) = msg else { continue };
        let event: Value = serde_json::from_str(&text).expect("events are JSON");
        let id = event["id"].clone();
        match (event["type"].as_str(), event["name"].as_str()) {
            (Some("call.started"), _) => {
                let tools = json!([
                    {"name": "opening_hours", "description": "Opening hours.",
                     "parameters": {"type": "object", "properties": {}}},
                    {"name": "slow_lookup", "description": "A slow lookup.",
                     "parameters": {"type": "object", "properties": {}}},
                ]);
                let _ = out_tx.send(json!({"type": "tools.set", "re": id, "tools": tools}));
            }
            (Some("tool.call"), Some("opening_hours")) => {
                let result =
                    json!({"type": "tool.result", "re": id, "result": {"hours": "9 to 5"}});
                let _ = out_tx.send(result);
            }
            (Some("tool.call"), Some("slow_lookup")) if !slow_seen => {
                slow_seen = true;
                let (out, release) = (out_tx.clone(), Arc::clone(&release));
                tokio::spawn(async move {
                    release.notified().await;
                    let _ = out.send(json!({"type": "tool.result", "re": id, "result": "STALE"}));
                });
            }
            (Some("tool.call"), Some("slow_lookup")) => {
                let _ = out_tx.send(json!({"type": "tool.result", "re": id, "result": "FRESH"}));
            }
            _ => {}
        }
        let _ = events.send(event);
    }
}

fn agent_file(agent_url: &str, webhook_base: &str, rules: &str) -> String {
    format!(
        r#"greeting = ""
[vad]
detector = "energy"
min_silence_ms = 100
[turn]
analyzer = "always_complete"
[llm.mock]
first_token_ms = 20
token_interval_ms = 5
tool_result_answer = "Result {{result}}"
tool_calls = [{rules}]
[tts.mock]
first_byte_ms = 20
[agent_link]
url = "{agent_url}"
[[tools]]
name = "order_status"
description = "The status of an order."
parameters = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }} }}
webhook = {{ url = "{webhook_base}/orders", headers = {{ Authorization = "Bearer ${{ORDERS_TOKEN}}" }} }}
"#
    )
}

const TWO_TOOLS: &str = r#"{ when_heard = "mock transcript 1", tool = "order_status", arguments = '{"order_id":"42"}' }, { when_heard = "mock transcript 2", tool = "opening_hours" }"#;

/// A caller's side: sends one 20 ms frame per tick (speech while `loud`),
/// reading whatever the server sends back.
struct Caller {
    ws: common::Ws,
    frame: Box<dyn Fn(usize, bool) -> Message + Send>,
    n: usize,
    loud_until: usize,
}

impl Caller {
    /// Speaks for 600 ms from the next frame on.
    fn speak(&mut self) {
        self.loud_until = self.n + 30;
    }

    async fn tick(&mut self) {
        let msg = (self.frame)(self.n, self.n < self.loud_until);
        self.n += 1;
        self.ws.send(msg).await.expect("send audio");
        let until = tokio::time::Instant::now() + Duration::from_millis(20);
        while let Ok(Some(msg)) = tokio::time::timeout_at(until, self.ws.next()).await {
            msg.expect("the call stays open");
        }
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

async fn call_caller(addr: SocketAddr) -> Caller {
    let mut ws = common::connect(addr, "/call").await;
    let start = json!({"type": "start", "protocol_version": 1, "codec": "pcm16",
        "sample_rate": 16000, "call_id": "e2e-call",
        "metadata": {"caller": "+15550100", "customer": "7"}});
    common::send_text(&mut ws, &start.to_string()).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
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

async fn twilio_caller(addr: SocketAddr) -> Caller {
    let mut ws = common::connect(addr, "/twilio").await;
    let sid = "MZ00000000000000000000000000000002";
    let connected = json!({"event": "connected", "protocol": "Call", "version": "1.0.0"});
    common::send_text(&mut ws, &connected.to_string()).await;
    let start = json!({
        "event": "start", "sequenceNumber": "1", "streamSid": sid,
        "start": {
            "streamSid": sid, "accountSid": "AC0", "callSid": "CA-e2e",
            "tracks": ["inbound"], "customParameters": {"caller": "+15550199"},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        }
    });
    common::send_text(&mut ws, &start.to_string()).await;
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

fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == kind
}

fn bot_says(part: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "bot.text" && e["text"].as_str().is_some_and(|t| t.contains(part))
}

/// Two turns: the webhook tool answers the first, the agent's tool the second.
async fn two_tool_turns(agent: &mut TestAgent, caller: &mut Caller, route: &str, who: &str) {
    let mut tick = async || caller.tick().await;
    let started = agent.until(is("call.started"), &mut tick).await;
    assert_eq!(started["route"], route, "{started}");
    assert_eq!(started["caller"], who, "{started}");
    assert_eq!(started["protocol"], 1);
    assert_eq!(started["resumed"], false);
    caller.speak();
    let mut tick = async || caller.tick().await;
    agent.until(is("user.started_speaking"), &mut tick).await;
    agent.until(is("user.stopped_speaking"), &mut tick).await;
    let heard = agent.until(is("user.transcript"), &mut tick).await;
    assert_eq!(heard["text"], "mock transcript 1");
    agent.until(bot_says("shipped"), &mut tick).await;
    assert_eq!(agent.bot_text(), r#"Result {"status":"shipped"}"#);
    agent.until(is("bot.stopped_speaking"), &mut tick).await;
    agent.until(is("turn.metrics"), &mut tick).await;

    caller.speak();
    let mut tick = async || caller.tick().await;
    let call = agent.until(is("tool.call"), &mut tick).await;
    assert_eq!(call["name"], "opening_hours", "{call}");
    assert_eq!(call["arguments"], json!({}));
    let answer = agent.until(bot_says("9 to 5"), &mut tick).await;
    assert_eq!(answer["text"], r#"Result {"hours":"9 to 5"}"#);
    assert!(
        !agent
            .seen
            .iter()
            .any(|e| e["type"] == "tool.call" && e["name"] == "order_status"),
        "the webhook's calls are not the agent's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_call_uses_a_webhook_and_an_agent_tool() {
    let mut agent = TestAgent::start().await;
    let server = start_server(&agent_file(&agent.url, &webhook_server().await, TWO_TOOLS));
    let mut caller = call_caller(server.addr).await;
    two_tool_turns(&mut agent, &mut caller, "call", "+15550100").await;
    let started = &agent.seen[0];
    assert_eq!(
        started["metadata"],
        json!({"caller": "+15550100", "customer": "7"})
    );
    common::send_text(&mut caller.ws, r#"{"type":"end"}"#).await;
    let mut idle = async || tokio::task::yield_now().await;
    let ended = agent.until(is("call.ended"), &mut idle).await;
    assert_eq!(ended["reason"], "hangup");
    let metrics = common::wait_metric(server.addr, "brisvox_agent_link_connects_total 1").await;
    for want in [
        "brisvox_tool_calls_total{outcome=\"ok\",tool=\"order_status\"} 1",
        "brisvox_tool_calls_total{outcome=\"ok\",tool=\"opening_hours\"} 1",
        "brisvox_agent_link_tool_results_total 1",
    ] {
        assert!(metrics.contains(want), "{want} missing in\n{metrics}");
    }
    let hops = metrics
        .lines()
        .find_map(|l| l.strip_prefix("brisvox_agent_link_hop_seconds_count "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("the hop count");
    assert!(hops >= 2, "tools.set and tool.result answer events: {hops}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_twilio_uses_a_webhook_and_an_agent_tool() {
    let mut agent = TestAgent::start().await;
    let server = start_server(&agent_file(&agent.url, &webhook_server().await, TWO_TOOLS));
    let mut caller = twilio_caller(server.addr).await;
    two_tool_turns(&mut agent, &mut caller, "twilio", "+15550199").await;
    assert_eq!(agent.seen[0]["call_id"], "CA-e2e");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barge_in_during_a_slow_agent_tool_speaks_no_stale_answer() {
    let mut agent = TestAgent::start().await;
    let rules = r#"{ when_heard = "mock transcript 1", tool = "slow_lookup" }"#;
    let server = start_server(&agent_file(&agent.url, &webhook_server().await, rules));
    let mut caller = call_caller(server.addr).await;
    caller.speak();
    let mut tick = async || caller.tick().await;
    let call = agent.until(is("tool.call"), &mut tick).await;
    assert_eq!(call["name"], "slow_lookup");
    // The caller talks while the tool runs; its result comes after that.
    caller.speak();
    let mut tick = async || caller.tick().await;
    agent.until(is("user.started_speaking"), &mut tick).await;
    let second = agent
        .until(
            |e| {
                e["type"] == "user.transcript"
                    && e["final"] == true
                    && e["text"] == "mock transcript 2"
            },
            &mut tick,
        )
        .await;
    assert_eq!(second["text"], "mock transcript 2");
    agent.release.notify_one();
    // The new turn (whose words still hold the first: it was never
    // answered) calls the tool again and is answered from the fresh result.
    let fresh = agent.until(bot_says("FRESH"), &mut tick).await;
    assert_eq!(fresh["text"], r#"Result "FRESH""#);
    agent.until(is("bot.stopped_speaking"), &mut tick).await;
    common::wait_metric(
        server.addr,
        "brisvox_tool_calls_total{outcome=\"late\",tool=\"slow_lookup\"} 1",
    )
    .await;
    assert!(
        !agent.bot_text().contains("STALE"),
        "a stale answer was spoken: {}",
        agent.bot_text()
    );
}
