//! OpenAI's documented transcription exchange
//! (tests/fixtures/vendors/openai/transcription_response.json, the
//! reference's `gpt-4o-transcribe` example): the request is the documented
//! multipart form (`file` and `model` fields, a bearer key) and the
//! documented JSON answer, usage included, becomes the utterance's final.

mod support_fixtures;
mod support_transcribe;

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_transcribe::{FakeTranscribe, Reply};

#[tokio::test]
async fn the_documented_answer_is_the_final() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    options.model = "gpt-4o-transcribe".into();
    let provider = OpenAiTranscribe::new(Some("sk-doc".into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    let body = support_fixtures::text("openai", "transcription_response.json");
    fake.reply(Reply::Status(200, body));
    sender
        .send_audio(&AudioFrame::silence(20, 16_000).unwrap())
        .unwrap();
    sender.finalize().await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("no event in time")
        .expect("session ended");
    let want = support_fixtures::json("openai", "transcription_response.json");
    assert_eq!(
        got,
        SttEvent::Final {
            text: want["text"].as_str().unwrap().to_owned(),
            confidence: None,
            from_finalize: true,
        }
    );
    let request = &fake.requests()[0];
    assert_eq!(request.path, "/v1/audio/transcriptions");
    assert_eq!(request.auth.as_deref(), Some("Bearer sk-doc"));
    assert_eq!(request.text("model").as_deref(), Some("gpt-4o-transcribe"));
    assert!(!request.file().data.is_empty());
}
