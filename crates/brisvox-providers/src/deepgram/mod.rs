//! Deepgram adapters: live streaming STT ([`DeepgramStt`], `wss://…/v1/listen`)
//! and Aura streaming TTS ([`DeepgramAura`], `wss://…/v1/speak`).
//!
//! Each session is one provider task that owns one websocket and speaks
//! Deepgram's documented protocol: JSON control messages and binary PCM16
//! audio. The wire types and their parsing live in [`protocol`] (plain
//! functions, no I/O); the tasks only move bytes between the socket and the
//! session's channels.
//!
//! # Keys
//!
//! The API key travels only in the `Authorization: Token …` header of the
//! websocket upgrade. It is never put in a URL, a log line or an error; the
//! provider structs print it as `<redacted>`, and URLs are logged through
//! [`crate::error::redact_url`].

pub mod aura;
pub mod protocol;
pub mod stt;

pub use aura::{DeepgramAura, DeepgramAuraOptions};
pub use stt::{DeepgramStt, DeepgramSttOptions};

use std::borrow::Cow;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Error as WsError};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::ProviderError;
use crate::error::redact_url;

/// A connected Deepgram websocket.
pub(crate) type DeepgramSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens a websocket to `url` with `Authorization: Token <key>`, within `timeout`.
///
/// Errors: 401/403 at the upgrade are [`ProviderError::Auth`], 429 is
/// [`ProviderError::RateLimited`] (with `Retry-After` when given), 5xx is
/// [`ProviderError::Server`], a late upgrade is [`ProviderError::Timeout`]
/// ("websocket upgrade"), anything else [`ProviderError::Connect`].
pub(crate) async fn connect_socket(
    url: &str,
    key: &str,
    timeout: Duration,
) -> Result<DeepgramSocket, ProviderError> {
    let mut request = url
        .into_client_request()
        .map_err(|_| ProviderError::connect("invalid Deepgram URL"))?;
    let mut auth = HeaderValue::from_str(&format!("Token {key}"))
        .map_err(|_| ProviderError::connect("the API key is not a valid header value"))?;
    auth.set_sensitive(true);
    request.headers_mut().insert("Authorization", auth);
    let attempt = tokio_tungstenite::connect_async(request);
    match tokio::time::timeout(timeout, attempt).await {
        Err(_) => Err(ProviderError::Timeout {
            waiting_for: "websocket upgrade",
            after_ms: duration_ms(timeout),
        }),
        Ok(Ok((socket, _response))) => Ok(socket),
        Ok(Err(error)) => {
            let error = upgrade_error(error);
            tracing::warn!(url = %redact_url(url), %error, "Deepgram connect failed");
            Err(error)
        }
    }
}

/// Maps a failed upgrade to a [`ProviderError`] without echoing the request.
fn upgrade_error(error: WsError) -> ProviderError {
    match error {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            match status {
                401 | 403 => ProviderError::Auth {
                    status: Some(status),
                },
                429 => ProviderError::RateLimited {
                    retry_after_ms: response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| s.saturating_mul(1000)),
                },
                _ => ProviderError::Server {
                    status,
                    reason: Cow::Borrowed("websocket upgrade refused"),
                },
            }
        }
        WsError::Io(io) => ProviderError::Connect {
            reason: Cow::Owned(format!("{:?}", io.kind())),
        },
        WsError::Tls(_) => ProviderError::connect("TLS handshake failed"),
        WsError::Url(_) => ProviderError::connect("invalid Deepgram URL"),
        _ => ProviderError::connect("websocket upgrade failed"),
    }
}

/// Describes a close frame or a read error as a [`ProviderError::Disconnected`].
pub(crate) fn disconnected(frame: Option<&tungstenite::protocol::CloseFrame>) -> ProviderError {
    match frame {
        Some(frame) => ProviderError::Disconnected {
            reason: Cow::Owned(format!(
                "closed {} {}",
                u16::from(frame.code),
                // Deepgram puts a short error code here (NET-0001, DATA-0000).
                frame.reason.chars().take(64).collect::<String>()
            )),
        },
        None => ProviderError::disconnected("connection closed without a close frame"),
    }
}

/// Milliseconds in `d`, saturating.
pub(crate) fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Sleeps until `deadline`, or forever when there is none.
///
/// # Cancel safety
///
/// Cancel safe: it holds no state.
pub(crate) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Appends `key=value` to a query string under construction.
pub(crate) fn push_param(url: &mut String, key: &str, value: &str) {
    url.push(if url.contains('?') { '&' } else { '?' });
    url.push_str(key);
    url.push('=');
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wss_has_a_tls_crypto_provider() {
        // tokio-tungstenite builds its rustls config from the process default
        // provider; with ring as the only provider feature in the build it is
        // picked automatically. A second provider feature would panic here.
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        assert!(config.crypto_provider().cipher_suites.len() > 1);
    }

    #[test]
    fn query_values_are_percent_encoded() {
        let mut url = String::from("wss://h/v1/listen");
        push_param(&mut url, "model", "nova-3");
        push_param(&mut url, "keywords", "a b&c");
        assert_eq!(url, "wss://h/v1/listen?model=nova-3&keywords=a%20b%26c");
    }
}
