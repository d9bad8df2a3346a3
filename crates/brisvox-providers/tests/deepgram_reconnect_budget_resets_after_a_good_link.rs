//! The reconnect budget counts consecutive failures: a link that came back and
//! delivered a message starts a fresh budget, so a long call survives more
//! drops in all than `reconnect_attempts`.

mod support_deepgram;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_deepgram::{FakeWs, PATIENCE, counting_frames, results};

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

#[tokio::test]
async fn five_drops_with_good_links_between_keep_the_session() {
    let mut fake = FakeWs::start().await;
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    options.reconnect_attempts = 2;
    let stt = DeepgramStt::new("dg-key", options);
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    for drop in 0..5 {
        sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
        let text = format!("link {drop}");
        conn.send_text(results(&text, true, false, 0.0, 0.02)).await;
        assert!(matches!(next(&mut events).await, SttEvent::Final { text: t, .. } if t == text));
        conn.close(1011, "NET-0001").await;
        conn = fake.accept().await;
    }
    sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
    conn.send_text(results("still here", true, false, 0.0, 0.02))
        .await;
    assert!(
        matches!(next(&mut events).await, SttEvent::Final { text, .. } if text == "still here")
    );
}
