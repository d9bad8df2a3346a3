//! The HTTP side: the router, auth and admission at the upgrade.
//!
//! Routes: `/healthz` (the process is up), `/readyz` (it takes calls: 200, or
//! 503 while draining, full or under pool pressure), `/metrics` (Prometheus
//! text), `/call` (brisvox protocol, `ws_call`), `/twilio` (Twilio Media
//! Streams, `ws_twilio`), and the browser demo page at `/` ([`crate::demo`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use brisvox_transport::brisvox_ws::ServerEvent;

use crate::admission::Refusal;
use crate::agent::{RouteAuth, TokenPlacement};
use crate::state::AppState;

/// The router over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/call", get(call_route))
        .route("/twilio", get(twilio_route))
        .merge(crate::demo::routes())
        .with_state(state)
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.admission.is_ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else if state.admission.is_stopping() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "full\n").into_response()
    }
}

async fn metrics(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(state.agent.server.auth.metrics.as_ref(), &headers, &query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    state
        .metrics
        .active_calls
        .set(state.admission.active() as i64);
    let body = state.metrics.render();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// True when the route is open or the request carries its token.
fn authorized(
    auth: Option<&RouteAuth>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> bool {
    let Some(auth) = auth else { return true };
    let Some(expected) = auth.token.secret() else {
        return false;
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = query.get("token").map(String::as_str);
    let offered = match auth.accept {
        TokenPlacement::Bearer => bearer,
        TokenPlacement::Query => query,
        TokenPlacement::BearerOrQuery => bearer.or(query),
    };
    offered.is_some_and(|t| constant_time_eq(t.as_bytes(), expected.expose().as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Which route a call came in on.
#[derive(Debug, Clone, Copy)]
enum Route {
    Call,
    Twilio,
}

async fn call_route(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    query: Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    accept(Route::Call, state.0, &headers, &query.0, ws)
}

async fn twilio_route(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    query: Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    accept(Route::Twilio, state.0, &headers, &query.0, ws)
}

fn accept(
    route: Route,
    state: Arc<AppState>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    ws: WebSocketUpgrade,
) -> Response {
    let auth = match route {
        Route::Call => state.agent.server.auth.call.as_ref(),
        Route::Twilio => state.agent.server.auth.twilio.as_ref(),
    };
    if !authorized(auth, headers, query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let permit = match state.admission.try_admit() {
        Ok(permit) => permit,
        Err(refusal) => return refusal_response(&state, refusal),
    };
    let limit = state.socket_limit();
    let ws = ws.max_message_size(limit).max_frame_size(limit);
    // If the upgrade never completes, the closure and the permit in it are
    // dropped: the slot is freed.
    ws.on_upgrade(move |socket| async move {
        state.metrics.active_calls.inc();
        match route {
            Route::Call => crate::ws_call::run(socket, state, permit).await,
            Route::Twilio => crate::ws_twilio::run(socket, state, permit).await,
        }
    })
}

/// A refused call: HTTP 503 before the websocket upgrade, so a load balancer
/// can retry it on another server (HAProxy `retry-on 503`) and no half-open
/// call exists. The body is the protocol's `error` event naming the reason.
fn refusal_response(state: &AppState, refusal: Refusal) -> Response {
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
