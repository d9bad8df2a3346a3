//! The edge's `clear` (barge-in) reaches the client: a `clear` event on /call,
//! a Twilio `clear` on /twilio; frames handed over before it are never sent
//! after it.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::{CallEnd, CallSink, CallSource};
use brisvox_server::handler::{CallFuture, CallHandler, CallStart, RouteEdge};
use common::{Seen, send_text};
use tokio::sync::Notify;

/// Speaks 5 frames, waits until the client has them (the test opens
/// `written`), speaks 3 more and clears at once (those 3 may still be queued:
/// they must then be dropped), speaks 2 frames of the next answer, then waits
/// for the caller to go.
#[derive(Default)]
struct SpeakThenClear {
    written: Arc<Notify>,
}

impl CallHandler for SpeakThenClear {
    fn run_call(&self, start: CallStart, mut edge: RouteEdge) -> CallFuture {
        let written = Arc::clone(&self.written);
        Box::pin(async move {
            let rate = start.output_sample_rate_hz;
            let tone =
                |v: i16| AudioFrame::from_samples(&vec![v; rate as usize / 50], rate).unwrap();
            let (old, new) = (Epoch(1), Epoch(2));
            for _ in 0..5 {
                edge.sink.send_audio(old, tone(1000)).await.unwrap();
            }
            written.notified().await;
            for _ in 0..3 {
                edge.sink.send_audio(old, tone(1000)).await.unwrap();
            }
            edge.sink.clear(new).await;
            for _ in 0..2 {
                edge.sink.send_audio(new, tone(-1000)).await.unwrap();
            }
            while edge.source.recv().await.is_some() {}
            Ok(CallEnd::Hangup)
        })
    }
}

#[tokio::test]
async fn clear_on_the_brisvox_protocol() {
    let handler = Arc::new(SpeakThenClear::default());
    let srv = common::server_with("", handler.clone()).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    send_text(&mut ws, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    let mut seen = Vec::new();
    while seen.iter().filter(|s| **s == "-").count() < 2 {
        match common::next(&mut ws).await {
            Seen::Audio(a) => {
                seen.push(if i16::from_le_bytes([a[0], a[1]]) > 0 {
                    "+"
                } else {
                    "-"
                });
                if seen == ["+"; 5] {
                    handler.written.notify_one();
                }
            }
            Seen::Event(e) => seen.push(if e["type"] == "clear" { "clear" } else { "?" }),
            Seen::Closed(c) => panic!("closed {c:?} after {seen:?}"),
        }
    }
    let clear_at = seen
        .iter()
        .position(|s| *s == "clear")
        .expect("a clear event");
    assert!(seen[..clear_at].iter().all(|s| *s == "+"), "{seen:?}");
    assert!(
        (5..=8).contains(&clear_at),
        "the early frames play: {seen:?}"
    );
    assert_eq!(
        &seen[clear_at + 1..],
        ["-", "-"],
        "only post-clear audio after the clear"
    );
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn clear_on_twilio() {
    let handler = Arc::new(SpeakThenClear::default());
    let srv = common::server_with("", handler.clone()).await;
    let mut ws = common::connect(srv.local_addr(), "/twilio").await;
    let doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../brisvox-transport/tests/fixtures/twilio_session.json"
    ))
    .unwrap();
    send_text(&mut ws, &doc["messages"][0].to_string()).await;
    send_text(&mut ws, &doc["messages"][1].to_string()).await;
    let mut kinds = Vec::new();
    while !kinds.contains(&"clear".to_owned()) {
        let Seen::Event(ev) = common::next(&mut ws).await else {
            panic!("text only")
        };
        kinds.push(ev["event"].as_str().unwrap().to_owned());
        if ev["event"] == "media" && kinds.iter().filter(|k| *k == "media").count() == 5 {
            handler.written.notify_one();
        }
    }
    assert!(
        kinds.iter().filter(|k| *k == "media").count() == 5,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"mark".to_owned()), "{kinds:?}");
    let Seen::Event(ev) = common::next(&mut ws).await else {
        panic!("text only")
    };
    assert_eq!(
        ev["event"], "media",
        "audio after the clear is the next answer"
    );
    srv.drain(Duration::from_millis(100)).await;
}
