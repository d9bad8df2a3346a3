//! The engine's answer reaches a client at any codec and rate as exact 20 ms
//! frames of that codec and rate: the engine frames it at the client's rate
//! (the greeting of the mock TTS, 24 kHz, resampled by the engine), the route
//! only encodes it. A client that asks for 10 or 40 ms (`start`'s `frame_ms`)
//! gets messages of that duration, paced in real time.

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
        let started = common::next_event(&mut ws).await;
        assert_eq!(started["sample_rate"], rate);
        assert_eq!(started["frame_ms"], 20);
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

#[tokio::test]
async fn the_client_chooses_the_message_duration() {
    let greeting = "greeting = \"Hello, thank you for calling, how can I help you today?\"";
    let srv = common::engine_server(greeting, "", None).await;
    for (frame_ms, codec, rate, frame_bytes) in [
        (40_u32, "pcm16", 48000, 3840),
        (40, "mulaw", 8000, 320),
        (10, "pcm16", 16000, 320),
        (10, "alaw", 8000, 80),
    ] {
        let mut ws = common::connect(srv.local_addr(), "/call").await;
        let start = common::START_PCM16
            .replace("pcm16", codec)
            .replace("16000", &rate.to_string())
            .replacen('{', &format!("{{\"frame_ms\":{frame_ms},"), 1);
        common::send_text(&mut ws, &start).await;
        let started = common::next_event(&mut ws).await;
        assert_eq!(started["frame_ms"], frame_ms, "{started}");
        // 600 ms of the greeting, as whole messages of the asked duration,
        // arriving about in real time (not all at once).
        let (mut frames, mut first) = (0, None);
        while frames * frame_ms < 600 {
            match common::next(&mut ws).await {
                Seen::Audio(a) => {
                    assert_eq!(a.len(), frame_bytes, "{frame_ms} ms {codec} {rate}");
                    first.get_or_insert_with(std::time::Instant::now);
                    frames += 1;
                }
                Seen::Event(_) => {}
                other => panic!("{other:?}"),
            }
        }
        let spread = first.expect("audio came").elapsed();
        assert!(
            spread >= Duration::from_millis(300),
            "{frame_ms} ms: 600 ms of audio within {spread:?}"
        );
        common::send_text(&mut ws, r#"{"type":"end"}"#).await;
        let (_, code) = common::until_close(&mut ws).await;
        assert_eq!(code, Some(1000));
    }
    srv.drain(Duration::from_millis(100)).await;
}
