//! OpenAI answers audio under 0.1 s with 400 `audio_too_short`
//! (tests/fixtures/vendors/openai/transcription_too_short_response.json):
//! nothing was said, so the utterance's final is empty, not an error. Other
//! 400s stay errors.

mod support_fixtures;
mod support_transcribe;

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::{ProviderError, SttConfig, SttEvent, SttProvider};
use support_transcribe::{FakeTranscribe, Reply};

#[tokio::test]
async fn too_short_is_empty_and_other_refusals_are_errors() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    let provider = OpenAiTranscribe::new(Some("sk-x".into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    let body = support_fixtures::text("openai", "transcription_too_short_response.json");
    for (reply, expected) in [
        (
            Reply::Status(400, body),
            SttEvent::Final {
                text: String::new(),
                confidence: None,
                from_finalize: true,
            },
        ),
        (
            Reply::Status(
                400,
                r#"{"error":{"code":"invalid_value","message":"bad"}}"#.into(),
            ),
            SttEvent::Error(ProviderError::server(400, "transcription request refused")),
        ),
    ] {
        fake.reply(reply);
        sender
            .send_audio(&AudioFrame::silence(20, 16_000).unwrap())
            .unwrap();
        sender.finalize().await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("no event in time")
            .expect("session ended");
        assert_eq!(got, expected);
    }
}
