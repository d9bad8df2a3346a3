//! Provider errors: one typed enum for every STT, LLM and TTS failure.
//!
//! Every error says whether trying again may help ([`ProviderError::is_retryable`]):
//! a refused connection or a 503 may pass on the next attempt, a rejected key or a
//! malformed message will not. The engine uses that bit alone to decide between a
//! retry (or a fallback provider) and giving up on the turn.
//!
//! # No secrets in errors
//!
//! Errors are logged, exported as metrics labels and sent to agents. An adapter
//! builds every field from what is safe to print: the vendor's status code, its
//! error code or message, a host name. It never puts an API key, an
//! `Authorization` header, a URL with a query string (tokens travel there), or
//! the caller's transcript into an error. [`redact_url`] strips a URL down to
//! scheme, host and path for the rare error that must name an endpoint.

use std::borrow::Cow;

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The connection could not be made (DNS, TCP, TLS, websocket upgrade).
    #[error("could not connect: {reason}")]
    Connect {
        /// What failed, without secrets.
        reason: Cow<'static, str>,
    },
    /// The provider refused the credentials (401, 403 or the vendor's equivalent).
    #[error("authentication refused (status {status:?})")]
    Auth {
        /// HTTP or close status, when the vendor gave one.
        status: Option<u16>,
    },
    /// The provider asked us to slow down (429 or the vendor's equivalent).
    #[error("rate limited (retry after {retry_after_ms:?} ms)")]
    RateLimited {
        /// How long the provider asked us to wait, in milliseconds, if it said.
        retry_after_ms: Option<u64>,
    },
    /// Nothing arrived within a deadline.
    #[error("timed out after {after_ms} ms waiting for {waiting_for}")]
    Timeout {
        /// What we waited for ("first token", "final", "first audio").
        waiting_for: &'static str,
        /// How long we waited, in milliseconds.
        after_ms: u64,
    },
    /// The provider sent something we could not understand.
    #[error("protocol error: {reason}")]
    Protocol {
        /// What was wrong with the message, without its content.
        reason: Cow<'static, str>,
    },
    /// The connection dropped in the middle of a session or stream.
    #[error("disconnected: {reason}")]
    Disconnected {
        /// What we know about the drop (close code, reset).
        reason: Cow<'static, str>,
    },
    /// The provider answered with a server-side failure status.
    #[error("server error {status}: {reason}")]
    Server {
        /// HTTP status (or the vendor's numeric error code).
        status: u16,
        /// The vendor's error message or code, without secrets.
        reason: Cow<'static, str>,
    },
    /// The request was cancelled by us (barge-in, a dropped stream, shutdown).
    #[error("cancelled")]
    Cancelled,
}

/// The kind of a [`ProviderError`], without its fields (for metrics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`ProviderError::Connect`].
    Connect,
    /// [`ProviderError::Auth`].
    Auth,
    /// [`ProviderError::RateLimited`].
    RateLimited,
    /// [`ProviderError::Timeout`].
    Timeout,
    /// [`ProviderError::Protocol`].
    Protocol,
    /// [`ProviderError::Disconnected`].
    Disconnected,
    /// [`ProviderError::Server`].
    Server,
    /// [`ProviderError::Cancelled`].
    Cancelled,
}

impl ProviderError {
    /// Whether the same request may succeed if tried again (now or after a backoff).
    ///
    /// Connect failures, rate limits, timeouts, disconnects and 5xx statuses (plus
    /// 408 and 429 sent as [`ProviderError::Server`]) are retryable; bad
    /// credentials, malformed messages, other 4xx statuses and our own
    /// cancellations are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connect { .. }
            | ProviderError::RateLimited { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Disconnected { .. } => true,
            ProviderError::Server { status, .. } => *status >= 500 || matches!(status, 408 | 429),
            ProviderError::Auth { .. }
            | ProviderError::Protocol { .. }
            | ProviderError::Cancelled => false,
        }
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProviderError::Connect { .. } => ErrorKind::Connect,
            ProviderError::Auth { .. } => ErrorKind::Auth,
            ProviderError::RateLimited { .. } => ErrorKind::RateLimited,
            ProviderError::Timeout { .. } => ErrorKind::Timeout,
            ProviderError::Protocol { .. } => ErrorKind::Protocol,
            ProviderError::Disconnected { .. } => ErrorKind::Disconnected,
            ProviderError::Server { .. } => ErrorKind::Server,
            ProviderError::Cancelled => ErrorKind::Cancelled,
        }
    }

    /// A [`ProviderError::Connect`] with a fixed reason.
    pub fn connect(reason: &'static str) -> Self {
        ProviderError::Connect {
            reason: Cow::Borrowed(reason),
        }
    }

    /// A [`ProviderError::Disconnected`] with a fixed reason.
    pub fn disconnected(reason: &'static str) -> Self {
        ProviderError::Disconnected {
            reason: Cow::Borrowed(reason),
        }
    }

    /// A [`ProviderError::Protocol`] with a fixed reason.
    pub fn protocol(reason: &'static str) -> Self {
        ProviderError::Protocol {
            reason: Cow::Borrowed(reason),
        }
    }

    /// A [`ProviderError::Server`] with a status and a fixed reason.
    pub fn server(status: u16, reason: &'static str) -> Self {
        ProviderError::Server {
            status,
            reason: Cow::Borrowed(reason),
        }
    }
}

/// `url` without its user info, query string and fragment, for errors that must
/// name an endpoint (`wss://key@api.example/v1/listen?token=x` becomes
/// `wss://api.example/v1/listen`).
pub fn redact_url(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..host_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    format!("{scheme}{rest}")
}

/// Why a message could not be handed to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The session's input buffer is full; the message was not queued (the
    /// caller still holds it and decides whether to drop it or retry).
    #[error("session input buffer is full")]
    Full,
    /// The session has ended (closed, failed or its provider task is gone).
    #[error("session is closed")]
    Closed,
    /// A TTS context was used out of order: started at or below one already
    /// started, or used after it was cancelled.
    #[error("context {0} is stale")]
    StaleContext(crate::ContextId),
    /// Audio that is not a frame: more samples than a frame holds, or a rate
    /// of zero.
    #[error("audio of {samples} samples at {sample_rate_hz} Hz is not a frame")]
    NotAFrame {
        /// Samples offered.
        samples: usize,
        /// Rate given, in Hz.
        sample_rate_hz: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_follows_the_kind_and_the_status() {
        assert!(ProviderError::connect("refused").is_retryable());
        assert!(!ProviderError::Auth { status: Some(401) }.is_retryable());
        assert!(
            ProviderError::RateLimited {
                retry_after_ms: None
            }
            .is_retryable()
        );
        assert!(ProviderError::disconnected("reset").is_retryable());
        assert!(!ProviderError::protocol("bad json").is_retryable());
        assert!(ProviderError::server(503, "busy").is_retryable());
        assert!(ProviderError::server(429, "slow down").is_retryable());
        assert!(!ProviderError::server(400, "bad request").is_retryable());
        assert!(!ProviderError::Cancelled.is_retryable());
    }

    #[test]
    fn redacted_urls_keep_scheme_host_and_path_only() {
        assert_eq!(
            redact_url("wss://user:key@api.example/v1/listen?token=abc#x"),
            "wss://api.example/v1/listen"
        );
        assert_eq!(redact_url("https://api.example"), "https://api.example");
        assert_eq!(redact_url("api.example/a?k=1"), "api.example/a");
    }
}
