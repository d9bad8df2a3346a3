//! Who may open a call: the route tokens of `[server.auth]`, the failed-auth
//! limiter in front of every route that checks a token or a signature, and
//! admission at the websocket upgrade (shared by `/call` and the carriers'
//! routes).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use brisvox_transport::brisvox_ws::ServerEvent;
use ring::hmac;

use crate::admission::{CallPermit, Refusal};
use crate::agent::{RouteAuth, TokenPlacement};
use crate::auth_limit::Blocked;
use crate::state::AppState;

/// The token the request offers in the places `auth` accepts.
pub(crate) fn offered_token<'a>(
    auth: Option<&RouteAuth>,
    headers: &'a HeaderMap,
    query: &'a HashMap<String, String>,
) -> Option<&'a str> {
    let auth = auth?;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = query.get("token").map(String::as_str);
    match auth.accept {
        TokenPlacement::Bearer => bearer,
        TokenPlacement::Query => query,
        TokenPlacement::BearerOrQuery => bearer.or(query),
    }
}

/// True when the route is open or the request carries its token.
pub(crate) fn authorized(
    auth: Option<&RouteAuth>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> bool {
    let Some(route) = auth else { return true };
    let Some(expected) = route.token.secret() else {
        return false;
    };
    offered_token(auth, headers, query)
        .is_some_and(|t| constant_time_eq(t.as_bytes(), expected.expose().as_bytes()))
}

/// Compares two byte strings in time independent of where they differ and
/// of whether their lengths do: both are reduced to HMAC-SHA256 tags under a
/// key drawn at random once per process, and the two 32-byte tags are
/// compared in constant time (`ring::hmac::verify`). A plain comparison
/// returns at once on unequal lengths, which tells a prober the token's
/// length.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let key = compare_key();
    let tag = hmac::sign(key, b);
    hmac::verify(key, a, tag.as_ref()).is_ok()
}

/// The process's comparison key.
fn compare_key() -> &'static hmac::Key {
    static KEY: OnceLock<hmac::Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let rng = ring::rand::SystemRandom::new();
        // Without the system's randomness a fixed key still hides the
        // lengths: the tags are as long whatever the inputs.
        hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .unwrap_or_else(|_| hmac::Key::new(hmac::HMAC_SHA256, b"brisvox token comparison"))
    })
}

/// The address a request came from, as the failed-auth limiter counts it:
/// the TCP peer (the accept loop puts it on every request). `X-Forwarded-For`
/// is not read: behind a proxy every caller is the proxy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AuthSource(pub(crate) IpAddr);

impl AuthSource {
    /// Reports a failed token or signature check from this source.
    pub(crate) fn failed(self, state: &AppState) {
        state.metrics.auth_failures_total.inc();
        if let Some(blocked) = state.auth_limiter.failed(self.0) {
            tracing::warn!(
                source = %self.0,
                block_s = blocked.retry_after_secs(),
                "too many failed auth attempts: address refused for a while"
            );
        }
    }
}

/// The failed-auth limiter around the routes that check a token or a
/// signature: a blocked source gets 429 before any route's work; a 401 or
/// 403 answered counts as a failure of its source.
pub(crate) async fn limit_failed_auth(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>();
    let Some(source) = peer.map(|ConnectInfo(addr)| AuthSource(addr.ip())) else {
        return next.run(request).await;
    };
    if let Err(blocked) = state.auth_limiter.check(source.0) {
        return rate_limited_response(&state, blocked);
    }
    request.extensions_mut().insert(source);
    let response = next.run(request).await;
    if matches!(
        response.status(),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
    ) {
        source.failed(&state);
    }
    response
}

/// A request from a blocked source: 429 with `Retry-After`, the body the
/// protocol's `error` event `too_many_auth_failures`.
fn rate_limited_response(state: &AppState, blocked: Blocked) -> Response {
    state.metrics.auth_rate_limited_total.inc();
    let secs = blocked.retry_after_secs();
    let body = ServerEvent::Error {
        code: "too_many_auth_failures".to_owned(),
        message: format!("too many failed auth attempts from this address; retry in {secs} s"),
    }
    .to_json();
    let headers = [
        (header::CONTENT_TYPE, "application/json".to_owned()),
        (header::RETRY_AFTER, secs.to_string()),
    ];
    (StatusCode::TOO_MANY_REQUESTS, headers, body).into_response()
}

/// The read buffer of a call's websocket. The library's default (128 KiB)
/// is zero-filled up to its capacity before every socket read, so each
/// 20 ms audio message (0.2-4 KB) cost a 128 KiB memset, the largest single
/// item in the server's profile at 1000 calls
/// (`bench/results/framework-profile-2026-12-02.md`). 2 KiB holds the
/// largest 20 ms audio message of any route (PCM16 at 48 kHz: 1920 bytes,
/// and a carrier's JSON frame) in one read, and zero-fills half the bytes
/// 4 KiB did; the CPU did not measurably follow (1.6 % of the server's CPU
/// at 600 calls with 4 KiB, 1.9 % with 2 KiB, in
/// `bench/results/framework-profile-2026-12-04b.md`): what remains is
/// touching the buffer, which the read does anyway. A bigger message is
/// still read whole: the buffer grows to a frame's announced length.
const WS_READ_BUFFER_BYTES: usize = 2048;

/// Admits a call (or answers 503) and runs `run` on the upgraded socket.
pub(crate) fn admit_and_upgrade<F, Fut>(
    state: Arc<AppState>,
    ws: WebSocketUpgrade,
    run: F,
) -> Response
where
    F: FnOnce(WebSocket, Arc<AppState>, CallPermit) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let permit = match state.admission.try_admit() {
        Ok(permit) => permit,
        Err(refusal) => return refusal_response(&state, refusal),
    };
    let limit = state.socket_limit();
    let ws = ws
        .max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(WS_READ_BUFFER_BYTES);
    // If the upgrade never completes, the closure and the permit in it are
    // dropped: the slot is freed.
    ws.on_upgrade(move |socket| async move {
        state.metrics.active_calls.inc();
        run(socket, state, permit).await;
    })
}

/// A refused call: HTTP 503 before the websocket upgrade, so a load balancer
/// can retry it on another server (HAProxy `retry-on 503`) and no half-open
/// call exists. The body is the protocol's `error` event naming the reason.
pub(crate) fn refusal_response(state: &AppState, refusal: Refusal) -> Response {
    state
        .metrics
        .refused_total
        .with_label_values(&[refusal.code()])
        .inc();
    tracing::info!(reason = refusal.code(), "call refused");
    let body = ServerEvent::Error {
        code: refusal.code().to_owned(),
        message: refusal.to_string(),
    }
    .to_json();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn tokens_compare_equal_only_when_identical_whatever_their_lengths() {
        assert!(constant_time_eq(b"tok-abc", b"tok-abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"tok-abc", b"tok-abd"));
        assert!(!constant_time_eq(b"tok-ab", b"tok-abc"), "a prefix");
        assert!(!constant_time_eq(b"tok-abcd", b"tok-abc"), "an extension");
        assert!(!constant_time_eq(b"", b"tok-abc"));
        let long = vec![b'x'; 10_000];
        assert!(constant_time_eq(&long, &long.clone()));
        assert!(!constant_time_eq(&long, &long[..9_999]));
    }
}
