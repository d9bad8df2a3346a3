//! Failures of the ElevenLabs adapter against the fake: refused upgrades, an
//! invalid-key close, too many contexts, garbage, a mid-stream drop, no audio
//! in time; and the key never reaches a log line or an error.

mod support_vendors;

use brisvox_core::Epoch;
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, ErrorKind, ProviderError, TtsConfig, TtsEvent, TtsProvider};
use brisvox_testkit::{PATIENCE, eventually_async};
use serde_json::json;
use support_vendors::elevenlabs::{ElevenLabsScript, FakeElevenLabs};
use support_vendors::ws::FakeWs;
use support_vendors::{events_until_end, logs, next_event};

const KEY: &str = "sk_xi_SECRETKEY77";
/// The first-audio timeout of the test about it, in ms.
const SHORT_MS: u64 = 300;
/// Every other timeout: generous, so a loaded machine is not mistaken for a
/// silent vendor.
const PATIENT_MS: u64 = 10_000;

async fn fake(script: ElevenLabsScript) -> FakeWs {
    FakeWs::start(move || FakeElevenLabs::new(script.clone())).await
}

fn tts_with(fake: &FakeWs, first_audio_ms: u64) -> ElevenLabsTts {
    ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new(KEY), "eleven_flash_v2_5", "voice1")
            .with_base_url(format!("ws://{}", fake.addr))
            .with_timeouts(PATIENT_MS, first_audio_ms),
    )
}

fn tts(fake: &FakeWs) -> ElevenLabsTts {
    tts_with(fake, PATIENT_MS)
}

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

async fn speak(tts: &ElevenLabsTts) -> Vec<TtsEvent> {
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    session.sender().start_context(ctx(0)).await.unwrap();
    session.sender().send_text(ctx(0), "Hi").await.unwrap();
    let mut events = events_until_end(&mut session).await;
    if matches!(events.last(), Some(TtsEvent::Error { ctx: None, .. })) {
        events.push(next_event(&mut session).await);
    }
    events
}

fn session_error(events: &[TtsEvent]) -> &ProviderError {
    match events {
        [.., TtsEvent::Error { ctx: None, error }, TtsEvent::Closed] => error,
        other => panic!("expected a session error then Closed: {other:?}"),
    }
}

#[tokio::test]
async fn refused_upgrades_are_auth_and_rate_limit_errors() {
    let (captured, _guard) = logs::capture();
    for (status, kind) in [
        (401, ErrorKind::Auth),
        (403, ErrorKind::Auth),
        (429, ErrorKind::RateLimited),
    ] {
        let fake = fake(ElevenLabsScript::default()).await;
        fake.refuse_with(status);
        let error = tts(&fake).connect(TtsConfig::default()).await.unwrap_err();
        assert_eq!(error.kind(), kind, "{status}: {error}");
        assert!(!format!("{error} {error:?}").contains(KEY));
    }
    assert!(
        !captured.text().contains("SECRETKEY"),
        "{}",
        captured.text()
    );
}

#[tokio::test]
async fn an_invalid_key_close_is_an_auth_error() {
    let (captured, _guard) = logs::capture();
    let fake = fake(ElevenLabsScript {
        close_invalid_key: true,
        ..Default::default()
    })
    .await;
    let events = speak(&tts(&fake)).await;
    assert_eq!(
        session_error(&events),
        &ProviderError::Auth { status: None }
    );
    assert!(
        !captured.text().contains("SECRETKEY"),
        "{}",
        captured.text()
    );
}

#[tokio::test]
async fn a_garbage_message_is_a_protocol_error() {
    let fake = fake(ElevenLabsScript {
        garbage: true,
        ..Default::default()
    })
    .await;
    let events = speak(&tts(&fake)).await;
    assert_eq!(
        session_error(&events),
        &ProviderError::protocol("malformed ElevenLabs message")
    );
}

#[tokio::test]
async fn a_drop_mid_stream_is_a_disconnect() {
    let fake = fake(ElevenLabsScript {
        abort_after_first_chunk: true,
        ..Default::default()
    })
    .await;
    let events = speak(&tts(&fake)).await;
    assert!(matches!(events[0], TtsEvent::Audio { .. }));
    let mut session_events = events;
    if !matches!(session_events.last(), Some(TtsEvent::Closed)) {
        panic!("{session_events:?}");
    }
    session_events.remove(0);
    assert_eq!(
        session_error(&session_events).kind(),
        ErrorKind::Disconnected
    );
}

#[tokio::test]
async fn no_audio_in_time_fails_the_context_and_closes_it() {
    let fake = fake(ElevenLabsScript {
        silent: true,
        ..Default::default()
    })
    .await;
    let events = speak(&tts_with(&fake, SHORT_MS)).await;
    assert_eq!(
        events,
        vec![TtsEvent::Error {
            ctx: Some(ctx(0)),
            error: ProviderError::Timeout {
                waiting_for: "first audio",
                after_ms: 300
            }
        }]
    );
    eventually_async(PATIENCE, "the close_context reached the server", || async {
        fake.received()
            .iter()
            .any(|m| m["close_context"] == json!(true))
    })
    .await;
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let tts = ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new(KEY), "m", "v").with_base_url(format!("ws://{addr}")),
    );
    let error = tts.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Connect);
    assert!(
        !error.to_string().contains('?'),
        "no query in errors: {error}"
    );
}
