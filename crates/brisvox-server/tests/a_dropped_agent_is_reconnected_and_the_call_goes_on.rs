//! The real `brisvox serve` binary with an agent link (mock providers, the
//! energy VAD: no model files), over real sockets: the agent drops its
//! socket in the middle of the call (no close handshake, as a crashed
//! process would). The call goes on without it (the caller's turn is
//! answered from the agent file's defaults), the server reconnects, the new
//! connection starts with `call.started` `resumed: true` followed by the
//! events that waited, and the next tool call of the model reaches the
//! agent on the new connection and answers the caller.
//!
//! The agent is a plain websocket server sending raw JSON written against
//! docs/AGENT_PROTOCOL.md.

mod common;

use common::agent_link::{Reply, TestAgent, bot_says, call_caller, is, tools_set};
use serde_json::{Value, json};

const LLM_MOCK: &str = r#"answer = "Plain answer."
tool_result_answer = "Result {result}"
tool_calls = [{ when_heard = "mock transcript 2", tool = "opening_hours" }]"#;

/// Declares `opening_hours`; the first connection drops itself at the
/// caller's first final transcript.
fn script() -> common::agent_link::Script {
    Box::new(
        |event: &Value, reply: &Reply| match event["type"].as_str() {
            Some("call.started") => reply.send(tools_set(event, &["opening_hours"])),
            Some("user.transcript") if reply.connection == 0 && event["final"] == true => {
                reply.drop_connection();
            }
            Some("tool.call") => reply.send(
                json!({"type": "tool.result", "re": event["id"], "result": {"hours": "9 to 5"}}),
            ),
            _ => {}
        },
    )
}

fn on(connection: usize, want: impl Fn(&Value) -> bool) -> impl Fn(&Value) -> bool {
    move |e| e["connection"] == connection && want(e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_goes_on_the_link_reconnects_and_the_next_tool_call_reaches_the_agent() {
    let mut agent = TestAgent::start(script).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let toml = common::agent_link::agent_file("", LLM_MOCK, &agent.url, "");
    let server = common::Binary::start(dir.path(), &toml, &[]);
    let mut caller = call_caller(server.addr).await;
    let mut tick = async || caller.tick().await;
    let first = agent.until(is("call.started"), &mut tick).await;
    assert_eq!(first["resumed"], false);

    // Turn 1: the agent drops at its final; the bot answers it anyway.
    caller.speak();
    let mut tick = async || caller.tick().await;
    agent.until(on(0, is("user.transcript")), &mut tick).await;
    let resumed = agent.until(on(1, is("call.started")), &mut tick).await;
    assert_eq!(resumed["resumed"], true, "{resumed}");
    assert_eq!(resumed["call_id"], "e2e-call");
    assert!(
        resumed["id"].as_u64() > first["id"].as_u64(),
        "a new id: {resumed}"
    );
    agent
        .until(on(1, bot_says("Plain answer.")), &mut tick)
        .await;
    agent
        .until(on(1, is("bot.stopped_speaking")), &mut tick)
        .await;

    // Turn 2: the model calls the agent's tool over the new connection.
    caller.speak();
    let mut tick = async || caller.tick().await;
    let call = agent.until(is("tool.call"), &mut tick).await;
    assert_eq!(call["connection"], 1, "{call}");
    assert_eq!(call["name"], "opening_hours");
    agent.until(bot_says("9 to 5"), &mut tick).await;

    common::send_text(&mut caller.ws, r#"{"type":"end"}"#).await;
    let mut idle = async || tokio::task::yield_now().await;
    agent.until(is("call.ended"), &mut idle).await;
    let metrics = common::wait_metric(server.addr, "brisvox_agent_link_connects_total 2").await;
    assert!(
        metrics.contains("brisvox_tool_calls_total{outcome=\"ok\",tool=\"opening_hours\"} 1"),
        "{metrics}"
    );
}
