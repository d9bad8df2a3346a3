//! Bad input on /call gets a clear `error` event, `end`, and a close code; the
//! server keeps serving and counts the call as a protocol error.

mod common;

use common::{START_PCM16, send_binary, send_text, until_close};

async fn expect_error(
    addr: std::net::SocketAddr,
    steps: &[Result<&str, Vec<u8>>],
    code: &str,
    close: u16,
) {
    let mut ws = common::connect(addr, "/call").await;
    for step in steps {
        match step {
            Ok(t) => send_text(&mut ws, t).await,
            Err(b) => send_binary(&mut ws, b.clone()).await,
        }
    }
    let (events, closed) = until_close(&mut ws).await;
    let error = events
        .iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("no error event for {code}: {events:?}"));
    assert_eq!(error["code"], code, "{events:?}");
    assert!(!error["message"].as_str().unwrap().is_empty());
    assert_eq!(events.last().unwrap()["type"], "end", "{events:?}");
    assert_eq!(closed, Some(close), "{code}");
}

#[tokio::test]
async fn every_kind_of_bad_input() {
    let srv = common::server().await;
    let addr = srv.local_addr();
    expect_error(
        addr,
        &[Ok("{\"type\": \"start\", ")],
        "malformed_json",
        1002,
    )
    .await;
    let opus = START_PCM16.replace("pcm16", "opus");
    expect_error(addr, &[Ok(&opus)], "unsupported_codec", 1003).await;
    let rate = START_PCM16.replace("16000", "44100");
    expect_error(addr, &[Ok(&rate)], "unsupported_sample_rate", 1003).await;
    expect_error(addr, &[Err(vec![0; 640])], "audio_before_start", 1002).await;
    expect_error(
        addr,
        &[Ok(START_PCM16), Err(vec![0; 48_001])],
        "message_too_large",
        1009,
    )
    .await;
    expect_error(
        addr,
        &[Ok(START_PCM16), Ok("\u{1}\u{2}\u{3}not-json")],
        "text_where_audio_belongs",
        1003,
    )
    .await;
    expect_error(
        addr,
        &[Ok(START_PCM16), Ok(START_PCM16)],
        "second_start",
        1002,
    )
    .await;

    let body = common::wait_metric(addr, "brisvox_calls_total{outcome=\"protocol_error\"} 7").await;
    assert!(body.contains("brisvox_active_calls 0"), "{body}");
    assert_eq!(common::get(addr, "/healthz").await.0, 200);
    srv.drain(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn an_unknown_type_is_reported_and_the_call_goes_on() {
    let srv = common::server().await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    send_text(&mut ws, START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    send_text(&mut ws, r#"{"type":"dance"}"#).await;
    let ev = common::next_event(&mut ws).await;
    assert_eq!(
        (ev["type"].as_str(), ev["code"].as_str()),
        (Some("error"), Some("unknown_type"))
    );
    send_text(&mut ws, r#"{"type":"say","text":"still here"}"#).await;
    let ev = common::next_event(&mut ws).await;
    assert_eq!(ev["text"], "still here");
    srv.drain(std::time::Duration::from_secs(1)).await;
}
