//! Pieces shared by the real vendor adapters ([`crate::openai_llm`],
//! [`crate::cartesia`], [`crate::elevenlabs`]): the API key wrapper that never
//! prints, and the websocket connect step with its timeout and typed errors.
//!
//! Keys travel only in request headers here; they never enter a URL, a log line
//! or a [`ProviderError`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Sink, Stream, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as WsMessage};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

#[cfg(test)]
pub(crate) mod fake_socket;
pub(crate) mod ws_ctx;
pub(crate) mod ws_tts;

use crate::ProviderError;
use crate::error::redact_url;

/// A vendor API key. Its `Debug` and `Display` print `<redacted>`; the only way
/// to read it is [`ApiKey::expose`], used where a header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps `key`.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        ApiKey(key.into())
    }

    /// The key from environment variable `var`, if it is set and not empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey::new(k.trim()))
    }

    /// The key itself, for building an auth header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The key as a header value marked sensitive (hyper and h2 then keep it
    /// out of their debug output and HPACK tables).
    pub(crate) fn header_value(&self, prefix: &str) -> Result<HeaderValue, ProviderError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.expose()))
            .map_err(|_| ProviderError::connect("API key is not a valid header value"))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A client websocket to a vendor.
pub(crate) type VendorSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What a session task needs of its websocket: [`VendorSocket`] in use, a
/// scripted socket in the unit tests.
pub(crate) trait WsSocket:
    Sink<WsMessage, Error = WsError>
    + Stream<Item = Result<WsMessage, WsError>>
    + Unpin
    + Send
    + 'static
{
}

impl<T> WsSocket for T where
    T: Sink<WsMessage, Error = WsError>
        + Stream<Item = Result<WsMessage, WsError>>
        + Unpin
        + Send
        + 'static
{
}

/// How long a failed send waits for a close frame already on its way.
pub(crate) const CLOSE_READ_GRACE: Duration = Duration::from_millis(250);

/// After a failed send: the vendor's close frame if one is waiting to be read
/// (within [`CLOSE_READ_GRACE`]; messages before it are skipped, the session
/// is over anyway), `None` if none comes.
///
/// A vendor that refuses something closes the socket with a reason
/// (ElevenLabs' 1008 "Invalid API key" after the first message, Deepgram's
/// 1008 `DATA-0001`), and the adapter's next send can fail before that frame
/// is read. Its reason, not "send failed", tells the user what to fix.
pub(crate) async fn pending_close<S>(stream: &mut S) -> Option<Option<CloseFrame>>
where
    S: Stream<Item = Result<WsMessage, WsError>> + Unpin,
{
    let read = async {
        while let Some(Ok(message)) = stream.next().await {
            if let WsMessage::Close(frame) = message {
                return Some(frame);
            }
        }
        None
    };
    tokio::time::timeout(CLOSE_READ_GRACE, read)
        .await
        .ok()
        .flatten()
}

/// Opens a websocket to `url` with `headers`, within `timeout`.
///
/// A refused upgrade becomes [`ProviderError::Auth`] (401, 403),
/// [`ProviderError::RateLimited`] (429), [`ProviderError::Server`] (other
/// statuses); a refused or timed-out TCP/TLS connection
/// [`ProviderError::Connect`] or [`ProviderError::Timeout`]. No error carries
/// the URL's query or a header.
///
/// # Cancel safety
///
/// Cancel safe: dropping the future drops the half-open connection.
pub(crate) async fn connect_ws(
    url: &str,
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
) -> Result<VendorSocket, ProviderError> {
    let mut request = url
        .into_client_request()
        .map_err(|_| ProviderError::connect("invalid websocket URL"))?;
    for (name, value) in headers {
        request.headers_mut().insert(name, value);
    }
    let connect = tokio_tungstenite::connect_async(request);
    let result =
        tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| ProviderError::Timeout {
                waiting_for: "websocket connect",
                after_ms: timeout.as_millis() as u64,
            })?;
    match result {
        Ok((socket, _response)) => Ok(socket),
        Err(error) => Err(ws_connect_error(error, url)),
    }
}

fn ws_connect_error(error: tokio_tungstenite::tungstenite::Error, url: &str) -> ProviderError {
    use tokio_tungstenite::tungstenite::Error as WsError;
    match error {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let retry_after_ms = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| s.saturating_mul(1000));
            status_error(status, retry_after_ms)
        }
        WsError::Io(_) | WsError::Tls(_) => ProviderError::Connect {
            reason: format!("connection to {} failed", redact_url(url)).into(),
        },
        _ => ProviderError::Connect {
            reason: format!("websocket handshake with {} failed", redact_url(url)).into(),
        },
    }
}

/// The error for a refused HTTP status (a websocket upgrade or a request).
pub(crate) fn status_error(status: u16, retry_after_ms: Option<u64>) -> ProviderError {
    match status {
        401 | 403 => ProviderError::Auth {
            status: Some(status),
        },
        429 => ProviderError::RateLimited { retry_after_ms },
        _ => ProviderError::server(status, "request refused"),
    }
}

/// A short vendor string (an error code or type) fit to go into an error:
/// at most 64 characters of `[A-Za-z0-9_ .:-]`, or `None`.
pub(crate) fn safe_code(code: &str) -> Option<String> {
    let ok = !code.is_empty()
        && code.len() <= 64
        && code
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | '.' | ':' | '-'));
    ok.then(|| code.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(format!("{key}"), "<redacted>");
        assert!(key.header_value("Bearer ").unwrap().is_sensitive());
    }

    #[test]
    fn only_short_plain_codes_are_kept() {
        assert_eq!(
            safe_code("rate_limit_exceeded").as_deref(),
            Some("rate_limit_exceeded")
        );
        assert_eq!(safe_code("Incorrect API key: sk-{x}"), None);
        assert_eq!(safe_code(&"a".repeat(65)), None);
        assert_eq!(safe_code(""), None);
    }

    #[test]
    fn refused_statuses_map_to_kinds() {
        assert_eq!(
            status_error(401, None),
            ProviderError::Auth { status: Some(401) }
        );
        assert_eq!(
            status_error(429, Some(1000)),
            ProviderError::RateLimited {
                retry_after_ms: Some(1000)
            }
        );
        assert!(status_error(503, None).is_retryable());
        assert!(!status_error(400, None).is_retryable());
    }
}
