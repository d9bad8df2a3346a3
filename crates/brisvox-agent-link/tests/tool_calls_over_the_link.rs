//! A tool call goes to the agent as `tool.call` and its `tool.result` comes
//! back to the caller of `call_tool`; an agent's error is an `Err`; a link to
//! no agent at all answers a tool call with an error at once instead of
//! waiting (real sockets on 127.0.0.1).

mod support;

use std::time::Duration;

use brisvox_agent_link::{AgentLink, AgentLinkConfig};
use serde_json::{Value, json};
use support::{reference_agent, started};

fn answer_tools(event: &Value) -> Vec<Value> {
    if event["type"] != "tool.call" {
        return vec![];
    }
    let reply = match event["arguments"]["order_id"].as_str() {
        Some("42") => {
            json!({"type": "tool.result", "re": event["id"], "result": {"status": "shipped"}})
        }
        _ => json!({"type": "tool.result", "re": event["id"], "error": "no such order"}),
    };
    vec![reply]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_and_errors_come_back_to_the_call() {
    let (url, mut seen) = reference_agent(answer_tools, None).await;
    let (link, _commands, task) = AgentLink::start(AgentLinkConfig::new(url), started());
    // The agent has read call.started: the link is connected.
    let first = tokio::time::timeout(Duration::from_secs(10), seen.recv()).await;
    assert_eq!(first.unwrap().unwrap()["type"], "call.started");
    let ok = link
        .call_tool(1, "call_1", "order_status", r#"{"order_id":"42"}"#)
        .await;
    assert_eq!(ok, Ok(json!({"status": "shipped"})));
    let err = link
        .call_tool(1, "call_2", "order_status", r#"{"order_id":"7"}"#)
        .await;
    assert_eq!(err, Err("no such order".to_owned()));
    link.end("hangup");
    assert_eq!(task.await.unwrap().tool_results, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_means_an_error_result_at_once() {
    // A port with nothing listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    drop(listener);
    let (link, _commands, task) = AgentLink::start(AgentLinkConfig::new(url), started());
    let outcome = tokio::time::timeout(
        Duration::from_secs(1),
        link.call_tool(1, "call_1", "order_status", "{}"),
    )
    .await
    .expect("answered without waiting for the agent");
    assert!(outcome.unwrap_err().contains("not connected"));
    link.end("hangup");
    assert_eq!(task.await.unwrap().tool_calls_failed_by_link, 1);
}
