//! Answer frames at the engine's 16 kHz reach a client at any codec and rate
//! as exact 20 ms frames of that codec and rate (resampled and re-framed).

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_server::handler::{CallFuture, CallHandler, CallInput, CallOutput, CallStart};
use common::Seen;

/// Speaks 25 frames of 16 kHz audio (500 ms), then waits for the caller.
struct Speak16k;

impl CallHandler for Speak16k {
    fn run_call(&self, _: CallStart, mut input: CallInput, mut output: CallOutput) -> CallFuture {
        Box::pin(async move {
            for i in 0..25 {
                let tone: Vec<i16> = (0..320)
                    .map(|n| if (n + i) % 20 < 10 { 3000 } else { -3000 })
                    .collect();
                output
                    .send_frame(AudioFrame::from_samples(&tone, 16000).unwrap())
                    .await
                    .unwrap();
            }
            while input.recv_frame().await.is_some() {}
            Ok(())
        })
    }
}

#[tokio::test]
async fn every_codec_and_rate() {
    let srv = common::server_with("", Arc::new(Speak16k)).await;
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
        // 500 ms out; a resampler may keep back up to a frame or so.
        let mut frames = 0;
        while frames < 23 {
            match common::next(&mut ws).await {
                Seen::Audio(a) => {
                    assert_eq!(a.len(), frame_bytes, "{codec} {rate}");
                    frames += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        common::send_text(&mut ws, r#"{"type":"end"}"#).await;
        let (_, code) = common::until_close(&mut ws).await;
        assert_eq!(code, Some(1000));
    }
    srv.drain(Duration::from_millis(100)).await;
}
