//! The real `brisvox serve` binary with an agent link (mock providers whose
//! answer echoes the context it was sent, the energy VAD: no model files),
//! over real sockets: the agent answers `call.started` with a
//! `context.update` (a new system prompt and an appended message) and a
//! `respond`, and the bot speaks at once, without a caller turn, an answer
//! built over that context; the caller's next turn is answered over it too.
//! Bad commands (unknown type, unknown field, not JSON) get an `error`
//! event naming their `re`, and the call goes on.
//!
//! The agent is a plain websocket server sending raw JSON written against
//! docs/AGENT_PROTOCOL.md.

mod common;

use common::agent_link::{Reply, TestAgent, bot_says, call_caller, is};
use serde_json::{Value, json};

/// On `call.started`: bad commands, then the context update and `respond`.
fn script() -> common::agent_link::Script {
    Box::new(|event: &Value, reply: &Reply| {
        if event["type"] != "call.started" {
            return;
        }
        let id = &event["id"];
        reply.send(json!({"type": "sya", "re": 901, "text": "typo"}));
        reply.send(json!({"type": "say", "re": 902, "text": "x", "loud": true}));
        reply.send_raw("not json");
        reply.send(json!({"type": "context.update", "re": id,
            "system_prompt": "You are the front desk of Hotel Brisvox.",
            "messages": {"mode": "append",
                         "items": [{"role": "user", "content": "Guest is Ada Lovelace."}]}}));
        reply.send(json!({"type": "respond", "re": id}));
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_update_then_respond_is_answered_at_once_over_the_new_context() {
    let mut agent = TestAgent::start(script).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let toml = common::agent_link::agent_file(
        r#"prompt = "You are a plain agent.""#,
        r#"answer = "Prompt: {system} Last: {last}""#,
        &agent.url,
        "",
    );
    let server = common::Binary::start(dir.path(), &toml, &[]);
    let mut caller = call_caller(server.addr).await;
    let mut tick = async || caller.tick().await;

    // The answer to `respond`, with no caller turn: the new prompt and the
    // appended message reached the model, and the call's prompt did not.
    agent.until(bot_says("Ada Lovelace."), &mut tick).await;
    let said = agent.bot_text();
    assert!(
        said.contains("Prompt: You are the front desk of Hotel Brisvox.")
            && said.contains("Last: Guest is Ada Lovelace."),
        "{said}"
    );
    assert!(!said.contains("plain agent"), "{said}");
    assert!(
        !agent.seen.iter().any(|e| e["type"] == "user.transcript"),
        "the caller said nothing"
    );
    let errors: Vec<&Value> = agent.seen.iter().filter(|e| e["type"] == "error").collect();
    let re: Vec<&Value> = errors.iter().map(|e| &e["re"]).collect();
    assert_eq!(re, [&json!(901), &json!(902), &Value::Null], "{errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("sya")),
        "{errors:#?}"
    );
    assert!(
        errors[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("loud")),
        "{errors:#?}"
    );
    agent.until(is("bot.stopped_speaking"), &mut tick).await;

    // The caller's turn is answered over the same context.
    caller.speak();
    let mut tick = async || caller.tick().await;
    agent.until(bot_says("mock transcript 1"), &mut tick).await;
    assert!(
        agent
            .bot_text()
            .contains("Prompt: You are the front desk of Hotel Brisvox. Last: mock transcript 1"),
        "{}",
        agent.bot_text()
    );
    common::send_text(&mut caller.ws, r#"{"type":"end"}"#).await;
    let mut idle = async || tokio::task::yield_now().await;
    let ended = agent.until(is("call.ended"), &mut idle).await;
    assert_eq!(ended["reason"], "hangup");
    common::wait_metric(server.addr, "brisvox_agent_link_commands_refused_total 3").await;
}
