//! The ElevenLabs adapter against a fake multi-context websocket: per-response
//! contexts, flush and close_context at the end, close_context on barge-in,
//! keep-alive, and one socket across responses.

mod support_vendors;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider};
use brisvox_testkit::{PATIENCE, eventually_async};
use serde_json::json;
use support_vendors::elevenlabs::{ElevenLabsScript, FakeElevenLabs, samples_for};
use support_vendors::ws::FakeWs;
use support_vendors::{audio_of, events_until_end, next_event};

async fn fake(script: ElevenLabsScript) -> FakeWs {
    FakeWs::start(move || FakeElevenLabs::new(script.clone())).await
}

fn tts(fake: &FakeWs) -> ElevenLabsTts {
    ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new("xi-test-key"), "eleven_flash_v2_5", "voice1")
            .with_base_url(format!("ws://{}", fake.addr)),
    )
}

fn ctx(epoch: u64, seq: u32) -> ContextId {
    ContextId::new(Epoch(epoch), seq)
}

#[tokio::test]
async fn a_response_is_one_context_flushed_and_closed_at_the_end() {
    let fake = fake(ElevenLabsScript::default()).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Hi,").await.unwrap();
    session.sender().send_text(c, "there.").await.unwrap();
    session.sender().flush(c).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(events.last(), Some(&TtsEvent::Done { ctx: c }));
    assert_eq!(
        audio_of(&events),
        [samples_for("Hi,"), samples_for("there.")].concat()
    );
    assert!(events.iter().all(
        |e| !matches!(e, TtsEvent::Audio { sample_rate_hz, .. } if *sample_rate_hz != 24_000)
    ));

    let r = fake.received();
    let wire = r[0]["context_id"].clone();
    assert_eq!(r[0], json!({"text": "Hi, ", "context_id": wire}));
    assert_eq!(r[1], json!({"text": "there. ", "context_id": wire}));
    assert_eq!(r[2], json!({"context_id": wire, "flush": true}));
    assert_eq!(r[3], json!({"context_id": wire, "close_context": true}));
    let conn = &fake.conns()[0];
    assert_eq!(conn.header("xi-api-key"), Some("xi-test-key"));
    assert!(
        conn.uri
            .starts_with("/v1/text-to-speech/voice1/multi-stream-input?"),
        "{}",
        conn.uri
    );
    assert!(
        conn.uri.contains("model_id=eleven_flash_v2_5")
            && conn.uri.contains("output_format=pcm_24000")
    );
    assert!(!conn.uri.contains("xi-test-key"));

    let c2 = ctx(2, 1);
    session.sender().start_context(c2).await.unwrap();
    session.sender().send_text(c2, "Again.").await.unwrap();
    session.sender().flush(c2).await.unwrap();
    assert_eq!(
        events_until_end(&mut session).await.last(),
        Some(&TtsEvent::Done { ctx: c2 })
    );
    assert_eq!(fake.conns().len(), 1);
    session.sender().close().await.unwrap();
    assert_eq!(next_event(&mut session).await, TtsEvent::Closed);
    eventually_async(PATIENCE, "close_socket reached the server", || async {
        fake.received().last() == Some(&json!({"close_socket": true}))
    })
    .await;
}

#[tokio::test]
async fn the_first_audio_arrives_before_the_flush() {
    let fake = fake(ElevenLabsScript::default()).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Okay,").await.unwrap();
    assert!(matches!(next_event(&mut session).await, TtsEvent::Audio { ctx, .. } if ctx == c));
    // No flush was sent: the text went out at once.
    let received = fake.received();
    assert!(
        received.iter().all(|m| m["flush"] != json!(true)),
        "{received:?}"
    );
}

#[tokio::test]
async fn barge_in_closes_the_context_and_drops_its_late_audio() {
    let fake = fake(ElevenLabsScript {
        stale_audio_on_close: true,
        ..Default::default()
    })
    .await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Long answer").await.unwrap();
    assert!(matches!(
        next_event(&mut session).await,
        TtsEvent::Audio { .. }
    ));
    session.sender().cancel(c);
    let c2 = ctx(2, 1);
    session.sender().start_context(c2).await.unwrap();
    session.sender().send_text(c2, "New.").await.unwrap();
    session.sender().flush(c2).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert!(events.iter().all(|e| e.ctx() == Some(c2)), "{events:?}");
    assert_eq!(audio_of(&events), samples_for("New."));
    let r = fake.received();
    let wire = r[0]["context_id"].clone();
    assert_eq!(r[1], json!({"context_id": wire, "close_context": true}));
}

#[tokio::test]
async fn an_idle_session_sends_keep_alives_for_open_contexts() {
    let fake = fake(ElevenLabsScript::default()).await;
    let tts = ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new("k"), "m", "v")
            .with_base_url(format!("ws://{}", fake.addr))
            .with_keepalive(100),
    );
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Thinking").await.unwrap();
    assert!(matches!(
        next_event(&mut session).await,
        TtsEvent::Audio { .. }
    ));
    // Keep-alives every 100 ms while the context stays open: wait for two.
    eventually_async(PATIENCE, "two keep-alives and two pings", || async {
        let r = fake.received();
        let wire = r[0]["context_id"].clone();
        let keepalive = json!({"context_id": wire, "text": ""});
        r.iter().filter(|m| **m == keepalive).count() >= 2 && fake.pings() >= 2
    })
    .await;
    // Nothing was spoken by the keep-alives.
    assert!(
        session.sender().is_closed()
            || tokio::time::timeout(Duration::from_millis(50), session.recv())
                .await
                .is_err()
    );
}

#[tokio::test]
async fn an_empty_response_is_done_without_opening_a_vendor_context() {
    let fake = fake(ElevenLabsScript::default()).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().flush(c).await.unwrap();
    assert_eq!(next_event(&mut session).await, TtsEvent::Done { ctx: c });
    let c2 = ctx(1, 1);
    session.sender().start_context(c2).await.unwrap();
    session.sender().send_text(c2, "Next.").await.unwrap();
    session.sender().flush(c2).await.unwrap();
    assert_eq!(
        events_until_end(&mut session).await.last(),
        Some(&TtsEvent::Done { ctx: c2 })
    );
    assert!(
        fake.received()
            .iter()
            .all(|m| m["context_id"] != json!("brisvox-1-0")),
        "{:?}",
        fake.received()
    );
}
