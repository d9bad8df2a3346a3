//! The phone carriers' routes' one adapter: any carrier's media stream
//! (`/twilio`, `/telnyx`, `/plivo`, `/vonage`, `/exotel`) on the engine's call
//! edge, driven through `brisvox_transport`'s [`MediaStream`] codec.
//!
//! Here: waiting for the stream's start (and checking a route token passed as
//! a stream parameter, `token`, when the upgrade carried none), the reader
//! (caller audio to 16 kHz frames with their arrival time, key presses to
//! engine controls, echoed marks to the writer, the carrier's stop) and the
//! [`Wire`] (each answer frame as one media message in the stream's own
//! encoding, a mark every [`MARK_EVERY_FRAMES`] and at the end of each answer,
//! the carrier's clear on a barge-in). Each echoed mark tells the engine how
//! much of the answer the caller has heard ([`PlayoutConfirmations`]): an
//! interrupted answer is remembered up to the last echo, not up to what was
//! sent, since the carrier plays from its own buffer. The start's parameters (minus the
//! token), caller and callee become the call's metadata. When the server ends
//! the call, the stream is closed and, where the carrier's REST access is
//! configured, the phone call is hung up ([`crate::carrier_control`]); when
//! the engine transferred it ([`brisvox_engine::CallEnd::Transferred`]), the
//! phone call is transferred instead (and hung up if that fails).
//!
//! Carriers read no JSON errors, so bad input ends the stream with a close
//! code only (1002 malformed, 1003 unsupported, 1009 too large); unknown
//! events and foreign stream ids are logged and skipped.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use brisvox_audio::framer::DEFAULT_FRAME_MS;
use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::{Control, DtmfDigit, PlayoutConfirmations};
use brisvox_transport::brisvox_ws::ServerEvent;
use brisvox_transport::carrier::control::{CallAction, TransferTarget};
use brisvox_transport::carrier::{DEFAULT_MAX_PENDING_MARKS, MarkOutcome};
use brisvox_transport::twilio::{DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_TEXT_BYTES};
use brisvox_transport::{
    Carrier, CarrierEncoder, ExotelStream, MediaStream, Outbound, Playout, PlivoStream,
    StreamError, StreamEvent, StreamLimits, StreamStart, TelnyxStream, TwilioDecoder, TwilioStream,
    VonageStream,
};
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};

use crate::admission::CallPermit;
use crate::audio_edge::{InboundAudio, build_inbound};
use crate::gate::AuthSource;
use crate::handler::{CallStart, CallTransport};
use crate::plivo_transfer::TRANSFER_PATH;
use crate::route::{
    Outcome, RouteIo, START_TIMEOUT, Wire, WriterCmd, WsSink, drive_call, finish, now, send_close,
};
use crate::state::AppState;

/// A mark is placed after this many answer frames (100 ms at 20 ms each).
pub const MARK_EVERY_FRAMES: u32 = 5;

/// The stream parameter a route token may be passed in.
pub const TOKEN_PARAMETER: &str = "token";

/// The close code for a stream whose token was wrong or missing (policy violation).
const UNAUTHORIZED_CLOSE: u16 = 1008;

/// A carrier's codec, bounded by the server's limits.
fn new_stream(carrier: Carrier, state: &AppState) -> Box<dyn MediaStream + Send> {
    let text_limit = state.limits.max_binary_bytes.max(DEFAULT_MAX_TEXT_BYTES);
    let limits = StreamLimits {
        max_message_bytes: text_limit,
        ..StreamLimits::default()
    };
    match carrier {
        Carrier::Twilio => Box::new(TwilioStream::new(TwilioDecoder::new(
            text_limit,
            DEFAULT_MAX_PAYLOAD_BYTES,
        ))),
        Carrier::Telnyx => Box::new(TelnyxStream::new(limits)),
        Carrier::Plivo => Box::new(PlivoStream::new(limits)),
        Carrier::Vonage => Box::new(VonageStream::new(limits)),
        Carrier::Exotel => Box::new(ExotelStream::new(limits)),
    }
}

/// The carrier's writer: media, marks and clears in the stream's encoding.
struct CarrierWire {
    sink: WsSink,
    bytes: Vec<u8>,
    encoder: CarrierEncoder,
    playout: Playout,
    frames_since_mark: u32,
    /// What the carrier confirmed played, shared with the engine.
    confirmations: PlayoutConfirmations,
    /// The answer being sent and how much of its audio was sent, ms.
    sending: (Epoch, u64),
    /// Each pending mark's name with the answer and its audio sent when it
    /// was placed (oldest first, as many as the tracker keeps).
    placed: VecDeque<(String, Epoch, u64)>,
}

impl CarrierWire {
    async fn send(&mut self, out: Outbound) -> Result<(), axum::Error> {
        let msg = match out {
            Outbound::Text(t) => Message::Text(t.into()),
            Outbound::Binary(b) => Message::Binary(b.into()),
        };
        self.sink.send(msg).await
    }

    async fn send_mark(&mut self) -> Result<(), axum::Error> {
        self.frames_since_mark = 0;
        let name = self.playout.next_mark();
        let msg = self.encoder.mark(&name);
        if self.placed.len() == DEFAULT_MAX_PENDING_MARKS {
            self.placed.pop_front();
        }
        let (epoch, sent_ms) = self.sending;
        self.placed.push_back((name, epoch, sent_ms));
        self.send(msg).await
    }
}

impl Wire for CarrierWire {
    async fn audio(&mut self, epoch: Epoch, frame: &AudioFrame) -> Result<(), axum::Error> {
        if self.sending.0 != epoch {
            self.sending = (epoch, 0);
        }
        self.sending.1 += frame.duration().as_millis() as u64;
        let codec = self.encoder.format().codec;
        codec.encode_to(frame.samples(), &mut self.bytes);
        self.playout.on_media_sent(self.bytes.len());
        let msg = self.encoder.media(&self.bytes);
        self.send(msg).await?;
        self.frames_since_mark += 1;
        if self.frames_since_mark >= MARK_EVERY_FRAMES {
            self.send_mark().await?;
        }
        Ok(())
    }

    async fn clear(&mut self) -> Result<(), axum::Error> {
        let dropped_ms = self.playout.on_clear();
        self.placed.clear();
        self.frames_since_mark = 0;
        tracing::debug!(dropped_ms, "carrier clear");
        let msg = self.encoder.clear();
        self.send(msg).await
    }

    async fn event(&mut self, ev: &ServerEvent) -> Result<(), axum::Error> {
        match ev {
            ServerEvent::Clear => self.clear().await,
            ServerEvent::BotSpeakingStopped { .. } if self.frames_since_mark > 0 => {
                self.send_mark().await
            }
            _ => Ok(()),
        }
    }

    fn mark_echo(&mut self, name: &str) {
        let outcome = self.playout.handle_mark(name);
        tracing::trace!(?outcome, "carrier mark echoed");
        if !matches!(outcome, MarkOutcome::Played { .. }) {
            return;
        }
        if let Some(at) = self.placed.iter().position(|(n, ..)| n == name) {
            let (_, epoch, ms) = self.placed[at];
            self.placed.drain(..=at);
            self.confirmations.confirm(epoch, ms);
        }
    }

    fn playout_confirmations(&self) -> Option<PlayoutConfirmations> {
        Some(self.confirmations.clone())
    }

    async fn close(mut self, _reason: Option<String>, code: u16) {
        tracing::debug!(
            played_ms = self.playout.played_ms(),
            cleared_ms = self.playout.cleared_ms(),
            "carrier stream closing"
        );
        send_close(&mut self.sink, code, "").await;
    }
}

/// Reads until the carrier's start; `Err` is the outcome when it never comes.
async fn wait_for_start(
    stream: &mut SplitStream<WebSocket>,
    sink: &mut WsSink,
    codec: &mut (dyn MediaStream + Send),
) -> Result<StreamStart, Outcome> {
    let deadline = tokio::time::sleep(START_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let msg = tokio::select! {
            msg = stream.next() => msg,
            () = &mut deadline => {
                send_close(sink, Outcome::StartTimeout.close_code(), "no start").await;
                return Err(Outcome::StartTimeout);
            }
        };
        let res = match msg {
            Some(Ok(Message::Text(t))) => codec.decode_text(t.as_str()),
            Some(Ok(Message::Binary(b))) => codec.decode_binary(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Err(Outcome::Disconnected),
        };
        match res {
            Ok(StreamEvent::Start(start)) => return Ok(start),
            Ok(_) => continue,
            Err(e) if !e.is_fatal() => tracing::debug!(error = %e, "carrier message skipped"),
            Err(e) => {
                tracing::info!(error = %e, carrier = codec.carrier().as_str(), "stream refused before start");
                let code = e.close_code();
                send_close(sink, code, "").await;
                return Err(Outcome::ProtocolError { close_code: code });
            }
        }
    }
}

/// What the upgrade settled for a carrier stream.
#[derive(Debug)]
pub(crate) struct StreamSetup {
    /// Whose stream it is.
    pub(crate) carrier: Carrier,
    /// The route token the stream's parameters must carry (the upgrade
    /// presented none).
    pub(crate) token: Option<String>,
    /// Where the upgrade came from: a stream refused for its token counts as
    /// a failed auth attempt of this source.
    pub(crate) source: Option<AuthSource>,
    /// The server's public base URL (`https://host`), where a Plivo transfer
    /// has its XML fetched.
    pub(crate) http_base: String,
}

/// Runs one carrier connection to its end.
pub(crate) async fn run(
    socket: WebSocket,
    state: Arc<AppState>,
    permit: CallPermit,
    setup: StreamSetup,
) {
    let StreamSetup {
        carrier,
        token,
        source,
        http_base,
    } = setup;
    let (mut sink, mut stream) = socket.split();
    let mut codec = new_stream(carrier, &state);
    let mut start = match wait_for_start(&mut stream, &mut sink, codec.as_mut()).await {
        Ok(s) => s,
        Err(outcome) => return finish(&state, outcome, permit),
    };
    if !token_accepted(&mut start, token.as_deref()) {
        tracing::info!(carrier = carrier.as_str(), "stream refused: no valid token");
        if let Some(source) = source {
            source.failed(&state);
        }
        send_close(&mut sink, UNAUTHORIZED_CLOSE, "unauthorized").await;
        return finish(&state, Outcome::Unauthorized, permit);
    }
    let format = start.format;
    let (Some(inbound), Some(encoder)) = (
        build_inbound(format.codec, format.sample_rate_hz).await,
        codec.encoder(),
    ) else {
        send_close(&mut sink, 1011, "").await;
        return finish(&state, Outcome::HandlerError, permit);
    };
    let call = call_start(&start, &state);
    let wire = CarrierWire {
        sink,
        bytes: Vec::with_capacity(format.frame_bytes()),
        encoder,
        playout: Playout::for_format(format),
        frames_since_mark: 0,
        confirmations: PlayoutConfirmations::new(),
        sending: (Epoch::ZERO, 0),
        placed: VecDeque::new(),
    };
    let ended = drive_call(&state, call, permit, wire, |io| {
        read_loop(stream, codec, inbound, io)
    })
    .await;
    if let Some(to) = &ended.transfer_to
        && transfer(&state, carrier, &start.call_id, to, &http_base).await
    {
        return;
    }
    if ended_by_server(ended.outcome) && state.controls.hangs_up(carrier) {
        let _ = state
            .controls
            .perform(&state.metrics, carrier, &start.call_id, &CallAction::HangUp)
            .await;
    }
}

/// Transfers the phone call to `to` through the carrier's REST API; false
/// when it could not be (the caller would be left with nobody: the call is
/// then hung up like any other the server ended).
async fn transfer(
    state: &AppState,
    carrier: Carrier,
    call_id: &str,
    to: &str,
    http_base: &str,
) -> bool {
    let target = match TransferTarget::parse(to) {
        Ok(target) => target,
        Err(e) => {
            tracing::warn!(error = %e, "transfer refused");
            state
                .metrics
                .call_control_total
                .with_label_values(&[carrier.as_str(), "transfer", "invalid"])
                .inc();
            return false;
        }
    };
    if carrier == Carrier::Plivo && state.controls.get(carrier).is_some() {
        return transfer_plivo(state, call_id, target, http_base).await;
    }
    let action = CallAction::Transfer(target);
    state
        .controls
        .perform(&state.metrics, carrier, call_id, &action)
        .await
        .is_ok()
}

/// Plivo's transfer: the destination waits under a token for Plivo to fetch
/// its XML from `{http_base}/plivo/transfer/{token}` ([`crate::plivo_transfer`]).
async fn transfer_plivo(
    state: &AppState,
    call_id: &str,
    target: TransferTarget,
    http_base: &str,
) -> bool {
    let transfers = &state.plivo_transfers;
    let Some(token) = transfers.register(target, std::time::Instant::now()) else {
        tracing::error!("plivo transfer: no randomness for its token");
        return false;
    };
    let url = format!("{http_base}{TRANSFER_PATH}{token}");
    let done = (state.controls)
        .transfer_plivo(&state.metrics, call_id, &url)
        .await
        .is_ok();
    if !done {
        transfers.take(&token, std::time::Instant::now());
    }
    done
}

/// True for the ends the server chose: the phone call would otherwise stay
/// up with nobody on the stream (Telnyx keeps a call whose stream closed).
fn ended_by_server(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Completed
            | Outcome::MaxDuration
            | Outcome::HandlerError
            | Outcome::Drained
            | Outcome::Transferred
    )
}

/// Takes the `token` parameter out of the start (it must not reach the
/// metadata, the prompt or the logs) and checks it when one is required.
fn token_accepted(start: &mut StreamStart, required: Option<&str>) -> bool {
    let offered = start.parameters.remove(TOKEN_PARAMETER);
    let Some(required) = required else {
        return true;
    };
    offered
        .as_ref()
        .and_then(|v| v.as_str())
        .is_some_and(|t| crate::gate::constant_time_eq(t.as_bytes(), required.as_bytes()))
}

fn call_start(start: &StreamStart, state: &AppState) -> CallStart {
    tracing::info!(
        call_id = %start.call_id,
        stream_id = %start.stream_id,
        carrier = start.carrier.as_str(),
        "carrier call started"
    );
    let mut metadata = start.parameters.clone();
    for (key, value) in [("from", &start.from), ("to", &start.to)] {
        if let Some(v) = value {
            metadata.entry(key).or_insert_with(|| v.clone().into());
        }
    }
    metadata.insert("carrier".into(), start.carrier.as_str().into());
    CallStart {
        call_id: start.call_id.clone(),
        transport: CallTransport::Carrier {
            carrier: start.carrier,
            stream_id: start.stream_id.clone(),
            call_id: start.call_id.clone(),
            codec: start.format.codec,
            sample_rate_hz: start.format.sample_rate_hz,
        },
        metadata,
        agent: state.agent.clone(),
        output_sample_rate_hz: start.format.sample_rate_hz,
        output_frame_ms: DEFAULT_FRAME_MS,
    }
}

/// The engine control for a key press.
fn dtmf_control(digit: char) -> Control {
    match DtmfDigit::new(digit) {
        Ok(digit) => Control::Dtmf { digit },
        Err(e) => Control::Invalid {
            code: "invalid_dtmf".into(),
            message: e.to_string(),
        },
    }
}

/// Reads the carrier's messages until the stream stops or fails.
async fn read_loop(
    mut stream: SplitStream<WebSocket>,
    mut codec: Box<dyn MediaStream + Send>,
    mut inbound: InboundAudio,
    io: RouteIo,
) -> Outcome {
    while let Some(msg) = stream.next().await {
        let at = now();
        let res = match &msg {
            Ok(Message::Text(t)) => codec.decode_text(t.as_str()),
            Ok(Message::Binary(b)) => codec.decode_binary(b),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return Outcome::Disconnected,
        };
        match res {
            Ok(StreamEvent::Media { .. }) => {
                while let Some(bytes) = codec.pop_frame() {
                    inbound.push(bytes, |f| io.push_frame(f, at));
                }
            }
            Ok(StreamEvent::Dtmf { digit }) => io.push_control(dtmf_control(digit), at).await,
            Ok(StreamEvent::Mark { name }) => {
                let _ = io.cmd_tx.send(WriterCmd::MarkEcho(name)).await;
            }
            Ok(StreamEvent::CarrierError { detail }) => {
                tracing::warn!(%detail, "the carrier reported an error on the stream");
            }
            Ok(StreamEvent::Stop) => return Outcome::ClientEnd,
            Ok(_) => {}
            Err(e) if !e.is_fatal() => tracing::debug!(error = %e, "carrier message skipped"),
            Err(e) => return protocol_error(&e),
        }
    }
    Outcome::Disconnected
}

fn protocol_error(e: &StreamError) -> Outcome {
    tracing::info!(error = %e, "carrier stream ended by bad input");
    Outcome::ProtocolError {
        close_code: e.close_code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisvox_transport::WireFormat;

    fn start_with(params: serde_json::Value) -> StreamStart {
        StreamStart {
            carrier: Carrier::Telnyx,
            stream_id: "s".into(),
            call_id: "c".into(),
            from: None,
            to: None,
            parameters: params.as_object().cloned().unwrap_or_default(),
            format: WireFormat::MULAW_8K,
        }
    }

    #[test]
    fn the_token_parameter_is_checked_and_never_kept() {
        let mut s = start_with(serde_json::json!({"token": "t1", "lang": "en"}));
        assert!(token_accepted(&mut s, Some("t1")));
        assert!(!s.parameters.contains_key("token"));
        assert_eq!(s.parameters["lang"], "en");
        let mut s = start_with(serde_json::json!({"token": "nope"}));
        assert!(!token_accepted(&mut s, Some("t1")));
        assert!(!token_accepted(
            &mut start_with(serde_json::json!({})),
            Some("t1")
        ));
        let mut s = start_with(serde_json::json!({"token": "x"}));
        assert!(token_accepted(&mut s, None));
        assert!(s.parameters.is_empty());
    }
}
