//! The batch transcription adapter against a fake OpenAI-compatible server:
//! audio is buffered, a finalize sends it as a WAV in a multipart form with
//! the model and language, and the answer's text is the final, flagged
//! from_finalize. Utterances are sent one per finalize, in order.

mod support_transcribe;

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions, wav_bytes};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_transcribe::{FakeTranscribe, Reply, ok_text};

const KEY: &str = "sk-transcribe-test-4411";
const PATIENCE: Duration = Duration::from_secs(5);

fn frames(first: i16, n: usize) -> Vec<AudioFrame> {
    (0..n)
        .map(|k| {
            let s: Vec<i16> = (0..320)
                .map(|i| first.wrapping_add((k * 320 + i) as i16))
                .collect();
            AudioFrame::from_samples(&s, 16_000).unwrap()
        })
        .collect()
}

fn samples(frames: &[AudioFrame]) -> Vec<i16> {
    frames.iter().flat_map(|f| f.samples().to_vec()).collect()
}

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

fn final_text(text: &str) -> SttEvent {
    SttEvent::Final {
        text: text.into(),
        confidence: None,
        from_finalize: true,
    }
}

#[tokio::test]
async fn each_finalize_sends_its_utterance_and_returns_the_text() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    options.model = "whisper-large-v3".into();
    options.language = Some("en".into());
    let provider = OpenAiTranscribe::new(Some(KEY.into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();

    // The first request is slow; the second utterance is buffered meanwhile
    // and its answer must come after the first.
    fake.reply(Reply::Slow(
        Duration::from_millis(200),
        r#"{"text":"  Hello there. "}"#.into(),
    ));
    fake.reply(ok_text("Second one."));
    let first = frames(0, 5);
    for f in &first {
        sender.send_audio(f).unwrap();
    }
    sender.finalize().await.unwrap();
    let second = frames(3000, 2);
    for f in &second {
        sender.send_audio(f).unwrap();
    }
    sender.finalize().await.unwrap();
    assert_eq!(next(&mut events).await, final_text("Hello there."));
    assert_eq!(next(&mut events).await, final_text("Second one."));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let r = &requests[0];
    assert_eq!(r.auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(r.text("model").as_deref(), Some("whisper-large-v3"));
    assert_eq!(r.text("language").as_deref(), Some("en"));
    assert_eq!(r.text("response_format").as_deref(), Some("json"));
    let file = r.file();
    assert_eq!(file.content_type.as_deref(), Some("audio/wav"));
    assert!(file.filename.as_deref().unwrap().ends_with(".wav"));
    assert_eq!(file.data, wav_bytes(&samples(&first), 16_000));
    assert_eq!(
        requests[1].file().data,
        wav_bytes(&samples(&second), 16_000)
    );

    // Nothing buffered: an empty final, no request.
    sender.finalize().await.unwrap();
    assert_eq!(next(&mut events).await, final_text(""));
    assert_eq!(fake.requests().len(), 2);

    sender.close().await.unwrap();
    assert_eq!(next(&mut events).await, SttEvent::Closed);
}

#[tokio::test]
async fn a_local_server_needs_no_key_and_the_session_overrides_the_model() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = format!("{}/", fake.base_url);
    let provider = OpenAiTranscribe::new(None, options);
    let mut config = SttConfig::default();
    config.model = Some("Systran/faster-whisper-small".into());
    let (sender, mut events) = provider.connect(config).await.unwrap().split();
    fake.reply(ok_text("local"));
    sender.send_audio(&frames(1, 1)[0]).unwrap();
    sender.finalize().await.unwrap();
    assert_eq!(next(&mut events).await, final_text("local"));
    let r = &fake.requests()[0];
    assert_eq!(r.auth, None);
    assert_eq!(
        r.text("model").as_deref(),
        Some("Systran/faster-whisper-small")
    );
    assert_eq!(r.text("language"), None);
}

#[tokio::test]
async fn a_long_utterance_keeps_its_end() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    options.max_utterance_ms = 40;
    let provider = OpenAiTranscribe::new(None, options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    fake.reply(ok_text("end"));
    let all = frames(0, 5);
    for f in &all {
        sender.send_audio(f).unwrap();
    }
    sender.finalize().await.unwrap();
    assert_eq!(next(&mut events).await, final_text("end"));
    assert_eq!(
        fake.requests()[0].file().data,
        wav_bytes(&samples(&all[3..]), 16_000),
        "the last 40 ms"
    );
}
