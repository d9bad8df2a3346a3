//! The HTTP side: the router, auth and admission at the upgrade.
//!
//! Routes: `/healthz` (the process is up), `/readyz` (it takes calls: 200, or
//! 503 while draining, full or under pool pressure), `/metrics` (Prometheus
//! text), `/call` (brisvox protocol, `ws_call`), `/webrtc/offer` (WebRTC
//! signalling, the call then over UDP: `webrtc_call`), the carriers' media streams
//! `/twilio`, `/telnyx`, `/plivo`, `/vonage`, `/exotel` (`ws_carrier`) and
//! their answer webhooks `/twilio/voice`, `/telnyx/texml`, `/plivo/answer`
//! and `/vonage/answer`
//! (`carrier_http`), and the browser demo page at `/` ([`crate::demo`]).
//! Every route that checks a token or a signature sits behind the failed-auth
//! limiter (`gate::limit_failed_auth`, [`crate::auth_limit`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use brisvox_transport::Carrier;

use crate::carrier_http::{self, AnswerRequest, UpgradeRequest};
use crate::gate::{AuthSource, admit_and_upgrade, authorized};
use crate::state::AppState;

/// The router over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    guarded_routes()
        // Every route above checks a token or a signature (when configured):
        // the failed-auth limiter stands in front of them.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::gate::limit_failed_auth,
        ))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .merge(crate::demo::routes())
        .with_state(state)
}

/// The routes that check a token or a signature.
fn guarded_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/call", get(call_route))
        .route("/webrtc/offer", post(crate::webrtc_call::offer_route))
        .route("/twilio", carrier_route(Carrier::Twilio))
        .route(
            "/twilio/voice",
            post(answer_route(carrier_http::twilio_voice)),
        )
        .route("/telnyx", carrier_route(Carrier::Telnyx))
        .route(
            "/telnyx/texml",
            post(answer_route(carrier_http::telnyx_texml)),
        )
        .route("/plivo", carrier_route(Carrier::Plivo))
        .route(
            "/plivo/answer",
            get(answer_route(carrier_http::plivo_answer))
                .post(answer_route(carrier_http::plivo_answer)),
        )
        .route(
            "/plivo/transfer/{token}",
            get(answer_route(carrier_http::plivo_transfer))
                .post(answer_route(carrier_http::plivo_transfer)),
        )
        .route("/vonage", carrier_route(Carrier::Vonage))
        .route("/vonage/answer", get(vonage_answer))
        .route("/exotel", carrier_route(Carrier::Exotel))
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

async fn call_route(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    query: Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let state = state.0;
    if !authorized(state.agent.server.auth.call.as_ref(), &headers, &query.0) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    admit_and_upgrade(state, ws, crate::ws_call::run)
}

/// The upgrade route of `carrier`'s media stream.
fn carrier_route(carrier: Carrier) -> MethodRouter<Arc<AppState>> {
    get(
        move |state: State<Arc<AppState>>,
              headers: HeaderMap,
              uri: Uri,
              query: Query<HashMap<String, String>>,
              source: Option<Extension<AuthSource>>,
              ws: WebSocketUpgrade| async move {
            let request = UpgradeRequest {
                headers: &headers,
                uri: &uri,
                query: &query.0,
                source: source.map(|Extension(s)| s),
            };
            crate::carrier_http::upgrade(carrier, state.0, &request, ws)
        },
    )
}

/// An answer webhook's handler over `answer`.
// The closure's type is axum's handler signature, spelled out once here.
#[allow(clippy::type_complexity)]
fn answer_route(
    answer: fn(&AppState, &AnswerRequest) -> Response,
) -> impl Fn(
    State<Arc<AppState>>,
    Method,
    HeaderMap,
    Uri,
    Query<HashMap<String, String>>,
    Bytes,
) -> std::future::Ready<Response>
+ Clone
+ Send
+ Sync
+ 'static {
    move |state, method, headers, uri, query, body| {
        let request = AnswerRequest::new(method, headers, uri, query.0, body);
        std::future::ready(answer(&state.0, &request))
    }
}

async fn vonage_answer(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    query: Query<HashMap<String, String>>,
) -> Response {
    crate::carrier_http::vonage_answer(&state.0, &headers, &query.0)
}
