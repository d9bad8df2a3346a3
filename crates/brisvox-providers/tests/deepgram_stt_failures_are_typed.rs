//! Deepgram STT failures surface as typed errors: a refused key, a rate limit,
//! a server error and a slow or absent server at connect time; a garbage
//! message mid-stream is reported and the session goes on. The key never
//! appears in an error (for the logs see `deepgram_key_stays_out_of_logs`).

mod support_deepgram;

use std::time::Duration;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{ErrorKind, ProviderError, SttConfig, SttEvent, SttProvider};
use support_deepgram::{FakeWs, PATIENCE, results};

const KEY: &str = "dg-secret-0d9e1b77";

fn provider_at(url: String, tweak: impl FnOnce(&mut DeepgramSttOptions)) -> DeepgramStt {
    let mut options = DeepgramSttOptions::default();
    options.url = url;
    tweak(&mut options);
    DeepgramStt::new(KEY, options)
}

async fn connect_error(stt: &DeepgramStt) -> ProviderError {
    stt.connect(SttConfig::default()).await.unwrap_err()
}

#[tokio::test]
async fn upgrade_refusals_are_typed() {
    let fake = FakeWs::start().await;
    let stt = provider_at(format!("{}/v1/listen", fake.base), |_| {});
    for status in [401, 403] {
        fake.refuse_next(status, None);
        let error = connect_error(&stt).await;
        assert_eq!(
            error,
            ProviderError::Auth {
                status: Some(status)
            }
        );
        assert!(!error.is_retryable());
    }
    fake.refuse_next(429, Some("2"));
    let error = connect_error(&stt).await;
    assert_eq!(
        error,
        ProviderError::RateLimited {
            retry_after_ms: Some(2000)
        }
    );
    assert!(error.is_retryable());
    fake.refuse_next(500, None);
    assert_eq!(connect_error(&stt).await.kind(), ErrorKind::Server);
}

#[tokio::test]
async fn a_server_that_never_upgrades_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/v1/listen", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    let stt = provider_at(url, |o| o.connect_timeout = Duration::from_millis(200));
    let error = tokio::time::timeout(PATIENCE, connect_error(&stt))
        .await
        .unwrap();
    assert_eq!(
        error,
        ProviderError::Timeout {
            waiting_for: "websocket upgrade",
            after_ms: 200
        }
    );
    hold.abort();
}

#[tokio::test]
async fn no_server_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/v1/listen", listener.local_addr().unwrap());
    drop(listener);
    let error = connect_error(&provider_at(url, |_| {})).await;
    assert_eq!(error.kind(), ErrorKind::Connect);
    assert!(error.is_retryable());
    assert!(!error.to_string().contains(KEY));
}

#[tokio::test]
async fn garbage_mid_stream_is_reported_and_the_session_goes_on() {
    let mut fake = FakeWs::start().await;
    let stt = provider_at(format!("{}/v1/listen", fake.base), |_| {});
    let (_sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    conn.send_text("<html>502 Bad Gateway</html>").await;
    conn.send_text(r#"{"type":"Results","channel":{"alternatives":[]}}"#)
        .await;
    conn.send_text(r#"{"type":"SomethingNew","x":1}"#).await;
    conn.send_text(results("fine", true, false, 0.0, 0.5)).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            tokio::time::timeout(PATIENCE, events.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert!(matches!(&got[0], SttEvent::Error(e) if e.kind() == ErrorKind::Protocol));
    assert!(matches!(&got[1], SttEvent::Error(e) if e.kind() == ErrorKind::Protocol));
    assert!(matches!(&got[2], SttEvent::Final { text, .. } if text == "fine"));
    assert!(
        !format!("{got:?}").contains("Bad Gateway"),
        "no message content in errors"
    );
}
