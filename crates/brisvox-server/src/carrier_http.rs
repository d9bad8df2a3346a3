//! The carriers' HTTP side: who may open a media stream, and the webhooks
//! that answer a carrier's incoming call by pointing it at a stream here.
//!
//! - Upgrades (`/twilio`, `/telnyx`, `/plivo`, `/vonage`, `/exotel`): a route
//!   not enabled in `[telephony]` answers 404. On `/twilio`, when
//!   `[telephony.twilio]` checks signatures, an upgrade without a valid
//!   `X-Twilio-Signature` (HMAC-SHA1 over the wss URL) answers 403. A route
//!   token (`[server.auth.<carrier>]`) is taken from the upgrade (bearer or
//!   `?token=`, as configured); a wrong one answers 401; none at all is
//!   checked against the stream's `token` parameter once it starts
//!   ([`crate::ws_carrier`]), as carriers that cannot send headers pass it.
//! - `POST /twilio/voice`: TwiML `<Connect><Stream>` to `wss://HOST/twilio`
//!   with the configured parameters, the caller (`from`), the number called
//!   (`to`) and the route token as `<Parameter>`s. Signature-checked like the
//!   upgrade; without signature checks it takes the route token instead.
//! - `GET|POST /plivo/answer`: Plivo XML, a bidirectional `<Stream>` to
//!   `wss://HOST/plivo` in `[telephony.plivo] content_type`, the parameters
//!   as `extraHeaders` (letters and digits only: `from`/`to` lose their `+`).
//!   Checked with `X-Plivo-Signature-V3` when the auth token is set;
//!   otherwise it takes the route token.
//! - `GET|POST /plivo/transfer/{token}`: the `<Dial>` of a transfer this
//!   server asked Plivo for ([`crate::plivo_transfer`]), once per token;
//!   signature-checked like `/plivo/answer` (an unknown or spent token: 404).
//! - `POST /telnyx/texml`: TeXML `<Connect><Stream>` (bidirectional RTP,
//!   `[telephony.telnyx] codec`) to `wss://HOST/telnyx` with the parameters
//!   as `<Parameter>`s. Checked with `telnyx-signature-ed25519` when the
//!   account's public key is set; otherwise it takes the route token.
//! - `GET /vonage/answer`: the NCCO `connect` to `wss://HOST/vonage`, the
//!   call's `uuid`, `from`, `to`, the configured parameters and the token in
//!   the endpoint's headers. Takes the route token (`?token=` on the answer URL).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use brisvox_transport::Carrier;
use brisvox_transport::twilio::{signature, twiml};
use brisvox_transport::{plivo_answer, telnyx_answer};
use serde_json::json;

use crate::agent::RouteAuth;
use crate::gate::{AuthSource, admit_and_upgrade, authorized, offered_token};
use crate::plivo_transfer::TRANSFER_PATH;
use crate::state::AppState;

/// The route token of `carrier`'s route, if it has one.
fn route_auth(state: &AppState, carrier: Carrier) -> Option<&RouteAuth> {
    let auth = &state.agent.server.auth;
    match carrier {
        Carrier::Twilio => auth.twilio.as_ref(),
        Carrier::Telnyx => auth.telnyx.as_ref(),
        Carrier::Plivo => auth.plivo.as_ref(),
        Carrier::Vonage => auth.vonage.as_ref(),
        Carrier::Exotel => auth.exotel.as_ref(),
    }
}

fn token_value(auth: Option<&RouteAuth>) -> Option<String> {
    auth.and_then(|a| a.token.secret())
        .map(|s| s.expose().to_owned())
}

/// The URL the carrier requested, as it signed it: `[telephony] public_url`
/// (or `X-Forwarded-Proto` and `Host`, https when unknown) and the request's
/// path and query; `wss`/`ws` for a websocket.
fn requested_url(state: &AppState, headers: &HeaderMap, uri: &Uri, websocket: bool) -> String {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    format!("{}{path}", public_base(state, headers, websocket))
}

/// The server's public base URL (scheme and host), `wss`/`ws` for a websocket.
fn public_base(state: &AppState, headers: &HeaderMap, websocket: bool) -> String {
    let base = match &state.agent.telephony.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let proto = text("x-forwarded-proto").unwrap_or("https");
            let host = text(header::HOST.as_str()).unwrap_or("localhost");
            format!("{proto}://{host}")
        }
    };
    if !websocket {
        return base;
    }
    if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base
    }
}

/// True when the request carries Twilio's valid signature of `url` and `params`.
fn twilio_signed(token: &str, headers: &HeaderMap, url: &str, params: &[(String, String)]) -> bool {
    headers
        .get(signature::SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|sig| signature::validate(token, url, params, sig))
}

/// What an upgrade to a carrier's media stream was asked with.
#[derive(Debug)]
pub(crate) struct UpgradeRequest<'a> {
    pub(crate) headers: &'a HeaderMap,
    pub(crate) uri: &'a Uri,
    pub(crate) query: &'a HashMap<String, String>,
    /// Where it came from, when the failed-auth limiter counts it: a stream
    /// closed later for a missing token is reported against it.
    pub(crate) source: Option<AuthSource>,
}

/// An upgrade to `carrier`'s media-stream route.
pub(crate) fn upgrade(
    carrier: Carrier,
    state: Arc<AppState>,
    request: &UpgradeRequest<'_>,
    ws: WebSocketUpgrade,
) -> Response {
    let (headers, uri, query) = (request.headers, request.uri, request.query);
    if !state.agent.telephony.route_enabled(carrier) {
        return StatusCode::NOT_FOUND.into_response();
    }
    if carrier == Carrier::Twilio
        && let Some(token) = state.agent.telephony.twilio_signature_token()
    {
        let url = requested_url(&state, headers, uri, true);
        if !twilio_signed(token, headers, &url, &[]) {
            tracing::info!(%url, "twilio stream refused: no valid X-Twilio-Signature");
            return StatusCode::FORBIDDEN.into_response();
        }
    }
    let auth = route_auth(&state, carrier);
    // A token on the upgrade must be right; none is checked at the start.
    let deferred = match (auth, offered_token(auth, headers, query)) {
        (None, _) => None,
        (Some(_), Some(_)) if authorized(auth, headers, query) => None,
        (Some(_), Some(_)) => return StatusCode::UNAUTHORIZED.into_response(),
        (Some(a), None) => match a.token.secret() {
            Some(t) => Some(t.expose().to_owned()),
            None => return StatusCode::UNAUTHORIZED.into_response(),
        },
    };
    let stream = crate::ws_carrier::StreamSetup {
        carrier,
        token: deferred,
        source: request.source,
        http_base: public_base(&state, headers, false),
    };
    admit_and_upgrade(state, ws, move |socket, state, permit| {
        crate::ws_carrier::run(socket, state, permit, stream)
    })
}

/// What an answer webhook was asked with.
#[derive(Debug)]
pub(crate) struct AnswerRequest {
    pub(crate) method: Method,
    pub(crate) headers: HeaderMap,
    pub(crate) uri: Uri,
    pub(crate) query: HashMap<String, String>,
    /// The body, as sent (a signature may cover it byte for byte).
    pub(crate) body: Bytes,
    /// The body's form fields, decoded.
    pub(crate) form: Vec<(String, String)>,
}

impl AnswerRequest {
    /// The request's parts; a body that is no form has no fields.
    pub(crate) fn new(
        method: Method,
        headers: HeaderMap,
        uri: Uri,
        query: HashMap<String, String>,
        body: Bytes,
    ) -> Self {
        let form = std::str::from_utf8(&body)
            .map(brisvox_transport::form::parse)
            .unwrap_or_default();
        AnswerRequest {
            method,
            headers,
            uri,
            query,
            body,
            form,
        }
    }

    /// A field of the form, else of the query (a GET webhook sends it there).
    fn field(&self, name: &str) -> Option<String> {
        (self
            .form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone()))
        .or_else(|| self.query.get(name).cloned())
    }

    /// The request's URL as the carrier signed it.
    fn url(&self, state: &AppState) -> String {
        requested_url(state, &self.headers, &self.uri, false)
    }
}

/// The parameters a stream set up by an answer webhook carries: the
/// configured ones, the caller (`from`, the carrier's `From`) and the number
/// called (`to`, from `To`), each passed through `clean`, and the route token.
fn stream_parameters(
    state: &AppState,
    request: &AnswerRequest,
    auth: Option<&RouteAuth>,
    clean: impl Fn(String) -> String,
) -> Vec<(String, String)> {
    let mut params: Vec<(String, String)> = (state.agent.telephony.parameters.iter())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, name) in [("from", "From"), ("to", "To")] {
        if let Some(v) = request.field(name) {
            params.push((key.to_owned(), clean(v)));
        }
    }
    if let Some(token) = token_value(auth) {
        params.push((crate::ws_carrier::TOKEN_PARAMETER.to_owned(), token));
    }
    params
}

/// The answer, or a 500 naming why it could not be built.
fn xml_answer<E: std::fmt::Display>(carrier: Carrier, xml: Result<String, E>) -> Response {
    match xml {
        Ok(xml) => ([(header::CONTENT_TYPE, "text/xml")], xml).into_response(),
        Err(e) => {
            tracing::error!(error = %e, carrier = carrier.as_str(), "cannot answer the call");
            (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response()
        }
    }
}

/// `POST /twilio/voice`: the TwiML that streams the incoming call here.
pub(crate) fn twilio_voice(state: &AppState, request: &AnswerRequest) -> Response {
    let auth = route_auth(state, Carrier::Twilio);
    if let Some(token) = state.agent.telephony.twilio_signature_token() {
        let url = request.url(state);
        if !twilio_signed(token, &request.headers, &url, &request.form) {
            tracing::info!(%url, "twilio voice webhook refused: no valid X-Twilio-Signature");
            return StatusCode::FORBIDDEN.into_response();
        }
    } else if !authorized(auth, &request.headers, &request.query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let params = stream_parameters(state, request, auth, |v| v);
    let url = format!("{}/twilio", public_base(state, &request.headers, true));
    xml_answer(Carrier::Twilio, twiml::connect_stream(&url, &params))
}

/// True when the request carries Plivo's valid V3 signature.
fn plivo_signed(token: &str, request: &AnswerRequest, url: &str) -> bool {
    let text = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(sig), Some(nonce)) = (
        text(plivo_answer::SIGNATURE_V3_HEADER),
        text(plivo_answer::SIGNATURE_V3_NONCE_HEADER),
    ) else {
        return false;
    };
    let method = request.method.as_str();
    plivo_answer::validate_v3(token, method, url, &request.form, nonce, sig)
}

/// `GET|POST /plivo/answer`: the Plivo XML that streams the call here.
pub(crate) fn plivo_answer(state: &AppState, request: &AnswerRequest) -> Response {
    let Some(plivo) = &state.agent.telephony.plivo else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let auth = route_auth(state, Carrier::Plivo);
    if let Some(token) = state.agent.telephony.plivo_signature_token() {
        let url = request.url(state);
        if !plivo_signed(token, request, &url) {
            tracing::info!(%url, "plivo answer refused: no valid X-Plivo-Signature-V3");
            return StatusCode::FORBIDDEN.into_response();
        }
    } else if !authorized(auth, &request.headers, &request.query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    // Plivo's extraHeaders take letters and digits only: +15550100 goes as 15550100.
    let alnum = |v: String| v.chars().filter(char::is_ascii_alphanumeric).collect();
    let params = stream_parameters(state, request, auth, alnum);
    let url = format!("{}/plivo", public_base(state, &request.headers, true));
    let xml = plivo_answer::stream_xml(&url, &plivo.content_type, &params);
    xml_answer(Carrier::Plivo, xml)
}

/// `GET|POST /plivo/transfer/{token}`: the XML Plivo fetches for a transfer
/// this server asked for, the `<Dial>` of its destination, once.
pub(crate) fn plivo_transfer(state: &AppState, request: &AnswerRequest) -> Response {
    if state.agent.telephony.plivo.is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    if let Some(token) = state.agent.telephony.plivo_signature_token() {
        let url = request.url(state);
        if !plivo_signed(token, request, &url) {
            tracing::info!("plivo transfer XML refused: no valid X-Plivo-Signature-V3");
            return StatusCode::FORBIDDEN.into_response();
        }
    }
    let path = request.uri.path();
    let token = path.strip_prefix(TRANSFER_PATH).unwrap_or_default();
    match state.plivo_transfers.take(token, std::time::Instant::now()) {
        Some(target) => {
            tracing::info!("plivo transfer XML served");
            let xml = plivo_answer::dial_xml(&target);
            ([(header::CONTENT_TYPE, "text/xml")], xml).into_response()
        }
        None => {
            tracing::info!("plivo transfer XML refused: unknown, spent or expired token");
            StatusCode::NOT_FOUND.into_response()
        }
    }
}

/// True when the request carries Telnyx's valid signature of its body.
fn telnyx_signed(key: &[u8], request: &AnswerRequest) -> bool {
    let text = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(sig), Some(ts)) = (
        text(telnyx_answer::SIGNATURE_HEADER),
        text(telnyx_answer::TIMESTAMP_HEADER),
    ) else {
        return false;
    };
    let now = crate::clock::wall_clock().as_secs();
    telnyx_answer::validate(key, sig, ts, &request.body, now)
}

/// `POST /telnyx/texml`: the TeXML that streams the call here.
pub(crate) fn telnyx_texml(state: &AppState, request: &AnswerRequest) -> Response {
    let Some(telnyx) = &state.agent.telephony.telnyx else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let auth = route_auth(state, Carrier::Telnyx);
    if let Some(key) = state.agent.telephony.telnyx_signature_key() {
        if !telnyx_signed(&key, request) {
            tracing::info!("telnyx texml refused: no valid telnyx-signature-ed25519");
            return StatusCode::FORBIDDEN.into_response();
        }
    } else if !authorized(auth, &request.headers, &request.query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let params = stream_parameters(state, request, auth, |v| v);
    let url = format!("{}/telnyx", public_base(state, &request.headers, true));
    let xml = telnyx_answer::connect_stream(&url, &telnyx.codec, &params);
    xml_answer(Carrier::Telnyx, xml)
}

/// `GET /vonage/answer`: the NCCO that connects the call to `/vonage`.
pub(crate) fn vonage_answer(
    state: &AppState,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Response {
    let Some(vonage) = &state.agent.telephony.vonage else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let auth = route_auth(state, Carrier::Vonage);
    if !authorized(auth, headers, query) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut endpoint_headers = serde_json::Map::new();
    for (k, v) in &state.agent.telephony.parameters {
        endpoint_headers.insert(k.clone(), v.clone().into());
    }
    let call = [
        (brisvox_transport::vonage::CALL_UUID_HEADER, "uuid"),
        ("from", "from"),
        ("to", "to"),
    ];
    for (key, name) in call {
        if let Some(v) = query.get(name) {
            endpoint_headers.insert(key.to_owned(), v.clone().into());
        }
    }
    if let Some(token) = token_value(auth) {
        endpoint_headers.insert(crate::ws_carrier::TOKEN_PARAMETER.to_owned(), token.into());
    }
    let ncco = json!([{
        "action": "connect",
        "endpoint": [{
            "type": "websocket",
            "uri": format!("{}/vonage", public_base(state, headers, true)),
            "content-type": format!("audio/l16;rate={}", vonage.sample_rate_hz),
            "headers": endpoint_headers,
        }],
    }]);
    axum::Json(ncco).into_response()
}
