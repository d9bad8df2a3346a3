//! The `/twilio` route's adapter: Twilio Media Streams (bidirectional
//! `<Connect><Stream>`) on the engine's call edge.
//!
//! The codec is `brisvox_transport::twilio` (sans-IO). Here: waiting for
//! `start`, the reader (media to 16 kHz frames with their arrival time, `dtmf`
//! to an engine control, marks to the writer, `stop`) and the [`Wire`] (each
//! answer frame as one `media` message, a `mark` every
//! [`MARK_EVERY_FRAMES`], `clear`). `customParameters` become the call's
//! metadata. When the engine ends the call the stream is closed (Twilio then
//! goes on with the TwiML after `<Connect>`, usually the end of the call).
//!
//! Twilio reads no JSON errors, so bad input ends the stream with a close code
//! only (1002 malformed, 1003 unsupported, 1009 too large); unknown events and
//! foreign `streamSid`s are logged and skipped.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use brisvox_core::AudioFrame;
use brisvox_engine::{Control, DtmfDigit};
use brisvox_transport::brisvox_ws::ServerEvent;
use brisvox_transport::twilio::{
    DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_TEXT_BYTES, MarkOutcome, TWILIO_SAMPLE_RATE_HZ,
    TwilioEncoder, TwilioPlayout, TwilioStart,
};
use brisvox_transport::{AudioCodec, TwilioDecoder, TwilioError, TwilioEvent};
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};

use crate::admission::CallPermit;
use crate::audio_edge::{InboundAudio, build_inbound};
use crate::handler::{CallStart, CallTransport};
use crate::route::{
    Outcome, RouteIo, START_TIMEOUT, Wire, WriterCmd, WsSink, drive_call, finish, now, send_close,
};
use crate::state::AppState;

/// A mark is placed after this many answer frames (100 ms at 20 ms each).
pub const MARK_EVERY_FRAMES: u32 = 5;

/// The Twilio writer: `media`, `mark` and `clear` messages.
struct TwilioWire {
    sink: WsSink,
    bytes: Vec<u8>,
    encoder: TwilioEncoder,
    playout: TwilioPlayout,
    frames_since_mark: u32,
}

impl TwilioWire {
    async fn send_mark(&mut self) -> Result<(), axum::Error> {
        self.frames_since_mark = 0;
        let name = self.playout.next_mark();
        let msg = self.encoder.mark(&name);
        self.sink.send(Message::Text(msg.into())).await
    }
}

impl Wire for TwilioWire {
    async fn audio(&mut self, frame: &AudioFrame) -> Result<(), axum::Error> {
        AudioCodec::Mulaw.encode_to(frame.samples(), &mut self.bytes);
        self.playout.on_media_sent(self.bytes.len());
        let msg = self.encoder.media(&self.bytes);
        self.sink.send(Message::Text(msg.into())).await?;
        self.frames_since_mark += 1;
        if self.frames_since_mark >= MARK_EVERY_FRAMES {
            self.send_mark().await?;
        }
        Ok(())
    }

    async fn clear(&mut self) -> Result<(), axum::Error> {
        let dropped_ms = self.playout.on_clear();
        self.frames_since_mark = 0;
        tracing::debug!(dropped_ms, "twilio clear");
        self.sink
            .send(Message::Text(self.encoder.clear().into()))
            .await
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
        if let MarkOutcome::Played {
            played_ms,
            unplayed_ms,
        } = self.playout.handle_mark(name)
        {
            tracing::trace!(played_ms, unplayed_ms, "twilio played");
        }
    }

    async fn close(mut self, _reason: Option<String>, code: u16) {
        tracing::debug!(
            played_ms = self.playout.played_ms(),
            cleared_ms = self.playout.cleared_ms(),
            "twilio stream closing"
        );
        send_close(&mut self.sink, code, "").await;
    }
}

fn close_code_for(e: &TwilioError) -> u16 {
    match e {
        TwilioError::MessageTooLarge { .. } | TwilioError::PayloadTooLarge { .. } => 1009,
        TwilioError::BinaryMessage { .. } | TwilioError::UnsupportedMediaFormat { .. } => 1003,
        _ => 1002,
    }
}

/// Reads until Twilio's `start`; `Err` is the outcome when it never comes.
async fn wait_for_start(
    stream: &mut SplitStream<WebSocket>,
    sink: &mut WsSink,
    decoder: &mut TwilioDecoder,
) -> Result<TwilioStart, Outcome> {
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
            Some(Ok(Message::Text(t))) => decoder.decode_text(t.as_str()),
            Some(Ok(Message::Binary(b))) => decoder.decode_binary(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Err(Outcome::Disconnected),
        };
        match res {
            Ok(TwilioEvent::Start(start)) => return Ok(start),
            Ok(_) => continue,
            Err(e) if !e.is_fatal() => tracing::debug!(error = %e, "twilio message skipped"),
            Err(e) => {
                tracing::info!(error = %e, "twilio stream refused before start");
                let code = close_code_for(&e);
                send_close(sink, code, "").await;
                return Err(Outcome::ProtocolError { close_code: code });
            }
        }
    }
}

/// Runs one `/twilio` connection to its end.
pub(crate) async fn run(socket: WebSocket, state: Arc<AppState>, permit: CallPermit) {
    let (mut sink, mut stream) = socket.split();
    let text_limit = state.limits.max_binary_bytes.max(DEFAULT_MAX_TEXT_BYTES);
    let mut decoder = TwilioDecoder::new(text_limit, DEFAULT_MAX_PAYLOAD_BYTES);
    let start = match wait_for_start(&mut stream, &mut sink, &mut decoder).await {
        Ok(s) => s,
        Err(outcome) => return finish(&state, outcome, permit),
    };
    let Some(inbound) = build_inbound(AudioCodec::Mulaw, TWILIO_SAMPLE_RATE_HZ).await else {
        send_close(&mut sink, 1011, "").await;
        return finish(&state, Outcome::HandlerError, permit);
    };
    let call = call_start(&start, &state);
    let wire = TwilioWire {
        sink,
        bytes: Vec::with_capacity(AudioCodec::Mulaw.frame_bytes(TWILIO_SAMPLE_RATE_HZ)),
        encoder: TwilioEncoder::new(start.stream_sid),
        playout: TwilioPlayout::default(),
        frames_since_mark: 0,
    };
    let outcome = drive_call(&state, call, wire, |io| {
        read_loop(stream, decoder, inbound, io)
    })
    .await;
    finish(&state, outcome, permit);
}

fn call_start(start: &TwilioStart, state: &AppState) -> CallStart {
    tracing::info!(call_id = %start.call_sid, stream_sid = %start.stream_sid, "twilio call started");
    let mut metadata = start.custom_parameters.clone();
    let tracks = serde_json::Value::from(start.tracks.clone());
    metadata.insert("twilio_tracks".into(), tracks);
    CallStart {
        call_id: start.call_sid.clone(),
        transport: CallTransport::Twilio {
            stream_sid: start.stream_sid.clone(),
            call_sid: start.call_sid.clone(),
            account_sid: start.account_sid.clone(),
        },
        metadata,
        agent: state.agent.clone(),
        output_sample_rate_hz: TWILIO_SAMPLE_RATE_HZ,
    }
}

/// Reads Twilio's messages until the stream stops or fails.
async fn read_loop(
    mut stream: SplitStream<WebSocket>,
    mut decoder: TwilioDecoder,
    mut inbound: InboundAudio,
    io: RouteIo,
) -> Outcome {
    while let Some(msg) = stream.next().await {
        let at = now();
        let res = match &msg {
            Ok(Message::Text(t)) => decoder.decode_text(t.as_str()),
            Ok(Message::Binary(b)) => decoder.decode_binary(b),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return Outcome::Disconnected,
        };
        match res {
            Ok(TwilioEvent::Media(_)) => {
                while let Some(bytes) = decoder.pop_frame() {
                    inbound.push(bytes, |f| io.push_frame(f, at));
                }
            }
            Ok(TwilioEvent::Dtmf { digit, .. }) => {
                let control = match DtmfDigit::new(digit) {
                    Ok(digit) => Control::Dtmf { digit },
                    Err(e) => Control::Invalid {
                        code: "invalid_dtmf".into(),
                        message: e.to_string(),
                    },
                };
                io.push_control(control, at).await;
            }
            Ok(TwilioEvent::Mark { name }) => {
                let _ = io.cmd_tx.send(WriterCmd::MarkEcho(name)).await;
            }
            Ok(TwilioEvent::Stop { .. }) => return Outcome::ClientEnd,
            Ok(_) => {}
            Err(e) if !e.is_fatal() => tracing::debug!(error = %e, "twilio message skipped"),
            Err(e) => {
                tracing::info!(error = %e, "twilio stream ended by bad input");
                return Outcome::ProtocolError {
                    close_code: close_code_for(&e),
                };
            }
        }
    }
    Outcome::Disconnected
}
