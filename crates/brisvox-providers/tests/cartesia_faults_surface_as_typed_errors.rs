//! Failures of the Cartesia adapter against the fake: refused upgrades,
//! refused and hung connections, garbage, a mid-stream drop, no audio in
//! time; and the key never reaches a log line or an error.

mod support_vendors;

use brisvox_core::Epoch;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, ErrorKind, ProviderError, TtsConfig, TtsEvent, TtsProvider};
use brisvox_testkit::{PATIENCE, eventually_async};
use serde_json::json;
use support_vendors::cartesia::{CartesiaScript, FakeCartesia};
use support_vendors::ws::FakeWs;
use support_vendors::{events_until_end, logs, next_event};

const KEY: &str = "sk_car_SECRETKEY42";
/// The timeout a test is about (connect or first audio), in ms.
const SHORT_MS: u64 = 300;
/// Every other timeout: generous, so a loaded machine is not mistaken for a
/// silent vendor.
const PATIENT_MS: u64 = 10_000;

async fn fake(script: CartesiaScript) -> FakeWs {
    FakeWs::start(move || FakeCartesia::new(script.clone())).await
}

fn tts_at(url: String, connect_ms: u64, first_audio_ms: u64) -> CartesiaTts {
    CartesiaTts::new(
        CartesiaConfig::new(ApiKey::new(KEY), "sonic-2", "voice-1")
            .with_url(url)
            .with_timeouts(connect_ms, first_audio_ms),
    )
}

fn url(fake: &FakeWs) -> String {
    format!("ws://{}/tts/websocket", fake.addr)
}

fn tts(fake: &FakeWs) -> CartesiaTts {
    tts_at(url(fake), PATIENT_MS, PATIENT_MS)
}

fn ctx() -> ContextId {
    ContextId::new(Epoch(1), 0)
}

#[tokio::test]
async fn refused_upgrades_are_auth_and_rate_limit_errors() {
    let (captured, _guard) = logs::capture();
    for (status, kind) in [
        (401, ErrorKind::Auth),
        (403, ErrorKind::Auth),
        (429, ErrorKind::RateLimited),
        (503, ErrorKind::Server),
    ] {
        let fake = fake(CartesiaScript::default()).await;
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
async fn a_refused_connection_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let error = tts_at(format!("ws://{addr}/tts/websocket"), PATIENT_MS, PATIENT_MS)
        .connect(TtsConfig::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Connect);
}

#[tokio::test]
async fn a_handshake_that_never_completes_is_a_connect_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let (_tcp, _) = listener.accept().await.unwrap();
        // Holds the connection open and never answers the upgrade.
        std::future::pending::<()>().await;
    });
    let error = tts_at(format!("ws://{addr}/tts/websocket"), SHORT_MS, PATIENT_MS)
        .connect(TtsConfig::default())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::Timeout {
            waiting_for: "websocket connect",
            after_ms: 300
        }
    );
}

#[tokio::test]
async fn a_garbage_message_ends_the_session_with_a_protocol_error() {
    let fake = fake(CartesiaScript {
        garbage: true,
        ..Default::default()
    })
    .await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    session.sender().start_context(ctx()).await.unwrap();
    session.sender().send_text(ctx(), "Hi").await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(
        events,
        vec![TtsEvent::Error {
            ctx: None,
            error: ProviderError::protocol("malformed Cartesia message")
        }]
    );
    assert_eq!(next_event(&mut session).await, TtsEvent::Closed);
}

#[tokio::test]
async fn an_error_without_context_ends_the_session() {
    let error = json!({"type": "error", "done": true, "status_code": 401, "error": format!("bad key {KEY}")});
    let fake = fake(CartesiaScript {
        session_error: Some(error),
        ..Default::default()
    })
    .await;
    let (captured, _guard) = logs::capture();
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    session.sender().start_context(ctx()).await.unwrap();
    session.sender().send_text(ctx(), "Hi").await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(
        events,
        vec![TtsEvent::Error {
            ctx: None,
            error: ProviderError::Auth { status: Some(401) }
        }]
    );
    assert!(
        !captured.text().contains("SECRETKEY"),
        "{}",
        captured.text()
    );
}

#[tokio::test]
async fn a_drop_mid_stream_is_a_disconnect() {
    let fake = fake(CartesiaScript {
        abort_after_first_chunk: true,
        ..Default::default()
    })
    .await;
    let mut session = tts(&fake).connect(TtsConfig::default()).await.unwrap();
    session.sender().start_context(ctx()).await.unwrap();
    session.sender().send_text(ctx(), "Hi").await.unwrap();
    assert!(matches!(
        next_event(&mut session).await,
        TtsEvent::Audio { .. }
    ));
    let event = next_event(&mut session).await;
    assert!(
        matches!(&event, TtsEvent::Error { ctx: None, error } if error.kind() == ErrorKind::Disconnected),
        "{event:?}"
    );
    assert_eq!(next_event(&mut session).await, TtsEvent::Closed);
}

#[tokio::test]
async fn no_audio_in_time_fails_the_context_and_cancels_it() {
    let fake = fake(CartesiaScript {
        silent: true,
        ..Default::default()
    })
    .await;
    let mut session = tts_at(url(&fake), PATIENT_MS, SHORT_MS)
        .connect(TtsConfig::default())
        .await
        .unwrap();
    session.sender().start_context(ctx()).await.unwrap();
    session.sender().send_text(ctx(), "Hi").await.unwrap();
    let events = events_until_end(&mut session).await;
    assert_eq!(
        events,
        vec![TtsEvent::Error {
            ctx: Some(ctx()),
            error: ProviderError::Timeout {
                waiting_for: "first audio",
                after_ms: 300
            }
        }]
    );
    eventually_async(PATIENCE, "the cancel reached the server", || async {
        fake.received().iter().any(|m| m["cancel"] == json!(true))
    })
    .await;
}
