//! A dropped Deepgram listen socket (1011 idle timeout, a reset, a silent
//! server) is replaced without ending the session: the audio not yet covered
//! by a final, plus the frames sent while reconnecting, is replayed into the
//! new socket, then the pending Finalize.

mod support_deepgram;

use std::sync::atomic::Ordering;
use std::time::Duration;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{ErrorKind, ProviderError, SttConfig, SttEvent, SttProvider};
use brisvox_testkit::eventually_async;
use support_deepgram::{FakeWs, Got, PATIENCE, bytes_of, counting_frames, results};

const FINALIZE: &str = r#"{"type":"Finalize"}"#;

fn provider(fake: &FakeWs, tweak: impl FnOnce(&mut DeepgramSttOptions)) -> DeepgramStt {
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    tweak(&mut options);
    DeepgramStt::new("dg-key-reconnect", options)
}

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

#[tokio::test]
async fn a_1011_close_replays_uncovered_audio_and_the_pending_finalize() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |_| {});
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;

    let first = counting_frames(0, 3);
    for f in &first {
        sender.send_audio(f).unwrap();
    }
    conn.audio_bytes(3 * 640).await;
    // Deepgram finalises the first 20 ms, then times the socket out before
    // answering the Finalize.
    conn.send_text(results("one", true, false, 0.0, 0.02)).await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "one".into(),
            confidence: Some(0.9),
            from_finalize: false
        }
    );
    sender.finalize().await.unwrap();
    assert_eq!(conn.recv().await, Got::Text(FINALIZE.into()));
    // The first reconnect attempt is refused with a 503 (retryable), so the
    // adapter backs off; frames sent meanwhile must not be lost.
    fake.refuse_next(503, None);
    conn.close(1011, "NET-0001").await;
    eventually_async(PATIENCE, "a reconnect attempt", || async {
        fake.upgrades.load(Ordering::SeqCst) >= 2
    })
    .await;
    let during = counting_frames(5000, 2);
    for f in &during {
        sender.send_audio(f).unwrap();
    }

    let mut conn = fake.accept().await;
    let replayed = conn.audio_until(FINALIZE).await;
    let mut expected = bytes_of(&first[1..]);
    expected.extend(bytes_of(&during));
    assert_eq!(
        replayed, expected,
        "uncovered audio, then the frames sent while down"
    );

    conn.send_text(results("two three", true, true, 0.0, 0.08))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "two three".into(),
            confidence: Some(0.9),
            from_finalize: true
        }
    );
}

#[tokio::test]
async fn a_reset_socket_is_replaced() {
    use brisvox_providers::retries::{RetryKind, total};
    let reconnects = total(RetryKind::SttReconnect);
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |_| {});
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let conn = fake.accept().await;
    conn.reset();
    let frame = &counting_frames(7, 1)[0];
    let mut conn = fake.accept().await;
    assert!(
        total(RetryKind::SttReconnect) > reconnects,
        "the reconnect is counted for /metrics"
    );
    sender.send_audio(frame).unwrap();
    let (audio, _) = conn.audio_bytes(640).await;
    assert_eq!(audio, bytes_of(std::slice::from_ref(frame)));
    conn.send_text(results("still here", false, false, 0.0, 0.02))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Interim {
            text: "still here".into()
        }
    );
}

#[tokio::test]
async fn a_silent_server_times_out_and_is_replaced() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |o| {
        o.first_result_timeout = Duration::from_millis(300)
    });
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    let frame = &counting_frames(1, 1)[0];
    // Taken before the audio: the adapter's deadline starts when it sends it.
    let started = std::time::Instant::now();
    sender.send_audio(frame).unwrap();
    conn.audio_bytes(640).await;
    let SttEvent::Error(error) = next(&mut events).await else {
        panic!("expected a timeout error")
    };
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        error,
        ProviderError::Timeout {
            waiting_for: "first result",
            after_ms: 300
        }
    );
    assert!(error.is_retryable());
    let mut conn2 = fake.accept().await;
    let (audio, _) = conn2.audio_bytes(640).await;
    assert_eq!(audio, bytes_of(std::slice::from_ref(frame)), "replayed");
    drop(conn);
}

#[tokio::test]
async fn a_refused_key_on_reconnect_ends_the_session() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |_| {});
    let (_sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let conn = fake.accept().await;
    fake.refuse_next(401, None);
    conn.close(1011, "NET-0001").await;
    let SttEvent::Error(error) = next(&mut events).await else {
        panic!("expected an error")
    };
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert_eq!(next(&mut events).await, SttEvent::Closed);
}

#[tokio::test]
async fn reconnects_stop_after_the_configured_attempts() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |o| o.reconnect_attempts = 2);
    let (_sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let conn = fake.accept().await;
    fake.refuse_next(503, None);
    fake.refuse_next(503, None);
    conn.close(1011, "NET-0001").await;
    let SttEvent::Error(error) = next(&mut events).await else {
        panic!("expected an error")
    };
    assert_eq!(
        error,
        ProviderError::server(503, "websocket upgrade refused")
    );
    assert_eq!(next(&mut events).await, SttEvent::Closed);
    assert_eq!(
        fake.upgrades.load(Ordering::SeqCst),
        3,
        "first + two attempts"
    );
}

#[tokio::test]
async fn frames_beyond_the_replay_bound_drop_the_oldest() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |o| o.reconnect_buffer_ms = 40);
    let (sender, _events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let conn = fake.accept().await;
    fake.refuse_next(503, None);
    conn.close(1011, "NET-0001").await;
    eventually_async(PATIENCE, "a reconnect attempt", || async {
        fake.upgrades.load(Ordering::SeqCst) >= 2
    })
    .await;
    let frames = counting_frames(100, 5);
    for f in &frames {
        sender.send_audio(f).unwrap();
    }
    let mut conn = fake.accept().await;
    let (audio, _) = conn.audio_bytes(2 * 640).await;
    assert_eq!(audio, bytes_of(&frames[3..]), "the newest 40 ms survive");
    sender.finalize().await.unwrap();
    assert_eq!(
        conn.recv().await,
        Got::Text(FINALIZE.into()),
        "nothing more was replayed"
    );
}
