//! Batch transcription failures surface as typed errors in place of the
//! utterance's final, and the session goes on: refused key, rate limit,
//! server error, an answer without text, a slow server, a connection broken
//! mid-answer, no server at all. The key never reaches an error.

mod support_transcribe;

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::{ErrorKind, ProviderError, SttConfig, SttEvent, SttProvider};
use support_transcribe::{FakeTranscribe, Reply, ok_text};

const KEY: &str = "sk-failing-key-8c2d";
const PATIENCE: Duration = Duration::from_secs(5);

async fn utterance_result(
    sender: &brisvox_providers::SttSender,
    events: &mut brisvox_providers::SttEvents,
) -> SttEvent {
    let frame = AudioFrame::silence(20, 16_000).unwrap();
    sender.send_audio(&frame).unwrap();
    sender.finalize().await.unwrap();
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

fn error_of(event: SttEvent) -> ProviderError {
    match event {
        SttEvent::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn every_failure_is_typed_and_the_session_goes_on() {
    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    // Long enough for every quick answer on a loaded machine; the slow one
    // never comes in time.
    options.first_byte_timeout = Duration::from_millis(2_000);
    let provider = OpenAiTranscribe::new(Some(KEY.into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();

    let mut errors = Vec::new();
    for (reply, expected) in [
        (
            Reply::Status(401, r#"{"error":{"message":"bad key"}}"#.into()),
            ProviderError::Auth { status: Some(401) },
        ),
        (
            Reply::Status(403, "{}".into()),
            ProviderError::Auth { status: Some(403) },
        ),
        (
            Reply::RateLimited("3"),
            ProviderError::RateLimited {
                retry_after_ms: Some(3000),
            },
        ),
        (
            Reply::Status(503, "overloaded".into()),
            ProviderError::server(503, "transcription request refused"),
        ),
        (
            Reply::Status(200, r#"{"transcript":"wrong field"}"#.into()),
            ProviderError::protocol("transcription answer without a text field"),
        ),
        (
            Reply::Slow(Duration::from_secs(60), r#"{"text":"late"}"#.into()),
            ProviderError::Timeout {
                waiting_for: "transcription response",
                after_ms: 2_000,
            },
        ),
    ] {
        fake.reply(reply);
        let error = error_of(utterance_result(&sender, &mut events).await);
        assert_eq!(error, expected);
        errors.push(error);
    }
    fake.reply(Reply::BreakOff);
    let error = error_of(utterance_result(&sender, &mut events).await);
    assert_eq!(error.kind(), ErrorKind::Disconnected, "{error}");
    errors.push(error);

    // After all that, the next utterance works.
    fake.reply(ok_text("recovered"));
    assert_eq!(
        utterance_result(&sender, &mut events).await,
        SttEvent::Final {
            text: "recovered".into(),
            confidence: None,
            from_finalize: true
        }
    );

    assert!(!format!("{errors:?}").contains(KEY));
}

#[tokio::test]
async fn no_server_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = base_url;
    let provider = OpenAiTranscribe::new(Some(KEY.into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    let error = error_of(utterance_result(&sender, &mut events).await);
    assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    assert!(error.is_retryable());
    assert!(!error.to_string().contains(KEY));
}
