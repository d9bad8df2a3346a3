//! A well-formed /call session: `started` (mock labelled), audio reassembled to
//! 20 ms frames through the handler and back, `say`, and `end`.

mod common;

use common::{Seen, send_binary, send_text};

#[tokio::test]
async fn start_audio_say_end() {
    let srv = common::server().await;
    let mut ws = common::connect(srv.local_addr(), "/call").await;
    send_text(&mut ws, common::START_PCM16).await;
    let started = common::next_event(&mut ws).await;
    assert_eq!(started["type"], "started");
    assert_eq!(started["mock"], true);
    assert_eq!(started["providers"]["stt"], "mock");
    assert_eq!(started["call_id"], "t1");
    // 100 ms of a ramp in odd-sized messages.
    let pcm: Vec<u8> = (0..1600i16).flat_map(|i| (i * 7).to_le_bytes()).collect();
    for chunk in pcm.chunks(333) {
        send_binary(&mut ws, chunk.to_vec()).await;
    }
    let mut echoed = Vec::new();
    while echoed.len() < pcm.len() {
        match common::next(&mut ws).await {
            Seen::Audio(a) => {
                assert_eq!(a.len(), 640, "whole 20 ms frames at 16 kHz");
                echoed.extend(a);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(echoed, pcm, "16 kHz in and out: no resampling, bit exact");
    send_text(&mut ws, r#"{"type":"say","text":"hello"}"#).await;
    let ev = common::next_event(&mut ws).await;
    assert_eq!(
        (ev["type"].as_str(), ev["final"].as_bool()),
        (Some("transcript"), Some(true))
    );
    send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (events, code) = common::until_close(&mut ws).await;
    assert_eq!(events.last().unwrap()["reason"], "client_end");
    assert_eq!(code, Some(1000));
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"client_end\"} 1",
    )
    .await;
    srv.drain(std::time::Duration::from_secs(1)).await;
}
