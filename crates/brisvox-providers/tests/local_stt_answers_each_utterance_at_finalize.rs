//! The local STT adapter buffers each utterance, runs the recognizer on its
//! own thread at the finalize (the VAD stop) and answers with one final per
//! utterance, in order; 8 kHz audio reaches the recognizer at 16 kHz; an empty
//! utterance is answered without running it; close answers what is pending.

mod support_local_stt;

use std::time::Duration;

use brisvox_providers::local::LocalStt;
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_local_stt::{
    FakeRecognizer, Reply, final_text, frame, next_event, no_partials, send_frames,
};

#[tokio::test]
async fn each_finalize_gets_the_text_of_the_audio_before_it() {
    let fake = FakeRecognizer::numbering();
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();

    send_frames(&sender, 50, &frame(16_000, 1_000)).await; // 1 s
    sender.finalize().await.unwrap();
    send_frames(&sender, 25, &frame(16_000, 2_000)).await; // 0.5 s
    sender.finalize().await.unwrap();

    assert_eq!(final_text(next_event(&mut events).await), "utterance 1");
    assert_eq!(final_text(next_event(&mut events).await), "utterance 2");
    let calls = fake.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].len, calls[1].len), (16_000, 8_000));
    assert!((calls[0].peak - 1_000.0 / 32_768.0).abs() < 1e-6);
    // Never on a tokio worker: on the provider's own thread.
    assert!(
        calls
            .iter()
            .all(|c| c.thread.as_deref() == Some("brisvox-stt-local")),
        "{calls:?}"
    );
    let stats = stt.stats();
    assert_eq!((stats.utterances, stats.recognized, stats.empty), (2, 2, 0));
}

#[tokio::test]
async fn eight_khz_audio_reaches_the_recognizer_at_16_khz() {
    let fake = FakeRecognizer::numbering();
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let mut config = SttConfig::default();
    config.sample_rate_hz = 8_000;
    let (sender, mut events) = stt.connect(config).await.unwrap().split();

    send_frames(&sender, 100, &frame(8_000, 4_000)).await; // 2 s at 8 kHz
    sender.finalize().await.unwrap();
    assert_eq!(final_text(next_event(&mut events).await), "utterance 1");

    let calls = fake.calls();
    // 32,000 samples at 16 kHz, plus at most 100 ms of resampler delay.
    assert!(
        (32_000..=33_600).contains(&calls[0].len),
        "{} samples",
        calls[0].len
    );
    // The level survives resampling (a constant signal stays near 4000/32768).
    assert!(
        (calls[0].peak - 4_000.0 / 32_768.0).abs() < 0.05,
        "{}",
        calls[0].peak
    );
}

#[tokio::test]
async fn an_empty_utterance_gets_an_empty_final_without_recognition() {
    let fake = FakeRecognizer::numbering();
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();

    sender.finalize().await.unwrap();
    send_frames(&sender, 10, &frame(16_000, 500)).await;
    sender.finalize().await.unwrap();
    sender.finalize().await.unwrap();

    assert_eq!(final_text(next_event(&mut events).await), "");
    assert_eq!(final_text(next_event(&mut events).await), "utterance 1");
    assert_eq!(final_text(next_event(&mut events).await), "");
    assert_eq!(fake.calls().len(), 1);
    let stats = stt.stats();
    assert_eq!((stats.utterances, stats.empty, stats.recognized), (3, 2, 1));
}

#[tokio::test]
async fn close_answers_the_pending_utterances_then_closes() {
    let fake = FakeRecognizer::new(|i| Reply::Slow(Duration::from_millis(30), format!("u{i}")));
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    for _ in 0..3 {
        send_frames(&sender, 5, &frame(16_000, 100)).await;
        sender.finalize().await.unwrap();
    }
    // Audio after the last finalize is dropped at close.
    send_frames(&sender, 5, &frame(16_000, 100)).await;
    sender.close().await.unwrap();

    for i in 0..3 {
        assert_eq!(final_text(next_event(&mut events).await), format!("u{i}"));
    }
    assert_eq!(next_event(&mut events).await, SttEvent::Closed);
    assert_eq!(fake.calls().len(), 3);
}

#[tokio::test]
async fn recognition_time_is_measured_on_the_thread() {
    let fake = FakeRecognizer::new(|_| Reply::Slow(Duration::from_millis(60), "slow".into()));
    let stt = LocalStt::new(fake, no_partials()).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    send_frames(&sender, 5, &frame(16_000, 100)).await;
    sender.finalize().await.unwrap();
    assert_eq!(final_text(next_event(&mut events).await), "slow");
    let stats = stt.stats();
    assert!(stats.recognize_us_max >= 60_000, "{stats:?}");
    assert!(stats.recognize_us_total >= stats.recognize_us_max);
}
