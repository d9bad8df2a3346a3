//! When the engine ends a call (here its idle guard: a prompt after 1 s of
//! silence, the end 1 s after the prompt), the route closes it cleanly: on
//! /call the prompt is heard, then `end` `completed` and close 1000; on
//! /twilio the stream is closed with 1000 (Twilio goes on with its TwiML).

mod common;

use std::time::{Duration, Instant};

use common::{send_text, until_event};

const IDLE: &str =
    "[limits]\nidle_prompt_after_s = 1\nidle_end_after_s = 2\nidle_prompt = \"Are you there?\"\n";

#[tokio::test]
async fn on_the_brisvox_protocol() {
    let srv = common::engine_server("", IDLE, None).await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    send_text(&mut ws, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    let (_, audible) = until_event(&mut ws, "bot_speaking_stopped").await;
    assert!(audible > 10, "the prompt is heard: {audible} frames");
    let (events, code) = common::until_close(&mut ws).await;
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(code, Some(1000));
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"completed\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn on_twilio() {
    let srv = common::engine_server("", IDLE, None).await;
    let mut ws = common::connect(srv.local_addr(), "/twilio").await;
    let doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../brisvox-transport/tests/fixtures/twilio_session.json"
    ))
    .unwrap();
    // `connected` and `start` only: the caller stays silent.
    let t0 = Instant::now();
    send_text(&mut ws, &doc["messages"][0].to_string()).await;
    send_text(&mut ws, &doc["messages"][1].to_string()).await;
    let (events, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());
    let media = events.iter().filter(|e| e["event"] == "media").count();
    assert!(media > 10, "the prompt was sent: {media} media messages");
    srv.drain(Duration::from_millis(100)).await;
}
