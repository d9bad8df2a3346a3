//! What a call's turn machine counted reaches `/metrics` when the call ends
//! (`brisvox_turn_events_total`, and the early-analysis and speculation
//! families beside it): one caller turn, answered, then the client ends
//! the call. (Real server and engine, mock providers, energy VAD.)

mod common;

use std::time::Duration;

use common::Seen;

/// 20 ms of a loud 16 kHz tone (speech to the energy VAD), PCM16 LE.
fn tone_frame() -> Vec<u8> {
    (0..320)
        .map(|i| if (i / 20) % 2 == 0 { 8000i16 } else { -8000 })
        .flat_map(i16::to_le_bytes)
        .collect()
}

#[tokio::test]
async fn one_answered_turn_is_counted_after_the_call() {
    let srv = common::engine_server("", "", None).await;
    let addr = srv.local_addr();
    let mut ws = common::connect(addr, "/call").await;
    common::send_text(&mut ws, common::START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    for _ in 0..40 {
        common::send_binary(&mut ws, tone_frame()).await;
    }
    // Silence until the answer's audio arrives.
    let silence = vec![0u8; 640];
    loop {
        common::send_binary(&mut ws, silence.clone()).await;
        match tokio::time::timeout(Duration::from_millis(20), common::next(&mut ws)).await {
            Ok(Seen::Audio(_)) => break,
            Ok(Seen::Closed(c)) => panic!("closed {c:?}"),
            Ok(Seen::Event(_)) | Err(_) => {}
        }
    }
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    common::until_close(&mut ws).await;
    let body = common::wait_metric(addr, "brisvox_turn_events_total{event=\"response\"} 1").await;
    for line in [
        "brisvox_turn_events_total{event=\"turn\"} 1",
        "brisvox_turn_events_total{event=\"barge_in\"} 0",
        "brisvox_speculation_runs_total{result=\"started\"} 0",
        "brisvox_early_analyses_total{result=\"started\"} 0",
    ] {
        assert!(body.contains(line), "{line} missing in\n{body}");
    }
    srv.drain(Duration::from_millis(100)).await;
}
