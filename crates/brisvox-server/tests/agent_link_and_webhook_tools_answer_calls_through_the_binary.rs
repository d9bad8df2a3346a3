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

use std::sync::Arc;

use axum::Router;
use axum::routing::post;
use common::agent_link::{
    Caller, Reply, TestAgent, bot_says, call_caller, is, tools_set, twilio_caller,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

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
/// `slow_lookup` (its first call answered `"STALE"` when `release` is
/// notified, later ones `"FRESH"` at once).
async fn test_agent(release: Arc<Notify>) -> TestAgent {
    TestAgent::start(move || {
        let release = Arc::clone(&release);
        let mut slow_seen = false;
        Box::new(move |event: &Value, reply: &Reply| {
            let id = event["id"].clone();
            match (event["type"].as_str(), event["name"].as_str()) {
                (Some("call.started"), _) => {
                    reply.send(tools_set(event, &["opening_hours", "slow_lookup"]));
                }
                (Some("tool.call"), Some("opening_hours")) => {
                    reply.send(
                        json!({"type": "tool.result", "re": id, "result": {"hours": "9 to 5"}}),
                    );
                }
                (Some("tool.call"), Some("slow_lookup")) if !slow_seen => {
                    slow_seen = true;
                    let (reply, release) = (reply.clone(), Arc::clone(&release));
                    tokio::spawn(async move {
                        release.notified().await;
                        reply.send(json!({"type": "tool.result", "re": id, "result": "STALE"}));
                    });
                }
                (Some("tool.call"), Some("slow_lookup")) => {
                    reply.send(json!({"type": "tool.result", "re": id, "result": "FRESH"}));
                }
                _ => {}
            }
        })
    })
    .await
}

fn agent_file(agent_url: &str, webhook_base: &str, rules: &str) -> String {
    let llm_mock = format!("tool_result_answer = \"Result {{result}}\"\ntool_calls = [{rules}]");
    let tools = format!(
        r#"[[tools]]
name = "order_status"
description = "The status of an order."
parameters = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }} }}
webhook = {{ url = "{webhook_base}/orders", headers = {{ Authorization = "Bearer ${{ORDERS_TOKEN}}" }} }}
"#
    );
    common::agent_link::agent_file("", &llm_mock, agent_url, &tools)
}

const TWO_TOOLS: &str = r#"{ when_heard = "mock transcript 1", tool = "order_status", arguments = '{"order_id":"42"}' }, { when_heard = "mock transcript 2", tool = "opening_hours" }"#;

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
    let mut agent = test_agent(Arc::default()).await;
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
    let mut agent = test_agent(Arc::default()).await;
    let server = start_server(&agent_file(&agent.url, &webhook_server().await, TWO_TOOLS));
    let mut caller = twilio_caller(server.addr).await;
    two_tool_turns(&mut agent, &mut caller, "twilio", "+15550199").await;
    assert_eq!(agent.seen[0]["call_id"], "CA-e2e");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barge_in_during_a_slow_agent_tool_speaks_no_stale_answer() {
    let release = Arc::new(Notify::new());
    let mut agent = test_agent(Arc::clone(&release)).await;
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
    release.notify_one();
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
