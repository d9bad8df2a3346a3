//! The engine sees what the routes decode: the metadata of /call's `start`
//! and of Twilio's `customParameters` (the engine's `call_started` event and
//! call context), and DTMF keys from a /call `dtmf` message or a Twilio `dtmf`
//! (an engine event; on /call the client also gets `dtmf` back).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisvox_engine::{EngineEvent, EventObserver};
use common::send_text;

/// Every engine event of every call, as a consumer beside the route sees it.
#[derive(Default)]
struct Recorder(Mutex<Vec<EngineEvent>>);

impl EventObserver for Recorder {
    fn observe(&self, event: &EngineEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Recorder {
    fn started_metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                EngineEvent::CallStarted { metadata, .. } => Some(metadata.clone()),
                _ => None,
            })
            .expect("call_started")
    }

    fn digits(&self) -> Vec<char> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                EngineEvent::Dtmf { digit } => Some(digit.as_char()),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn on_the_brisvox_protocol() {
    let rec = Arc::new(Recorder::default());
    let srv = common::engine_server("", "", Some(rec.clone())).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    let start = common::START_PCM16.replace(
        r#""call_id":"t1""#,
        r#""call_id":"t1","metadata":{"caller":"+15550100","campaign":7}"#,
    );
    send_text(&mut ws, &start).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    send_text(&mut ws, r#"{"type":"dtmf","digit":"5"}"#).await;
    let ev = common::next_event(&mut ws).await;
    assert_eq!(
        (ev["type"].as_str(), ev["digit"].as_str()),
        (Some("dtmf"), Some("5"))
    );
    send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    let metadata = rec.started_metadata();
    assert_eq!(metadata["caller"], "+15550100");
    assert_eq!(metadata["campaign"], 7);
    assert_eq!(rec.digits(), ['5']);
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn on_twilio() {
    let rec = Arc::new(Recorder::default());
    let srv = common::engine_server("", "", Some(rec.clone())).await;
    let mut ws = common::connect(srv.local_addr(), "/twilio").await;
    let doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../brisvox-transport/tests/fixtures/twilio_session.json"
    ))
    .unwrap();
    for m in doc["messages"].as_array().unwrap() {
        send_text(&mut ws, &m.to_string()).await;
    }
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    let metadata = rec.started_metadata();
    assert_eq!(metadata["agent"], "support");
    assert_eq!(rec.digits(), ['7']);
    srv.drain(Duration::from_millis(100)).await;
}
