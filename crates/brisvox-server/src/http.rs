//! The HTTP side: routes, shared state, auth, and the call driver.
//!
//! Routes: `/healthz` (the process is up), `/readyz` (it takes calls: 200, or
//! 503 while draining, full or under pool pressure), `/metrics` (Prometheus
//! text), `/call` (brisvox protocol), `/twilio` (Twilio Media Streams), and
//! the browser demo page at `/` ([`crate::demo`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use brisvox_transport::DecoderLimits;
use brisvox_transport::brisvox_ws::{DEFAULT_MAX_TEXT_BYTES, ServerEvent};
use tokio::sync::{mpsc, watch};

use crate::admission::{Admission, CallPermit, Refusal};
use crate::agent::{AgentSettings, RouteAuth, TokenPlacement};
use crate::handler::{CallFailed, CallHandler, CallStart, call_channels};
use crate::metrics::ServerMetrics;
use crate::session::{Outcome, WRITER_CMD_QUEUE, Wire, WriterCmd, run_writer};
use crate::ws_call::CallIo;

/// How long a handler may take to return after its input closed before its
/// task is aborted.
pub const HANDLER_EXIT_GRACE: Duration = Duration::from_secs(5);

/// How long the writer may take to flush and close.
pub const WRITER_EXIT_GRACE: Duration = Duration::from_secs(5);

/// State shared by every route.
pub struct AppState {
    /// The agent.
    pub agent: Arc<AgentSettings>,
    /// Runs each call.
    pub handler: Arc<dyn CallHandler>,
    /// Admission control.
    pub admission: Arc<Admission>,
    /// Metrics.
    pub metrics: ServerMetrics,
    /// Size limits of the brisvox decoder.
    pub limits: DecoderLimits,
    /// Turns true when running calls must end (drain grace over).
    pub end_calls: watch::Receiver<bool>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("admission", &self.admission)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Decoder limits from `[server] max_message_bytes`.
    pub fn limits_for(agent: &AgentSettings) -> DecoderLimits {
        let max = agent.server.max_message_bytes;
        DecoderLimits {
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES.min(max),
            max_binary_bytes: max,
            max_pending_audio_bytes: max + 1920,
        }
    }

    /// Counts a finished (or never started) call and frees its slot.
    pub(crate) fn finish(&self, outcome: Outcome, permit: CallPermit) {
        self.metrics
            .calls_total
            .with_label_values(&[outcome.label()])
            .inc();
        self.metrics.active_calls.dec();
        tracing::info!(outcome = outcome.label(), "call finished");
        drop(permit);
    }

    /// The websocket's own limit: above ours, so that our decoder sees an
    /// oversized message and answers with an `error` event; far above it the
    /// socket layer cuts the connection.
    fn socket_limit(&self) -> usize {
        2 * self.limits.max_binary_bytes.max(self.limits.max_text_bytes) + 64 * 1024
    }
}

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

/// The result of a call handler's task.
type HandlerResult = Result<Result<(), CallFailed>, tokio::task::JoinError>;

/// Runs an admitted, started call: spawns the writer and the handler, runs the
/// transport's `reader` until the call ends from any side, then closes.
pub(crate) async fn drive_call<W, F, Fut>(
    state: &Arc<AppState>,
    start: CallStart,
    wire: W,
    reader: F,
) -> Outcome
where
    W: Wire,
    F: FnOnce(CallIo) -> Fut,
    Fut: Future<Output = Outcome> + Send,
{
    let (input, output, chans) = call_channels();
    let (cmd_tx, cmd_rx) = mpsc::channel(WRITER_CMD_QUEUE);
    let metrics = state.metrics.clone();
    let writer = tokio::spawn(run_writer(
        wire,
        chans.out_rx,
        cmd_rx,
        chans.generation,
        metrics,
    ));
    let mut handler = tokio::spawn(state.handler.run_call(start, input, output));
    let io = CallIo {
        frame_tx: chans.frame_tx,
        control_tx: chans.control_tx,
        cmd_tx: cmd_tx.clone(),
        state: state.clone(),
    };
    let mut reader = Box::pin(reader(io));
    let mut end_calls = state.end_calls.clone();
    let max = Duration::from_secs(u64::from(state.agent.limits.max_call_duration_s));
    let (outcome, handler_result) = tokio::select! {
        o = &mut reader => (o, None),
        r = &mut handler => (handler_outcome(&r), Some(r)),
        _ = end_calls.wait_for(|end| *end) => (Outcome::Drained, None),
        () = tokio::time::sleep(max) => (Outcome::MaxDuration, None),
    };
    drop(reader); // closes the call's input: the handler sees the end
    let failure = match handler_result {
        Some(r) => failure_of(r),
        None => await_handler(handler).await,
    };
    close_call(cmd_tx, writer, outcome, failure).await;
    outcome
}

/// Waits for a handler whose input closed, aborting it after the grace.
async fn await_handler(
    mut handler: tokio::task::JoinHandle<Result<(), CallFailed>>,
) -> Option<CallFailed> {
    match tokio::time::timeout(HANDLER_EXIT_GRACE, &mut handler).await {
        Ok(r) => failure_of(r),
        Err(_) => {
            tracing::warn!("the call handler did not return after its input closed; aborted");
            handler.abort();
            None
        }
    }
}

fn failure_of(r: HandlerResult) -> Option<CallFailed> {
    match r {
        Ok(Ok(())) => None,
        Ok(Err(failed)) => Some(failed),
        Err(join) => Some(CallFailed {
            reason: format!("the call task failed: {join}"),
        }),
    }
}

/// Tells the client why the call ended, closes, and waits for the writer.
async fn close_call(
    cmd_tx: mpsc::Sender<WriterCmd>,
    mut writer: tokio::task::JoinHandle<()>,
    outcome: Outcome,
    failure: Option<CallFailed>,
) {
    if let Some(failed) = failure {
        tracing::warn!(reason = %failed.reason, "call failed");
        let ev = ServerEvent::Error {
            code: "call_failed".into(),
            message: failed.reason,
        };
        let _ = cmd_tx.send(WriterCmd::Event(ev)).await;
    }
    let reason = (outcome != Outcome::Disconnected).then(|| outcome.label().to_owned());
    let code = outcome.close_code();
    let _ = cmd_tx.send(WriterCmd::Close { reason, code }).await;
    if tokio::time::timeout(WRITER_EXIT_GRACE, &mut writer)
        .await
        .is_err()
    {
        tracing::warn!("the socket writer did not finish in time; aborted");
        writer.abort();
    }
}

fn handler_outcome(r: &HandlerResult) -> Outcome {
    match r {
        Ok(Ok(())) => Outcome::Completed,
        _ => Outcome::HandlerError,
    }
}
