//! The agent closes the connection after its first event: the link
//! reconnects (real sockets, real backoff), starts the new connection with
//! `call.started` marked `resumed`, and the call's events flow again.

mod support;

use std::time::Duration;

use brisvox_agent_link::{AgentLink, AgentLinkConfig, Event};
use support::{reference_agent, started};

async fn next(
    seen: &mut tokio::sync::mpsc::UnboundedReceiver<serde_json::Value>,
) -> serde_json::Value {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the agent reads an event")
        .expect("the agent runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_link_comes_back_with_call_started_resumed() {
    let (url, mut seen) = reference_agent(|_| vec![], Some(1)).await;
    let (link, _commands, task) = AgentLink::start(AgentLinkConfig::new(url), started());
    let first = next(&mut seen).await;
    assert_eq!(
        (first["type"].as_str(), first["resumed"].as_bool()),
        (Some("call.started"), Some(false))
    );
    let again = next(&mut seen).await;
    assert_eq!(
        (again["type"].as_str(), again["resumed"].as_bool()),
        (Some("call.started"), Some(true))
    );
    link.event(Event::Dtmf { digits: "5".into() });
    let dtmf = next(&mut seen).await;
    assert_eq!(dtmf["digits"], "5");
    link.end("hangup");
    let stats = task.await.unwrap();
    assert_eq!(stats.connects, 2);
}
