//! The WebRTC route's adapter (`docs/WEBRTC.md`): `POST /webrtc/offer` with
//! the client's SDP offer, the answer back, then the call over UDP.
//!
//! The codec is `brisvox_transport::webrtc::WebRtcPeer` (str0m, sans-IO).
//! What is this route's own: the signalling request, one UDP socket per call
//! from `[server.webrtc] udp_ports` (so a call's datagrams need no
//! demultiplexing and a call's end frees its port), the loop that moves
//! datagrams and timeouts between the socket and the peer (the reader), and
//! the [`Wire`] that encodes each answer frame and writes events on the data
//! channel. [`crate::route`] does the rest, as for `/call`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brisvox_audio::framer::DEFAULT_FRAME_MS;
use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::{Control, DtmfDigit};
use brisvox_transport::brisvox_ws::{MAX_CALL_ID_BYTES, ServerEvent};
use brisvox_transport::webrtc::{OUTPUT_RATE_HZ, PeerEvent, PeerOutput, WebRtcPeer};
use brisvox_transport::{ClientEvent, DecodeError};
use serde::Deserialize;
use tokio::net::UdpSocket;
use tokio::sync::Notify;

use crate::admission::CallPermit;
use crate::agent::WebRtcSettings;
use crate::gate::{authorized, refusal_response};
use crate::handler::{CallStart, CallTransport};
use crate::route::{Outcome, RouteIo, START_TIMEOUT, Wire, WriterCmd, drive_call, finish, now};
use crate::state::AppState;

/// The longest a closing call keeps its socket for the client to
/// acknowledge its last events (`end`): SCTP resends a lost chunk after its
/// retransmission timeout (at least 1 s, doubling), so this covers the first
/// send and two resends. A client that acknowledges (the usual case: one
/// round trip and its delayed SACK, up to 200 ms) ends it sooner.
const CLOSE_ACK_LIMIT: Duration = Duration::from_secs(4);

/// Largest signalling request body (an offer's SDP is a few KiB).
const MAX_OFFER_BYTES: usize = 64 * 1024;

/// Largest datagram read (Ethernet MTU with room).
const MAX_DATAGRAM: usize = 2048;

/// A refusal of the signalling request, as its HTTP response (boxed: a
/// response is large).
type Refused = Box<Response>;

/// The signalling request's body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OfferRequest {
    /// The client's SDP offer.
    sdp: String,
    /// The client's id for the call, as `/call`'s `start` has it.
    call_id: String,
    /// Free metadata, as `/call`'s `start` has it.
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
    /// `"offer"` when present (what `RTCSessionDescription` serialises to).
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// An HTTP refusal whose body is an `error` event naming it.
fn refusal(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = ServerEvent::Error {
        code: code.to_owned(),
        message: message.into(),
    }
    .to_json();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn bad_request(code: &str, message: impl Into<String>) -> Response {
    refusal(StatusCode::BAD_REQUEST, code, message)
}

/// True when the request says its body is JSON (`application/json`, any
/// parameters). Anything else is refused: a body a browser may send
/// cross-site without a CORS preflight (`text/plain`, a form) never starts a
/// call.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// `POST /webrtc/offer`: same token as `/call`; admission as for `/call`.
pub(crate) async fn offer_route(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    match answer_offer(state, &headers, &query, &body).await {
        Ok(answer) => answer,
        Err(refused) => *refused,
    }
}

/// Checks the request, admits the call, binds its socket and answers; the
/// call then runs on its own task. `Err` is the refusal.
async fn answer_offer(
    state: Arc<AppState>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<Response, Refused> {
    let request = read_request(&state, headers, query, body)?;
    let settings = &state.agent.server.webrtc;
    let Some(ip) = candidate_ip(settings, headers) else {
        let msg = "no address to offer: set [server.webrtc] public_ip";
        return Err(Box::new(bad_request("no_candidate_address", msg)));
    };
    let permit = state
        .admission
        .try_admit()
        .map_err(|refused| Box::new(refusal_response(&state, refused)))?;
    let socket = bind_in_range(settings).await.map_err(|e| {
        tracing::warn!(error = %e, "no UDP port for a WebRTC call");
        let msg = format!("no free UDP port in [server.webrtc] udp_ports: {e}");
        Box::new(refusal(StatusCode::SERVICE_UNAVAILABLE, "no_udp_port", msg))
    })?;
    let local = socket
        .local_addr()
        .map_err(|_| Box::new(StatusCode::INTERNAL_SERVER_ERROR.into_response()))?;
    let candidate = SocketAddr::new(ip, local.port());
    let (peer, answer) = accept(&state, &request.sdp, candidate).await?;
    state.metrics.active_calls.inc();
    // `providers` and `mock` as `/call`'s `started` event has them.
    let body = serde_json::json!({
        "type": "answer",
        "sdp": answer,
        "call_id": request.call_id,
        "providers": state.agent.providers(),
        "mock": state.agent.uses_mock(),
    });
    let shared = Arc::new(Shared {
        peer: Mutex::new(Locked {
            peer,
            events: Vec::new(),
        }),
        socket,
        candidate,
        wake: Notify::new(),
    });
    tokio::spawn(run(state, permit, shared, request));
    let json = [(header::CONTENT_TYPE, "application/json")];
    Ok((json, body.to_string()).into_response())
}

/// The token, the content type and the body, in that order.
fn read_request(
    state: &AppState,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<OfferRequest, Refused> {
    if !authorized(state.agent.server.auth.call.as_ref(), headers, query) {
        return Err(Box::new(StatusCode::UNAUTHORIZED.into_response()));
    }
    if !is_json(headers) {
        let msg = "the offer must be sent as Content-Type: application/json";
        let status = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return Err(Box::new(refusal(status, "unsupported_media_type", msg)));
    }
    parse_request(body, MAX_OFFER_BYTES)
}

/// Sets up the peer for `sdp`, offering `candidate`; the DTLS certificate is
/// generated here, off the async workers.
async fn accept(
    state: &AppState,
    sdp: &str,
    candidate: SocketAddr,
) -> Result<(WebRtcPeer, String), Refused> {
    let limits = state.limits;
    let sdp = sdp.to_owned();
    let accepted =
        tokio::task::spawn_blocking(move || WebRtcPeer::accept(&sdp, &[candidate], limits, now()))
            .await;
    match accepted {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(e)) => Err(Box::new(bad_request("bad_offer", e.to_string()))),
        Err(e) => {
            tracing::error!(error = %e, "the WebRTC answer task failed");
            Err(Box::new(StatusCode::INTERNAL_SERVER_ERROR.into_response()))
        }
    }
}

fn parse_request(body: &[u8], limit: usize) -> Result<OfferRequest, Refused> {
    if body.len() > limit {
        let msg = format!("offer of {} bytes exceeds {limit}", body.len());
        return Err(Box::new(bad_request("message_too_large", msg)));
    }
    let request: OfferRequest = serde_json::from_slice(body)
        .map_err(|e| Box::new(bad_request("malformed_json", e.to_string())))?;
    if request.kind.as_deref().is_some_and(|k| k != "offer") {
        let msg = "type must be \"offer\"";
        return Err(Box::new(bad_request("invalid_field", msg)));
    }
    if request.call_id.is_empty() || request.call_id.len() > MAX_CALL_ID_BYTES {
        let msg = "call_id must be a non-empty string of at most 256 bytes";
        return Err(Box::new(bad_request("invalid_field", msg)));
    }
    Ok(request)
}

/// The address the client is told to send to: `public_ip`, else the UDP
/// bind address when it is a real one, else the IP the client reached this
/// server by (the `Host` header's, `localhost` as loopback).
fn candidate_ip(settings: &WebRtcSettings, headers: &HeaderMap) -> Option<IpAddr> {
    if let Some(ip) = settings.public_ip {
        return Some(ip);
    }
    if !settings.udp_ip.is_unspecified() {
        return Some(settings.udp_ip);
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    host_ip(host)
}

fn host_ip(host: &str) -> Option<IpAddr> {
    let name = match host.rsplit_once(':') {
        // `[::1]:8080`, `127.0.0.1:8080`
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.ends_with(':') => {
            name
        }
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    if name.eq_ignore_ascii_case("localhost") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    name.parse().ok()
}

/// Binds a UDP socket on the first free port of the range, starting at a
/// rotating offset so that consecutive calls do not probe the same ports.
async fn bind_in_range(settings: &WebRtcSettings) -> std::io::Result<UdpSocket> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let [lo, hi] = settings.udp_ports;
    let span = u32::from(hi - lo) + 1;
    let start = NEXT.fetch_add(1, Ordering::Relaxed) % span;
    let mut last = None;
    for i in 0..span {
        let port = lo + ((start + i) % span) as u16;
        match UdpSocket::bind((settings.udp_ip, port)).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("empty port range")))
}

/// The peer and the events its outputs produced, whoever polled them (the
/// reader or the wire), until the reader takes them.
struct Locked {
    peer: WebRtcPeer,
    events: Vec<PeerEvent>,
}

/// The peer and its socket, shared by the reader and the wire.
struct Shared {
    peer: Mutex<Locked>,
    socket: UdpSocket,
    /// The address the client sends to (the peer's candidate).
    candidate: SocketAddr,
    /// The wire changed the peer's next timeout: the reader recomputes it.
    wake: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Locked> {
        // A panic while holding the lock leaves the peer as it was: go on.
        self.peer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends what the peer has to send, keeps its events; returns its next
    /// timeout (`None`: the peer failed).
    fn drain(&self, locked: &mut Locked) -> Option<Instant> {
        loop {
            match locked.peer.poll_output() {
                Ok(PeerOutput::Transmit {
                    destination,
                    contents,
                    ..
                }) => {
                    // UDP: a full send buffer loses the datagram, as the network may.
                    let _ = self.socket.try_send_to(&contents, destination);
                }
                Ok(PeerOutput::Event(ev)) => locked.events.push(ev),
                Ok(PeerOutput::Timeout(at)) => return Some(at),
                Err(e) => {
                    tracing::info!(error = %e, "WebRTC peer failed");
                    locked.events.push(PeerEvent::Disconnected);
                    return None;
                }
            }
        }
    }
}

/// Runs one WebRTC call: waits for the connection, then drives the call.
async fn run(state: Arc<AppState>, permit: CallPermit, shared: Arc<Shared>, request: OfferRequest) {
    let call_id = request.call_id.clone();
    if let Err(outcome) = wait_connected(&state, &shared).await {
        tracing::info!(call_id = %call_id, outcome = outcome.label(), "WebRTC call never connected");
        shared.lock().peer.close();
        return finish(&state, outcome, permit);
    }
    tracing::info!(call_id = %call_id, "WebRTC call connected");
    let start = CallStart {
        call_id: request.call_id,
        transport: CallTransport::WebRtc,
        metadata: request.metadata,
        agent: state.agent.clone(),
        output_sample_rate_hz: OUTPUT_RATE_HZ,
        output_frame_ms: DEFAULT_FRAME_MS,
    };
    let wire = PeerWire {
        shared: shared.clone(),
        filled_frames_total: state.metrics.webrtc_filled_frames_total.clone(),
    };
    drive_call(&state, start, permit, wire, |io| read_loop(shared, io)).await;
}

/// Waits for the client to connect: `Err` with the outcome when it does not
/// within [`START_TIMEOUT`], its peer gives up, or a drain ends the calls.
async fn wait_connected(state: &AppState, shared: &Shared) -> Result<(), Outcome> {
    let mut end_calls = state.end_calls.clone();
    tokio::select! {
        connected = tokio::time::timeout(START_TIMEOUT, connect(shared)) => match connected {
            Ok(true) => Ok(()),
            Ok(false) => Err(Outcome::Disconnected),
            Err(_) => Err(Outcome::StartTimeout),
        },
        _ = end_calls.wait_for(|end| *end) => Err(Outcome::Drained),
    }
}

/// Moves datagrams and timeouts until ICE and DTLS are up (`true`) or the
/// peer gives up (`false`).
async fn connect(shared: &Shared) -> bool {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut events = Vec::new();
    loop {
        let timeout = {
            let mut locked = shared.lock();
            let timeout = shared.drain(&mut locked);
            events.append(&mut locked.events);
            timeout
        };
        for ev in events.drain(..) {
            match ev {
                PeerEvent::Connected => return true,
                PeerEvent::Disconnected => return false,
                _ => {}
            }
        }
        let Some(timeout) = timeout else { return false };
        if !step(shared, &mut buf, timeout).await {
            return false;
        }
    }
}

/// Waits for one datagram or the timeout and hands it to the peer; false
/// when the socket failed.
async fn step(shared: &Shared, buf: &mut [u8], timeout: Instant) -> bool {
    let deadline = tokio::time::Instant::from_std(timeout);
    tokio::select! {
        r = shared.socket.recv_from(buf) => match r {
            Ok((n, source)) => {
                let at = now();
                let mut locked = shared.lock();
                if let Err(e) = locked.peer.handle_receive(at, source, shared.candidate, &buf[..n]) {
                    tracing::debug!(error = %e, "WebRTC datagram refused");
                }
                true
            }
            Err(e) => {
                tracing::info!(error = %e, "WebRTC socket failed");
                false
            }
        },
        () = tokio::time::sleep_until(deadline) => {
            let _ = shared.lock().peer.handle_timeout(now());
            true
        }
        () = shared.wake.notified() => true,
    }
}

/// The reader: datagrams in, the caller's frames and controls to the engine.
async fn read_loop(shared: Arc<Shared>, io: RouteIo) -> Outcome {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut events = Vec::new();
    loop {
        let timeout = {
            let at = now();
            let mut locked = shared.lock();
            let timeout = shared.drain(&mut locked);
            while let Some(frame) = locked.peer.pop_frame() {
                io.push_frame(frame, at);
            }
            events.append(&mut locked.events);
            timeout
        };
        for ev in events.drain(..) {
            if let Some(outcome) = on_event(ev, &io).await {
                return outcome;
            }
        }
        let Some(timeout) = timeout else {
            return Outcome::Disconnected;
        };
        if !step(&shared, &mut buf, timeout).await {
            return Outcome::Disconnected;
        }
    }
}

/// Acts on one peer event; `Some` ends the call.
async fn on_event(ev: PeerEvent, io: &RouteIo) -> Option<Outcome> {
    let at = now();
    match ev {
        PeerEvent::Control(ClientEvent::Say { text, interrupt }) => {
            io.push_control(Control::Say { text, interrupt }, at).await;
        }
        PeerEvent::Control(ClientEvent::Dtmf { digit }) => {
            if let Ok(digit) = DtmfDigit::new(digit) {
                io.push_control(Control::Dtmf { digit }, at).await;
            }
        }
        PeerEvent::Control(ClientEvent::End { .. }) => return Some(Outcome::ClientEnd),
        PeerEvent::ControlError(e) => return control_error(e, io).await,
        PeerEvent::Disconnected => return Some(Outcome::Disconnected),
        _ => {}
    }
    None
}

async fn control_error(e: DecodeError, io: &RouteIo) -> Option<Outcome> {
    let ev = ServerEvent::Error {
        code: e.code().to_owned(),
        message: e.to_string(),
    };
    let _ = io.cmd_tx.send(WriterCmd::Event(ev)).await;
    e.is_fatal().then(|| {
        tracing::info!(error = %e, "call ended by bad input");
        Outcome::ProtocolError {
            close_code: e.close_code(),
        }
    })
}

/// The WebRTC wire: Opus on the audio track, JSON on the data channel.
struct PeerWire {
    shared: Arc<Shared>,
    /// `brisvox_webrtc_filled_frames_total`, added to at the call's end.
    filled_frames_total: prometheus::IntCounter,
}

impl PeerWire {
    /// Runs `f` on the peer, sends what it queued and wakes the reader (its
    /// next timeout may be sooner now).
    fn with_peer(&self, f: impl FnOnce(&mut WebRtcPeer)) {
        {
            let mut locked = self.shared.lock();
            f(&mut locked.peer);
            // Its events stay for the reader.
            self.shared.drain(&mut locked);
        }
        self.shared.wake.notify_one();
    }
}

impl Wire for PeerWire {
    async fn audio(&mut self, _epoch: Epoch, frame: &AudioFrame) -> Result<(), axum::Error> {
        let mut failed = None;
        self.with_peer(|peer| {
            if let Err(e) = peer.send_audio(frame.samples(), now()) {
                failed = Some(e.to_string());
            }
        });
        match failed {
            Some(e) => Err(axum::Error::new(std::io::Error::other(e))),
            None => Ok(()),
        }
    }

    async fn clear(&mut self) -> Result<(), axum::Error> {
        self.event(&ServerEvent::Clear).await
    }

    async fn event(&mut self, ev: &ServerEvent) -> Result<(), axum::Error> {
        let json = ev.to_json();
        self.with_peer(|peer| peer.send_event(&json));
        Ok(())
    }

    async fn close(mut self, reason: Option<String>, _code: u16) {
        if let Some(reason) = reason {
            let _ = self.event(&ServerEvent::End { reason }).await;
        }
        linger(&self.shared).await;
        let mut locked = self.shared.lock();
        let peer = &mut locked.peer;
        if peer.dropped_events() > 0 {
            tracing::warn!(
                dropped = peer.dropped_events(),
                "events the data channel could not take"
            );
        }
        tracing::info!(filled_frames = peer.filled_frames(), "WebRTC call closed");
        self.filled_frames_total.inc_by(peer.filled_frames());
        peer.close();
    }
}

/// Keeps the peer running after the last event until the client has
/// acknowledged every event on the data channel (resending what was lost),
/// the peer is gone, or [`CLOSE_ACK_LIMIT`].
async fn linger(shared: &Shared) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let until = now() + CLOSE_ACK_LIMIT;
    loop {
        let (timeout, delivered) = {
            let mut locked = shared.lock();
            let timeout = shared.drain(&mut locked);
            locked.events.clear();
            (timeout, locked.peer.unacked_event_bytes() == 0)
        };
        let Some(timeout) = timeout else { return };
        if delivered || now() >= until {
            return;
        }
        if !step(shared, &mut buf, timeout.min(until)).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_header_names_the_candidate_ip() {
        let ip = |s: &str| host_ip(s).map(|ip| ip.to_string());
        assert_eq!(ip("127.0.0.1:8080").as_deref(), Some("127.0.0.1"));
        assert_eq!(ip("[::1]:8080").as_deref(), Some("::1"));
        assert_eq!(ip("localhost:8080").as_deref(), Some("127.0.0.1"));
        assert_eq!(ip("10.1.2.3").as_deref(), Some("10.1.2.3"));
        assert_eq!(ip("example.invalid:8080"), None);
    }

    #[test]
    fn the_candidate_is_public_ip_then_udp_ip_then_the_host_header() {
        let mut settings = WebRtcSettings::default();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "10.1.2.3:8080".parse().unwrap());
        let ip = |s: &WebRtcSettings, h: &HeaderMap| candidate_ip(s, h).map(|ip| ip.to_string());
        assert_eq!(ip(&settings, &headers).as_deref(), Some("10.1.2.3"));
        assert_eq!(ip(&settings, &HeaderMap::new()), None);
        settings.udp_ip = "127.0.0.1".parse().unwrap();
        assert_eq!(ip(&settings, &headers).as_deref(), Some("127.0.0.1"));
        // Behind a 1:1 NAT: the mapped address, whatever the socket binds.
        settings.public_ip = Some("203.0.113.7".parse().unwrap());
        assert_eq!(ip(&settings, &headers).as_deref(), Some("203.0.113.7"));
        assert_eq!(
            ip(&settings, &HeaderMap::new()).as_deref(),
            Some("203.0.113.7")
        );
    }

    #[test]
    fn a_bad_offer_request_is_a_400_naming_the_problem() {
        for (body, code) in [
            ("{", "malformed_json"),
            (r#"{"sdp":"v=0","call_id":""}"#, "invalid_field"),
            (
                r#"{"sdp":"v=0","call_id":"a","type":"answer"}"#,
                "invalid_field",
            ),
            (r#"{"sdp":"v=0"}"#, "malformed_json"),
        ] {
            let err = parse_request(body.as_bytes(), 1024).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body} -> {code}");
        }
        assert!(parse_request(&[b' '; 2000], 1024).is_err());
    }
}
