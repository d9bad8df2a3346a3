//! A session the engine drops, closes or stops reading leaves no provider task
//! behind, even mid-utterance, with a final pending, mid-response or stalled.

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::{Fault, FaultPlan, MockStt, MockTts};
use brisvox_providers::{ContextId, SttConfig, SttProvider, TtsConfig, TtsProvider};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::speech_frame;

#[tokio::test(start_paused = true)]
async fn stt_and_tts_tasks_end_with_their_sessions() {
    let stt = MockStt::default();
    stt.set_faults(FaultPlan::none().at(1, Fault::StallAfter { items: 0 }));
    let tts = MockTts::default();
    let a = stt.connect(SttConfig::default()).await.unwrap();
    let b = stt.connect(SttConfig::default()).await.unwrap();
    let c = tts.connect(TtsConfig::default()).await.unwrap();
    assert_eq!(alive_tasks(), 3);

    // Mid-utterance, stalled, and mid-response.
    for frame in 0..30 {
        a.send_audio(&speech_frame()).unwrap();
        if frame % 3 == 0 {
            b.send_audio(&speech_frame()).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ctx = ContextId::new(Epoch(1), 0);
    c.sender().start_context(ctx).await.unwrap();
    c.sender()
        .send_text(ctx, "a response that is still being spoken")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // A final is now pending for 150 ms; the task must not wait for it.
    a.finalize().await.unwrap();
    let dropped_at = tokio::time::Instant::now();
    drop(a);
    until_alive_tasks(2, "a dropped STT session ends").await;
    // On the paused clock: it ended at once, not when the final was due.
    assert!(dropped_at.elapsed() < Duration::from_millis(150));
    b.close().await.unwrap();
    drop(b);
    until_alive_tasks(1, "a stalled STT session ends when closed").await;
    let (sender, events) = c.split();
    drop(events);
    until_alive_tasks(
        0,
        "a TTS session whose events no one reads ends mid-response",
    )
    .await;
    assert!(sender.is_closed());
}

#[tokio::test(start_paused = true)]
async fn an_stt_session_whose_events_no_one_reads_ends_mid_utterance() {
    let stt = MockStt::default();
    let session = stt.connect(SttConfig::default()).await.unwrap();
    assert_eq!(alive_tasks(), 1);
    // Frames flow (the wait for the engine leaving is skipped at each one),
    // then the engine drops the events while its sender lives on.
    for _ in 0..10 {
        session.send_audio(&speech_frame()).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (sender, events) = session.split();
    drop(events);
    until_alive_tasks(0, "an STT session whose events no one reads ends").await;
    assert!(sender.is_closed());
}
