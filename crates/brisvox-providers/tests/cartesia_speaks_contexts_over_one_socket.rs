//! The Cartesia adapter against a fake Cartesia websocket: contexts with
//! `continue`, audio as PCM, barge-in cancels, concurrency-limit refusals
//! re-opened after a pause, and one socket across responses.

mod support_vendors;

use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider};
use brisvox_testkit::{PATIENCE, eventually_async};
use serde_json::json;
use support_vendors::cartesia::{CartesiaScript, FakeCartesia, samples_for};
use support_vendors::ws::FakeWs;
use support_vendors::{audio_of, events_until_end, next_event};

async fn fake(script: CartesiaScript) -> FakeWs {
    FakeWs::start(move || FakeCartesia::new(script.clone())).await
}

fn tts(fake: &FakeWs) -> CartesiaTts {
    CartesiaTts::new(
        CartesiaConfig::new(ApiKey::new("cartesia-test-key"), "sonic-2", "voice-1")
            .with_url(format!("ws://{}/tts/websocket", fake.addr))
            .with_refusal_retries(4, 300),
    )
}

fn ctx(epoch: u64, seq: u32) -> ContextId {
    ContextId::new(Epoch(epoch), seq)
}

#[tokio::test]
async fn a_response_streams_with_continue_and_ends_with_done() {
    let fake = fake(CartesiaScript::default()).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Hi, ").await.unwrap();
    session.sender().send_text(c, "there.").await.unwrap();
    session.sender().flush(c).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(events.last(), Some(&TtsEvent::Done { ctx: c }));
    assert_eq!(
        audio_of(&events),
        [samples_for("Hi, "), samples_for("there.")].concat()
    );
    assert!(events.iter().all(
        |e| !matches!(e, TtsEvent::Audio { sample_rate_hz, .. } if *sample_rate_hz != 24_000)
    ));

    let received = fake.received();
    assert_eq!(received.len(), 3);
    let wire = received[0]["context_id"].clone();
    assert!(received.iter().all(|m| m["context_id"] == wire));
    assert_eq!(
        (&received[0]["transcript"], &received[0]["continue"]),
        (&json!("Hi, "), &json!(true))
    );
    assert_eq!(
        (&received[2]["transcript"], &received[2]["continue"]),
        (&json!(""), &json!(false))
    );
    assert_eq!(received[0]["output_format"]["encoding"], "pcm_s16le");
    assert_eq!(received[0]["voice"], json!({"mode": "id", "id": "voice-1"}));
    let conn = &fake.conns()[0];
    // Current reference: `Authorization: Bearer` (docs/providers/cartesia.md).
    assert_eq!(
        conn.header("authorization"),
        Some("Bearer cartesia-test-key")
    );
    assert_eq!(received[0]["max_buffer_delay_ms"], 0);
    assert!(conn.header("cartesia-version").is_some());
    assert!(!conn.uri.contains("cartesia-test-key"));

    // The next response uses the same socket and a new context id.
    let c2 = ctx(2, 1);
    session.sender().start_context(c2).await.unwrap();
    session.sender().send_text(c2, "Again.").await.unwrap();
    session.sender().flush(c2).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(events.last(), Some(&TtsEvent::Done { ctx: c2 }));
    assert_eq!(fake.conns().len(), 1);
    assert_ne!(fake.received()[3]["context_id"], wire);
}

#[tokio::test]
async fn the_first_audio_arrives_before_the_flush() {
    let fake = fake(CartesiaScript::default()).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Okay,").await.unwrap();
    let first = next_event(&mut session).await;
    assert!(matches!(first, TtsEvent::Audio { ctx, .. } if ctx == c));
    // No flush (`continue: false`) was sent: the text went out at once.
    let received = fake.received();
    assert!(
        received.iter().all(|m| m["continue"] == json!(true)),
        "{received:?}"
    );
}

#[tokio::test]
async fn barge_in_cancels_the_context_and_drops_its_late_audio() {
    let script = CartesiaScript {
        stale_chunk_after_cancel: true,
        ..Default::default()
    };
    let fake = fake(script).await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Long answer").await.unwrap();
    assert!(matches!(
        next_event(&mut session).await,
        TtsEvent::Audio { .. }
    ));
    session.sender().cancel(c);
    // Wait until the fake has the cancel (and has sent its stale chunk).
    eventually_async(PATIENCE, "the cancel reached the server", || async {
        fake.received().iter().any(|m| m["cancel"] == json!(true))
    })
    .await;
    let cancel = fake
        .received()
        .into_iter()
        .find(|m| m["cancel"] == json!(true))
        .unwrap();
    assert_eq!(cancel["context_id"], fake.received()[0]["context_id"]);
    // A new context works and nothing of the cancelled one comes out.
    let c2 = ctx(2, 1);
    session.sender().start_context(c2).await.unwrap();
    session.sender().send_text(c2, "New.").await.unwrap();
    session.sender().flush(c2).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert!(events.iter().all(|e| e.ctx() == Some(c2)), "{events:?}");
    assert_eq!(audio_of(&events), samples_for("New."));
}

#[tokio::test]
async fn a_context_refused_for_concurrency_is_reopened_after_300_ms() {
    let fake = fake(CartesiaScript {
        refusals: 2,
        ..Default::default()
    })
    .await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    let start = Instant::now();
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Hello ").await.unwrap();
    session.sender().send_text(c, "world.").await.unwrap();
    session.sender().flush(c).await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(events.last(), Some(&TtsEvent::Done { ctx: c }));
    assert_eq!(
        audio_of(&events),
        [samples_for("Hello "), samples_for("world.")].concat()
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(600),
        "two refusals must cost two pauses: {took:?}"
    );
    let mut ids: Vec<String> = fake
        .received()
        .iter()
        .map(|m| m["context_id"].as_str().unwrap().to_owned())
        .collect();
    ids.dedup();
    assert_eq!(
        ids.len(),
        3,
        "each re-opening uses a fresh context id: {ids:?}"
    );
}

#[tokio::test]
async fn a_context_refused_past_the_retries_fails_alone() {
    let fake = fake(CartesiaScript {
        refusals: 100,
        ..Default::default()
    })
    .await;
    let tts = CartesiaTts::new(
        CartesiaConfig::new(ApiKey::new("k"), "sonic-2", "voice-1")
            .with_url(format!("ws://{}/tts/websocket", fake.addr))
            .with_refusal_retries(4, 20),
    );
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let c = ctx(1, 0);
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Hi.").await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(
        events,
        vec![TtsEvent::Error {
            ctx: Some(c),
            error: ProviderError::RateLimited {
                retry_after_ms: None
            }
        }]
    );
    let mut ids: Vec<_> = fake
        .received()
        .iter()
        .map(|m| m["context_id"].clone())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "the first try and four re-openings");
    // The session itself is still usable.
    assert!(!session.sender().is_closed());
}
