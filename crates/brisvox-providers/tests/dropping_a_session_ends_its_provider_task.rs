//! A session the engine drops, closes or stops reading leaves no provider task
//! behind, even mid-utterance, with a final pending, mid-response or stalled.

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::{Fault, FaultPlan, MockStt, MockTts};
use brisvox_providers::{ContextId, SttConfig, SttProvider, TtsConfig, TtsProvider};
use common::speech_frame;

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
}

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
    drop(a);
    settle().await;
    assert_eq!(alive_tasks(), 2, "a dropped STT session ends at once");
    b.close().await.unwrap();
    drop(b);
    settle().await;
    assert_eq!(alive_tasks(), 1, "a stalled STT session ends when closed");
    let (sender, events) = c.split();
    drop(events);
    settle().await;
    assert_eq!(
        alive_tasks(),
        0,
        "a TTS session whose events no one reads ends mid-response"
    );
    assert!(sender.is_closed());
}
