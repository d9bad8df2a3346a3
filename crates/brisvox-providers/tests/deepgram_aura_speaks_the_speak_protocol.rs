//! The Deepgram Aura adapter against a fake `/v1/speak`: one Speak per chunk,
//! one Flush per context, binary linear16 to audio events, Flushed to Done,
//! and a cancel sends Clear, after which stale audio is dropped until Aura's
//! Cleared and later audio belongs to the next context.

mod support_deepgram;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::deepgram::{DeepgramAura, DeepgramAuraOptions};
use brisvox_providers::{ContextId, ProviderError, TtsConfig, TtsEvent, TtsEvents, TtsProvider};
use support_deepgram::{FakeWs, Got, PATIENCE};

const KEY: &str = "dg-aura-key-51c0";

fn provider(fake: &FakeWs, tweak: impl FnOnce(&mut DeepgramAuraOptions)) -> DeepgramAura {
    let mut options = DeepgramAuraOptions::default();
    options.url = format!("{}/v1/speak", fake.base);
    tweak(&mut options);
    DeepgramAura::new(KEY, options)
}

async fn next(events: &mut TtsEvents) -> TtsEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

fn le(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

#[tokio::test]
async fn speak_flush_audio_flushed_and_close() {
    let mut fake = FakeWs::start().await;
    let aura = provider(&fake, |_| {});
    let (tts, mut events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    assert_eq!(conn.auth.as_deref(), Some(format!("Token {KEY}").as_str()));
    assert_eq!(
        conn.uri,
        "/v1/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=24000"
    );

    tts.start_context(ctx(1)).await.unwrap();
    tts.send_text(ctx(1), "Hello there, ").await.unwrap();
    tts.send_text(ctx(1), "how are you?").await.unwrap();
    tts.flush(ctx(1)).await.unwrap();
    assert_eq!(
        conn.recv().await,
        Got::Text(r#"{"text":"Hello there, ","type":"Speak"}"#.into())
    );
    assert_eq!(
        conn.recv().await,
        Got::Text(r#"{"text":"how are you?","type":"Speak"}"#.into())
    );
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Flush"}"#.into()));

    // Three samples split across two messages at an odd byte.
    let bytes = le(&[100, -200, 300]);
    conn.send_binary(bytes[..3].to_vec()).await;
    conn.send_binary(bytes[3..].to_vec()).await;
    conn.send_text(r#"{"type":"Metadata","request_id":"x","model_name":"aura-2-thalia-en"}"#)
        .await;
    conn.send_text(r#"{"type":"Flushed","sequence_id":0}"#)
        .await;
    let mut samples = Vec::new();
    loop {
        match next(&mut events).await {
            TtsEvent::Audio {
                ctx: c,
                samples: s,
                sample_rate_hz,
            } => {
                assert_eq!((c, sample_rate_hz), (ctx(1), 24_000));
                samples.extend(s);
            }
            TtsEvent::Done { ctx: c } => {
                assert_eq!(c, ctx(1));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(samples, [100, -200, 300]);

    tts.close().await.unwrap();
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Close"}"#.into()));
    assert_eq!(next(&mut events).await, TtsEvent::Closed);
}

#[tokio::test]
async fn a_cancel_clears_and_the_next_context_gets_only_fresh_audio() {
    let mut fake = FakeWs::start().await;
    let aura = provider(&fake, |_| {});
    let mut config = TtsConfig::default();
    config.voice = Some("aura-2-andromeda-en".into());
    config.sample_rate_hz = 16_000;
    let (tts, mut events) = aura.connect(config).await.unwrap().split();
    let mut conn = fake.accept().await;
    assert!(conn.uri.contains("model=aura-2-andromeda-en"));
    assert!(conn.uri.contains("sample_rate=16000"));

    tts.start_context(ctx(1)).await.unwrap();
    tts.send_text(ctx(1), "A long answer.").await.unwrap();
    tts.flush(ctx(1)).await.unwrap();
    assert!(matches!(conn.recv().await, Got::Text(t) if t.contains("Speak")));
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Flush"}"#.into()));
    conn.send_binary(le(&[1, 1])).await;
    assert!(matches!(next(&mut events).await, TtsEvent::Audio { ctx: c, .. } if c == ctx(1)));

    // Barge-in, then the next response at once.
    tts.cancel(ctx(1));
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Clear"}"#.into()));
    tts.start_context(ctx(2)).await.unwrap();
    tts.send_text(ctx(2), "Sure.").await.unwrap();
    tts.flush(ctx(2)).await.unwrap();
    assert!(matches!(conn.recv().await, Got::Text(t) if t.contains("Sure.")));
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Flush"}"#.into()));

    // Audio of the cleared text still in flight, its Flushed, then Cleared.
    conn.send_binary(le(&[9, 9, 9])).await;
    conn.send_text(r#"{"type":"Flushed","sequence_id":0}"#)
        .await;
    conn.send_text(r#"{"type":"Cleared","sequence_id":1}"#)
        .await;
    conn.send_binary(le(&[7, 7])).await;
    conn.send_text(r#"{"type":"Flushed","sequence_id":1}"#)
        .await;
    assert_eq!(
        next(&mut events).await,
        TtsEvent::Audio {
            ctx: ctx(2),
            samples: vec![7, 7],
            sample_rate_hz: 16_000
        }
    );
    assert_eq!(next(&mut events).await, TtsEvent::Done { ctx: ctx(2) });
}

#[tokio::test]
async fn a_context_without_text_is_done_without_a_flush() {
    let mut fake = FakeWs::start().await;
    let aura = provider(&fake, |_| {});
    let (tts, mut events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    tts.start_context(ctx(1)).await.unwrap();
    tts.flush(ctx(1)).await.unwrap();
    assert_eq!(next(&mut events).await, TtsEvent::Done { ctx: ctx(1) });
    tts.close().await.unwrap();
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Close"}"#.into()));
}

#[tokio::test]
async fn no_audio_after_a_flush_fails_that_context_only() {
    let mut fake = FakeWs::start().await;
    let aura = provider(&fake, |o| {
        o.first_audio_timeout = Duration::from_millis(200)
    });
    let (tts, mut events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    // Taken before the context starts: the adapter's deadline cannot start earlier.
    let started = std::time::Instant::now();
    tts.start_context(ctx(1)).await.unwrap();
    tts.send_text(ctx(1), "Hello.").await.unwrap();
    tts.flush(ctx(1)).await.unwrap();
    assert_eq!(
        next(&mut events).await,
        TtsEvent::Error {
            ctx: Some(ctx(1)),
            error: ProviderError::Timeout {
                waiting_for: "first audio",
                after_ms: 200
            }
        }
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    conn.recv().await; // Speak
    conn.recv().await; // Flush
    assert_eq!(conn.recv().await, Got::Text(r#"{"type":"Clear"}"#.into()));
    // The session still works for the next context.
    conn.send_text(r#"{"type":"Cleared","sequence_id":0}"#)
        .await;
    tts.start_context(ctx(2)).await.unwrap();
    tts.send_text(ctx(2), "Again.").await.unwrap();
    tts.flush(ctx(2)).await.unwrap();
    conn.recv().await;
    conn.recv().await;
    conn.send_binary(le(&[5])).await;
    assert!(matches!(next(&mut events).await, TtsEvent::Audio { ctx: c, .. } if c == ctx(2)));
}
