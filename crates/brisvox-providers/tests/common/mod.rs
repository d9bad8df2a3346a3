//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code, unreachable_pub, missing_docs)]

use brisvox_core::AudioFrame;
use brisvox_providers::{LlmEvent, LlmStream, SttEvent, SttEvents, TtsEvent, TtsEvents};
use tokio::time::Instant;

/// Whole milliseconds since `start` on tokio's clock.
pub fn ms_since(start: Instant) -> u64 {
    start.elapsed().as_millis() as u64
}

/// A 20 ms, 16 kHz frame of a loud tone (speech to the mock STT).
pub fn speech_frame() -> AudioFrame {
    let samples: Vec<i16> = (0..320)
        .map(|k| ((k as f64 * 0.3).sin() * 4000.0) as i16)
        .collect();
    AudioFrame::from_samples(&samples, 16_000).unwrap()
}

/// A 20 ms, 16 kHz frame of digital silence.
pub fn silence_frame() -> AudioFrame {
    AudioFrame::silence(20, 16_000).unwrap()
}

/// Every event of an LLM stream with its time, until the stream ends.
pub async fn collect_llm(mut stream: LlmStream, start: Instant) -> Vec<(u64, LlmEvent)> {
    let mut out = Vec::new();
    while let Some(event) = stream.next().await {
        out.push((ms_since(start), event));
    }
    out
}

/// Every STT event with its time, until `Closed` or the end of the queue.
pub async fn collect_stt(mut events: SttEvents, start: Instant) -> Vec<(u64, SttEvent)> {
    let mut out = Vec::new();
    while let Some(event) = events.recv().await {
        let closed = event == SttEvent::Closed;
        out.push((ms_since(start), event));
        if closed {
            break;
        }
    }
    out
}

/// Every TTS event with its time, until `Closed` or the end of the queue.
pub async fn collect_tts(mut events: TtsEvents, start: Instant) -> Vec<(u64, TtsEvent)> {
    let mut out = Vec::new();
    while let Some(event) = events.recv().await {
        let closed = event == TtsEvent::Closed;
        out.push((ms_since(start), event));
        if closed {
            break;
        }
    }
    out
}

/// Sends `frames` frames in real time (one per 20 ms), the frame chosen by `frame(i)`.
pub async fn play(
    sender: &brisvox_providers::SttSender,
    frames: usize,
    frame: impl Fn(usize) -> AudioFrame,
) {
    for i in 0..frames {
        sender.send_audio(&frame(i)).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
