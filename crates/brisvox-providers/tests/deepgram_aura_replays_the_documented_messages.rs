//! Deepgram's own documented examples for Aura, the streaming TTS
//! (tests/fixtures/vendors/deepgram/aura_*): the adapter produces the
//! documented Speak, Flush, Clear and Close messages and accepts the
//! documented Flushed and Cleared replies (copied with the blank line the
//! pages show), a Metadata built from the reference's schema (no example is
//! published) and each close frame the reference lists, which ends the
//! session with an error naming Deepgram's code.

mod support_deepgram;
mod support_fixtures;

use brisvox_core::Epoch;
use brisvox_providers::deepgram::{DeepgramAura, DeepgramAuraOptions};
use brisvox_providers::{
    ContextId, ErrorKind, TtsConfig, TtsEvent, TtsEvents, TtsProvider, TtsSender,
};
use serde_json::Value;
use support_deepgram::{FakeConn, FakeWs, Got, PATIENCE};

fn provider(fake: &FakeWs) -> DeepgramAura {
    let mut options = DeepgramAuraOptions::default();
    options.url = format!("{}/v1/speak", fake.base);
    DeepgramAura::new("dg-aura-key", options)
}

async fn next(events: &mut TtsEvents) -> TtsEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

/// The client's next message, which must be text, as JSON.
async fn next_json(conn: &mut FakeConn) -> Value {
    match conn.recv().await {
        Got::Text(t) => serde_json::from_str(&t).unwrap(),
        other => panic!("expected a text message, got {other:?}"),
    }
}

fn fixture(name: &str) -> Value {
    support_fixtures::json("deepgram", name)
}

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

fn le(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// Speaks the documented Speak text in `c` and checks the documented Speak
/// and Flush went out.
async fn speak_documented_text(tts: &TtsSender, conn: &mut FakeConn, c: ContextId) {
    let speak = fixture("aura_speak_request.json");
    tts.start_context(c).await.unwrap();
    tts.send_text(c, speak["text"].as_str().unwrap())
        .await
        .unwrap();
    tts.flush(c).await.unwrap();
    assert_eq!(next_json(conn).await, speak);
    assert_eq!(next_json(conn).await, fixture("aura_flush_request.json"));
}

#[tokio::test]
async fn the_documented_messages_in_order() {
    let mut fake = FakeWs::start().await;
    let (tts, mut events) = provider(&fake)
        .connect(TtsConfig::default())
        .await
        .unwrap()
        .split();
    let mut conn = fake.accept().await;
    // Sent right after the handshake (the reference's Metadata description).
    conn.send_text(support_fixtures::text(
        "deepgram",
        "aura_metadata_from_schema.json",
    ))
    .await;

    speak_documented_text(&tts, &mut conn, ctx(1)).await;
    conn.send_binary(le(&[10, -10])).await;
    conn.send_text(support_fixtures::text(
        "deepgram",
        "aura_flushed_response.json",
    ))
    .await;
    assert_eq!(
        next(&mut events).await,
        TtsEvent::Audio {
            ctx: ctx(1),
            samples: vec![10, -10],
            sample_rate_hz: 24_000
        }
    );
    assert_eq!(next(&mut events).await, TtsEvent::Done { ctx: ctx(1) });

    // Barge-in: the documented Clear; audio until the documented Cleared is
    // the cleared text's, audio after it the next context's.
    speak_documented_text(&tts, &mut conn, ctx(2)).await;
    tts.cancel(ctx(2));
    assert_eq!(
        next_json(&mut conn).await,
        fixture("aura_clear_request.json")
    );
    conn.send_binary(le(&[99, 99])).await;
    conn.send_text(support_fixtures::text(
        "deepgram",
        "aura_cleared_response.json",
    ))
    .await;
    speak_documented_text(&tts, &mut conn, ctx(3)).await;
    conn.send_binary(le(&[3])).await;
    conn.send_text(support_fixtures::text(
        "deepgram",
        "aura_flushed_response.json",
    ))
    .await;
    assert_eq!(
        next(&mut events).await,
        TtsEvent::Audio {
            ctx: ctx(3),
            samples: vec![3],
            sample_rate_hz: 24_000
        }
    );
    assert_eq!(next(&mut events).await, TtsEvent::Done { ctx: ctx(3) });

    tts.close().await.unwrap();
    assert_eq!(
        next_json(&mut conn).await,
        fixture("aura_close_request.json")
    );
    // "1000 Normal Closure" after the Close (the Close page).
    conn.close(1000, "").await;
    assert_eq!(next(&mut events).await, TtsEvent::Closed);
}

#[tokio::test]
async fn each_documented_close_frame_ends_the_session_naming_its_code() {
    let frames = fixture("aura_close_frames.json");
    let frames = frames.as_array().unwrap();
    assert!(!frames.is_empty());
    let mut fake = FakeWs::start().await;
    for frame in frames {
        let code = u16::try_from(frame["code"].as_u64().unwrap()).unwrap();
        let reason = frame["payload"].as_str().unwrap();
        let (tts, mut events) = provider(&fake)
            .connect(TtsConfig::default())
            .await
            .unwrap()
            .split();
        let mut conn = fake.accept().await;
        speak_documented_text(&tts, &mut conn, ctx(1)).await;
        conn.close(code, reason).await;
        match next(&mut events).await {
            TtsEvent::Error { ctx: None, error } => {
                assert_eq!(error.kind(), ErrorKind::Disconnected, "{code} {reason}");
                let text = error.to_string();
                assert!(
                    text.contains(&code.to_string()) && text.contains(reason),
                    "{code} {reason}: {text}"
                );
            }
            other => panic!("{code} {reason}: expected a session error, got {other:?}"),
        }
        assert_eq!(next(&mut events).await, TtsEvent::Closed);
    }
}
