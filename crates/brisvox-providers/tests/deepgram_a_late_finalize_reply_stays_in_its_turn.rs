//! A Finalize the adapter had to answer itself (no `from_finalize` final in
//! time) may still get its reply later. That reply belongs to the turn that
//! already ended: it is dropped, so its words never open the next turn.

mod support_deepgram;

use std::time::Duration;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_deepgram::{FakeWs, Got, PATIENCE, counting_frames, results};

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

#[tokio::test]
async fn the_late_reply_is_dropped_and_the_next_final_passes() {
    let mut fake = FakeWs::start().await;
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    options.finalize_timeout = Duration::from_millis(100);
    let stt = DeepgramStt::new("dg-key", options);
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;

    sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
    conn.send_text(results("late", false, false, 0.0, 0.02))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Interim {
            text: "late".into()
        }
    );
    sender.finalize().await.unwrap();
    loop {
        if let Got::Text(t) = conn.recv().await {
            assert_eq!(t, r#"{"type":"Finalize"}"#);
            break;
        }
    }
    // No reply within 100 ms: the adapter answers the finalize empty.
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: String::new(),
            confidence: None,
            from_finalize: true
        }
    );
    // The reply arrives late, then the next turn's final.
    conn.send_text(results("late words", true, true, 0.0, 0.02))
        .await;
    conn.send_text(results("next turn", true, false, 0.02, 0.5))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "next turn".into(),
            confidence: Some(0.9),
            from_finalize: false
        }
    );
}
