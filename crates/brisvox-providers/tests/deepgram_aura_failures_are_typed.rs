//! Deepgram Aura failures surface as typed errors: refused upgrades at
//! connect; an unreadable message or a dropped socket mid-stream ends the
//! session with an error and Closed.

mod support_deepgram;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::deepgram::{DeepgramAura, DeepgramAuraOptions};
use brisvox_providers::{ContextId, ErrorKind, ProviderError, TtsConfig, TtsEvent, TtsProvider};
use support_deepgram::{FakeWs, PATIENCE};

const KEY: &str = "dg-aura-secret-99aa";

fn provider_at(url: String, tweak: impl FnOnce(&mut DeepgramAuraOptions)) -> DeepgramAura {
    let mut options = DeepgramAuraOptions::default();
    options.url = url;
    tweak(&mut options);
    DeepgramAura::new(KEY, options)
}

#[tokio::test]
async fn refused_upgrades_are_typed() {
    let fake = FakeWs::start().await;
    let aura = provider_at(format!("{}/v1/speak", fake.base), |_| {});
    fake.refuse_next(401, None);
    let error = aura.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(error, ProviderError::Auth { status: Some(401) });
    fake.refuse_next(429, Some("7"));
    let error = aura.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(
        error,
        ProviderError::RateLimited {
            retry_after_ms: Some(7000)
        }
    );
    assert!(!format!("{error:?}").contains(KEY));
}

#[tokio::test]
async fn a_slow_upgrade_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/v1/speak", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    let aura = provider_at(url, |o| o.connect_timeout = Duration::from_millis(150));
    let error = aura.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Timeout {
            waiting_for: "websocket upgrade",
            after_ms: 150
        }
    );
    hold.abort();
}

#[tokio::test]
async fn garbage_ends_the_session_with_a_protocol_error() {
    let mut fake = FakeWs::start().await;
    let aura = provider_at(format!("{}/v1/speak", fake.base), |_| {});
    let (_tts, mut events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    conn.send_text("{{{ definitely not json").await;
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&event, TtsEvent::Error { ctx: None, error } if error.kind() == ErrorKind::Protocol),
        "{event:?}"
    );
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, TtsEvent::Closed);
}

#[tokio::test]
async fn a_mid_stream_close_ends_the_session_with_a_disconnect() {
    let mut fake = FakeWs::start().await;
    let aura = provider_at(format!("{}/v1/speak", fake.base), |_| {});
    let (tts, mut events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let ctx = ContextId::new(Epoch(2), 1);
    tts.start_context(ctx).await.unwrap();
    tts.send_text(ctx, "Hi.").await.unwrap();
    let conn = fake.accept().await;
    conn.close(1011, "internal").await;
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    let TtsEvent::Error { ctx: None, error } = event else {
        panic!("expected a session error, got {event:?}")
    };
    assert_eq!(error.kind(), ErrorKind::Disconnected);
    assert!(error.to_string().contains("1011"), "{error}");
    assert!(error.is_retryable());
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, TtsEvent::Closed);
}
