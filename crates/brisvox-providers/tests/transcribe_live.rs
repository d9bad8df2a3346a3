//! A live check of batch transcription; runs only when `OPENAI_API_KEY` or
//! `BRISVOX_TRANSCRIBE_URL` (an OpenAI-compatible base such as
//! `http://127.0.0.1:8000/v1`) is set, and prints that it was skipped otherwise.
//! `BRISVOX_TRANSCRIBE_MODEL` picks the model (default `whisper-1`).

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};

#[tokio::test]
async fn live_transcription_answers_a_finalize() {
    let key = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|k| !k.is_empty());
    let url = std::env::var("BRISVOX_TRANSCRIBE_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if key.is_none() && url.is_none() {
        eprintln!("skipped: neither OPENAI_API_KEY nor BRISVOX_TRANSCRIBE_URL is set");
        return;
    }
    let mut options = OpenAiTranscribeOptions::default();
    if let Some(url) = url {
        options.base_url = url;
    }
    if let Ok(model) = std::env::var("BRISVOX_TRANSCRIBE_MODEL") {
        options.model = model;
    }
    let provider = OpenAiTranscribe::new(key, options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    // One second of a 440 Hz tone: the service must answer (any text, maybe
    // empty); checking the words needs speech, see docs/providers/openai-transcribe.md.
    for k in 0..50 {
        let s: Vec<i16> = (0..320)
            .map(|i| {
                (((k * 320 + i) as f64 * 440.0 * std::f64::consts::TAU / 16_000.0).sin() * 3000.0)
                    as i16
            })
            .collect();
        sender
            .send_audio(&AudioFrame::from_samples(&s, 16_000).unwrap())
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let started = std::time::Instant::now();
    sender.finalize().await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("answered in time")
        .expect("session open");
    eprintln!("after {:?}: {event:?}", started.elapsed());
    assert!(
        matches!(
            event,
            SttEvent::Final {
                from_finalize: true,
                ..
            }
        ),
        "{event:?}"
    );
}
