//! The real `brisvox serve` binary with an agent link and Twilio's REST API
//! pointed at a local fake of it (mock providers, the energy VAD: no model
//! files), over real sockets:
//!
//! - on `/twilio`, the agent answers `call.started` with a `call.transfer`
//!   naming a bad target (refused by an `error` event naming its `re`; the
//!   call goes on) and then one naming the agent file's destination `sales`
//!   with a `say`: the say is spoken, the carrier's REST API is asked to
//!   `<Dial>` the destination's number on the call's SID, and the agent sees
//!   `call.ended` with `reason: "transferred"`;
//! - on `/call` (no carrier to transfer through) a `call.transfer` is
//!   refused by an `error` event naming its `re`, and the call goes on.
//!
//! The agent is a plain websocket server sending raw JSON written against
//! docs/AGENT_PROTOCOL.md.

mod common;

use common::agent_link::{Reply, TestAgent, bot_says, call_caller, is, twilio_caller};
use common::rest::fake_api;
use serde_json::{Value, json};

fn agent_toml(agent_url: &str, api_base: &str) -> String {
    let telephony = format!(
        r#"[telephony.twilio]
account_sid = "AC0123"
auth_token = "${{TW}}"
validate_signature = false
api_base = "{api_base}"
[telephony.transfer]
destinations = [{{ name = "sales", to = "+15550100", description = "New orders." }}]
"#
    );
    common::agent_link::agent_file("", "", agent_url, &telephony)
}

/// On `call.started`: a bad transfer, then one to `sales` after a say.
fn script() -> common::agent_link::Script {
    Box::new(|event: &Value, reply: &Reply| {
        if event["type"] != "call.started" {
            return;
        }
        reply.send(json!({"type": "call.transfer", "re": 901, "to": "the moon"}));
        reply.send(
            json!({"type": "call.transfer", "re": event["id"], "to": "sales",
                          "say": "Let me put you through to sales."}),
        );
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_hands_a_twilio_call_to_a_destination_after_its_say() {
    let mut api = fake_api(200).await;
    let mut agent = TestAgent::start(script).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let toml = agent_toml(&agent.url, &api.base());
    let server = common::Binary::start(dir.path(), &toml, &[("TW", "tok-TW")]);
    let mut caller = twilio_caller(server.addr).await;
    // The server closes the stream once the call is transferred.
    let mut tick = async || {
        caller.step().await;
    };
    let refused = agent.until(is("error"), &mut tick).await;
    assert_eq!(refused["re"], 901, "{refused}");
    agent
        .until(bot_says("put you through to sales"), &mut tick)
        .await;
    let ended = agent.until(is("call.ended"), &mut tick).await;
    assert_eq!(ended["reason"], "transferred", "{ended}");
    let request = api.next().await;
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.path,
        "/2010-04-01/Accounts/AC0123/Calls/CA-e2e.json"
    );
    assert!(
        request
            .body_text()
            .contains("%3CDial%3E%2B15550100%3C%2FDial%3E"),
        "{}",
        request.body_text()
    );
    common::wait_metric(
        server.addr,
        "brisvox_calls_total{outcome=\"transferred\"} 1",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_on_a_call_without_a_carrier_is_refused_and_the_call_goes_on() {
    let api = fake_api(200).await;
    let mut agent = TestAgent::start(script).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let toml = agent_toml(&agent.url, &api.base());
    let server = common::Binary::start(dir.path(), &toml, &[("TW", "tok-TW")]);
    let mut caller = call_caller(server.addr).await;
    let mut tick = async || caller.tick().await;
    let started = agent.until(is("call.started"), &mut tick).await;
    let first = agent.until(is("error"), &mut tick).await;
    assert_eq!(first["re"], 901, "{first}");
    let second = agent.until(is("error"), &mut tick).await;
    assert_eq!(second["re"], started["id"], "{second}");
    assert!(
        second["message"]
            .as_str()
            .is_some_and(|m| m.contains("phone call")),
        "{second}"
    );
    // The call goes on: the caller's turn is answered.
    caller.speak();
    let mut tick = async || caller.tick().await;
    agent.until(is("bot.stopped_speaking"), &mut tick).await;
    common::send_text(&mut caller.ws, r#"{"type":"end"}"#).await;
    let mut idle = async || tokio::task::yield_now().await;
    let ended = agent.until(is("call.ended"), &mut idle).await;
    assert_eq!(ended["reason"], "hangup");
}
