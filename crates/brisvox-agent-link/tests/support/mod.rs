//! A reference agent in Rust for the link's tests: a websocket server on
//! 127.0.0.1 that answers events by a rule, over real sockets.

#![allow(dead_code, unreachable_pub)]

use brisvox_agent_link::Event;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the reference agent does with one event: the commands to send.
pub type Rule = fn(&Value) -> Vec<Value>;

/// Starts an agent that serves connections one after another with `rule`,
/// closing its first connection after `close_after` events when given. Returns its
/// URL and a receiver of every event it read.
pub async fn reference_agent(
    rule: Rule,
    close_after: Option<usize>,
) -> (String, mpsc::UnboundedReceiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let (seen_tx, seen) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut close_after = close_after;
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                continue;
            };
            let mut read = 0;
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(text) = msg else { continue };
                let event: Value = serde_json::from_str(text.as_str()).unwrap();
                let _ = seen_tx.send(event.clone());
                for command in rule(&event) {
                    if ws.send(Message::text(command.to_string())).await.is_err() {
                        break;
                    }
                }
                read += 1;
                if close_after == Some(read) {
                    close_after = None;
                    let _ = ws.close(None).await;
                    break;
                }
            }
        }
    });
    (url, seen)
}

/// Answers every `user.transcript` with a `say` naming it.
pub fn say_to_transcripts(event: &Value) -> Vec<Value> {
    match event["type"].as_str() {
        Some("user.transcript") => vec![json!({"type": "say", "re": event["id"], "text": "ok"})],
        _ => vec![],
    }
}

/// A call's first event.
pub fn started() -> Event {
    Event::CallStarted {
        protocol: 1,
        call_id: "c-test".into(),
        route: "call".into(),
        caller: None,
        metadata: json!({}),
        resumed: false,
    }
}
