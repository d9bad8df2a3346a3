//! The engine's answer reaches a client at any codec and rate as exact 20 ms
//! frames of that codec and rate: the engine frames it at the client's rate
//! (the greeting of the mock TTS, 24 kHz, resampled by the engine), the route
//! only encodes it.

mod common;

use std::time::Duration;

use common::Seen;

#[tokio::test]
async fn every_codec_and_rate() {
    let greeting = "greeting = \"Hello, thank you for calling, how can I help you today?\"";
    let srv = common::engine_server(greeting, "", None).await;
    for (codec, rate, frame_bytes) in [
        ("mulaw", 8000, 160),
        ("pcm16", 48000, 1920),
        ("pcm16", 24000, 960),
        ("mulaw", 16000, 320),
        ("alaw", 8000, 160),
    ] {
        let mut ws = common::connect(srv.local_addr(), "/call").await;
        let start = common::START_PCM16
            .replace("pcm16", codec)
            .replace("16000", &rate.to_string());
        common::send_text(&mut ws, &start).await;
        assert_eq!(common::next_event(&mut ws).await["sample_rate"], rate);
        // 500 ms of the greeting.
        let mut frames = 0;
        while frames < 25 {
            match common::next(&mut ws).await {
                Seen::Audio(a) => {
                    assert_eq!(a.len(), frame_bytes, "{codec} {rate}");
                    frames += 1;
                }
                Seen::Event(_) => {}
                other => panic!("{other:?}"),
            }
        }
        common::send_text(&mut ws, r#"{"type":"end"}"#).await;
        let (_, code) = common::until_close(&mut ws).await;
        assert_eq!(code, Some(1000));
    }
    srv.drain(Duration::from_millis(100)).await;
}
