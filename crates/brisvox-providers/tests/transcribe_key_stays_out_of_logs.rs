//! The transcription key is never written to a log line, at any level, even
//! when requests fail. One test in this binary, so no other test races
//! `tracing`'s per-callsite interest cache.

mod support_transcribe;

use std::io::Write;
use std::sync::{Arc, Mutex};

use brisvox_core::AudioFrame;
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_transcribe::{FakeTranscribe, Reply, ok_text};

const KEY: &str = "sk-logcheck-77e0a9";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_never_reaches_the_logs() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let fake = FakeTranscribe::start().await;
    let mut options = OpenAiTranscribeOptions::default();
    options.base_url = fake.base_url.clone();
    let provider = OpenAiTranscribe::new(Some(KEY.into()), options);
    let (sender, mut events) = provider
        .connect(SttConfig::default())
        .await
        .unwrap()
        .split();
    for reply in [
        Reply::Status(401, "{}".into()),
        Reply::BreakOff,
        ok_text("fine"),
    ] {
        fake.reply(reply);
        sender
            .send_audio(&AudioFrame::silence(20, 16_000).unwrap())
            .unwrap();
        sender.finalize().await.unwrap();
        let event = events.recv().await.unwrap();
        assert!(
            matches!(event, SttEvent::Error(_) | SttEvent::Final { .. }),
            "{event:?}"
        );
    }
    let logs = String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned();
    assert!(logs.contains("transcription failed"), "{logs}");
    assert!(!logs.contains(KEY), "key in logs: {logs}");
}
