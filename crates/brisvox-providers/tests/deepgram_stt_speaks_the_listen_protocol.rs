//! The Deepgram STT adapter against a fake `/v1/listen`: the upgrade carries
//! the options and the key (header only), audio goes out as linear16, Results
//! become interims and finals, a Finalize is answered by the flagged final,
//! and a close sends CloseStream.

mod support_deepgram;

use std::time::Duration;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use support_deepgram::{FakeWs, Got, PATIENCE, bytes_of, counting_frames, results};

const KEY: &str = "dg-test-key-7f3a9c";

fn provider(fake: &FakeWs, tweak: impl FnOnce(&mut DeepgramSttOptions)) -> DeepgramStt {
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    tweak(&mut options);
    DeepgramStt::new(KEY, options)
}

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

#[tokio::test]
async fn upgrade_audio_results_finalize_and_close() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |_| {});
    let session = stt.connect(SttConfig::default()).await.unwrap();
    let (sender, mut events) = session.split();
    let mut conn = fake.accept().await;

    assert_eq!(conn.auth.as_deref(), Some(format!("Token {KEY}").as_str()));
    assert!(!conn.uri.contains(KEY));
    for param in [
        "model=nova-3",
        "language=en",
        "encoding=linear16",
        "sample_rate=16000",
        "channels=1",
        "interim_results=true",
        "endpointing=300",
        "punctuate=true",
        "smart_format=true",
        "utterance_end_ms=1000",
        "vad_events=true",
    ] {
        assert!(
            conn.uri.contains(param),
            "{param} missing from {}",
            conn.uri
        );
    }

    let frames = counting_frames(0, 3);
    for f in &frames {
        sender.send_audio(f).unwrap();
    }
    let (audio, _) = conn.audio_bytes(3 * 640).await;
    assert_eq!(audio, bytes_of(&frames), "linear16 little-endian, in order");

    conn.send_text(r#"{"type":"SpeechStarted","channel":[0,1],"timestamp":0.0}"#)
        .await;
    conn.send_text(results("hel", false, false, 0.0, 0.06))
        .await;
    conn.send_text(results("hello", true, false, 0.0, 0.06))
        .await;
    assert_eq!(next(&mut events).await, SttEvent::SpeechStarted);
    assert_eq!(
        next(&mut events).await,
        SttEvent::Interim { text: "hel".into() }
    );
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "hello".into(),
            confidence: Some(0.9),
            from_finalize: false
        }
    );

    sender.finalize().await.unwrap();
    assert_eq!(
        conn.recv().await,
        Got::Text(r#"{"type":"Finalize"}"#.into())
    );
    conn.send_text(results("world", true, true, 0.06, 0.5))
        .await;
    conn.send_text(r#"{"type":"UtteranceEnd","channel":[0,1],"last_word_end":0.5}"#)
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "world".into(),
            confidence: Some(0.9),
            from_finalize: true
        }
    );
    assert_eq!(next(&mut events).await, SttEvent::UtteranceEnd);

    sender.close().await.unwrap();
    assert_eq!(
        conn.recv().await,
        Got::Text(r#"{"type":"CloseStream"}"#.into())
    );
    // Deepgram answers what it still had, then Metadata, then closes.
    conn.send_text(results("bye", true, false, 0.56, 0.3)).await;
    conn.send_text(r#"{"type":"Metadata","request_id":"abc","duration":0.6}"#)
        .await;
    conn.close(1000, "").await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "bye".into(),
            confidence: Some(0.9),
            from_finalize: false
        }
    );
    assert_eq!(next(&mut events).await, SttEvent::Closed);
}

#[tokio::test]
async fn an_unanswered_finalize_gets_an_empty_flagged_final() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |o| o.finalize_timeout = Duration::from_millis(200));
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    // Taken before the Finalize: the adapter's deadline starts when it sends it.
    let started = std::time::Instant::now();
    sender.finalize().await.unwrap();
    assert_eq!(
        conn.recv().await,
        Got::Text(r#"{"type":"Finalize"}"#.into())
    );
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: String::new(),
            confidence: None,
            from_finalize: true
        }
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn keepalive_flows_while_no_audio_is_sent() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |o| o.keepalive_interval = Duration::from_millis(100));
    let (sender, _events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    for _ in 0..2 {
        assert_eq!(
            conn.recv().await,
            Got::Text(r#"{"type":"KeepAlive"}"#.into())
        );
    }
    // Audio resets the idle timer: the next message is the audio, not a KeepAlive.
    sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
    assert!(matches!(conn.recv().await, Got::Audio(_)));
}

#[tokio::test]
async fn interims_are_not_forwarded_when_not_asked_for() {
    let mut fake = FakeWs::start().await;
    let stt = provider(&fake, |_| {});
    let mut config = SttConfig::default();
    config.interim_results = false;
    let (_sender, mut events) = stt.connect(config).await.unwrap().split();
    let mut conn = fake.accept().await;
    assert!(conn.uri.contains("interim_results=false"));
    assert!(!conn.uri.contains("utterance_end_ms"));
    conn.send_text(results("partial", false, false, 0.0, 0.1))
        .await;
    conn.send_text(results("", true, false, 0.0, 0.1)).await;
    conn.send_text(results("whole", true, false, 0.0, 0.1))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: "whole".into(),
            confidence: Some(0.9),
            from_finalize: false
        }
    );
}
