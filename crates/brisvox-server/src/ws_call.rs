//! The `/call` route's adapter: the brisvox websocket protocol
//! (`docs/WEBSOCKET_PROTOCOL.md`) on the engine's call edge.
//!
//! The codec is `brisvox_transport::brisvox_ws` (sans-IO). This file is what
//! is the route's own: waiting for `start`, the reader (audio to 16 kHz frames
//! with their arrival time, `say` / `dtmf` to engine controls, `end`, protocol
//! errors) and the [`Wire`] (each answer frame encoded and sent as one binary
//! message, `clear` and the events as JSON). [`crate::route`] does the rest.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::{Control, DtmfDigit};
use brisvox_transport::brisvox_ws::ServerEvent;
use brisvox_transport::{
    AudioCodec, ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError, StartInfo,
};
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};

use crate::admission::CallPermit;
use crate::audio_edge::{InboundAudio, build_inbound};
use crate::handler::{CallStart, CallTransport};
use crate::route::{
    Outcome, RouteIo, START_TIMEOUT, Wire, WriterCmd, WsSink, drive_call, finish, now, send_close,
};
use crate::state::AppState;

/// The brisvox protocol's writer: JSON events and binary audio.
struct BrisvoxWire {
    sink: WsSink,
    codec: AudioCodec,
    bytes: Vec<u8>,
}

impl Wire for BrisvoxWire {
    async fn audio(&mut self, _epoch: Epoch, frame: &AudioFrame) -> Result<(), axum::Error> {
        self.codec.encode_to(frame.samples(), &mut self.bytes);
        let msg = Message::Binary(self.bytes.as_slice().to_vec().into());
        self.sink.send(msg).await
    }

    async fn clear(&mut self) -> Result<(), axum::Error> {
        self.event(&ServerEvent::Clear).await
    }

    async fn event(&mut self, ev: &ServerEvent) -> Result<(), axum::Error> {
        self.sink.send(Message::Text(ev.to_json().into())).await
    }

    async fn close(mut self, reason: Option<String>, code: u16) {
        if let Some(reason) = reason {
            let _ = self
                .event(&ServerEvent::End {
                    reason: reason.clone(),
                })
                .await;
        }
        send_close(&mut self.sink, code, "").await;
    }
}

fn error_event(e: &DecodeError) -> ServerEvent {
    ServerEvent::Error {
        code: e.code().to_owned(),
        message: e.to_string(),
    }
}

async fn send_event(sink: &mut WsSink, ev: &ServerEvent) {
    let _ = sink.send(Message::Text(ev.to_json().into())).await;
}

/// Ends a connection before the call started: `error` (if any), `end`, close.
async fn refuse(sink: &mut WsSink, error: Option<ServerEvent>, reason: &str, code: u16) {
    if let Some(ev) = error {
        send_event(sink, &ev).await;
    }
    send_event(
        sink,
        &ServerEvent::End {
            reason: reason.to_owned(),
        },
    )
    .await;
    send_close(sink, code, reason).await;
}

/// Reads until a valid `start`; `Err` is the outcome when the call never starts.
async fn wait_for_start(
    stream: &mut SplitStream<WebSocket>,
    sink: &mut WsSink,
    decoder: &mut ClientMessageDecoder,
) -> Result<StartInfo, Outcome> {
    let deadline = tokio::time::sleep(START_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let msg = tokio::select! {
            msg = stream.next() => msg,
            () = &mut deadline => {
                let ev = ServerEvent::Error { code: "start_timeout".into(), message: format!("no start message within {} s", START_TIMEOUT.as_secs()) };
                refuse(sink, Some(ev), "start_timeout", Outcome::StartTimeout.close_code()).await;
                return Err(Outcome::StartTimeout);
            }
        };
        let res = match msg {
            Some(Ok(Message::Text(t))) => decoder.decode(ClientMessage::Text(t.as_str())),
            Some(Ok(Message::Binary(b))) => decoder.decode(ClientMessage::Binary(&b)),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Err(Outcome::Disconnected),
        };
        match res {
            Ok(ClientEvent::Start(info)) => return Ok(info),
            Ok(ClientEvent::End { .. }) => {
                refuse(sink, None, "client_end", 1000).await;
                return Err(Outcome::ClientEnd);
            }
            Ok(_) => continue,
            Err(e) if !e.is_fatal() => send_event(sink, &error_event(&e)).await,
            Err(e) => {
                tracing::info!(error = %e, "call refused before start");
                refuse(
                    sink,
                    Some(error_event(&e)),
                    "protocol_error",
                    e.close_code(),
                )
                .await;
                return Err(Outcome::ProtocolError {
                    close_code: e.close_code(),
                });
            }
        }
    }
}

/// Runs one `/call` connection to its end.
pub(crate) async fn run(socket: WebSocket, state: Arc<AppState>, permit: CallPermit) {
    let (mut sink, mut stream) = socket.split();
    let mut decoder = ClientMessageDecoder::new(state.limits);
    let info = match wait_for_start(&mut stream, &mut sink, &mut decoder).await {
        Ok(info) => info,
        Err(outcome) => return finish(&state, outcome, permit),
    };
    let Some(inbound) = build_inbound(info.codec, info.sample_rate_hz).await else {
        let ev = ServerEvent::Error {
            code: "call_failed".into(),
            message: "cannot set up audio conversion".into(),
        };
        refuse(&mut sink, Some(ev), "call_failed", 1011).await;
        return finish(&state, Outcome::HandlerError, permit);
    };
    send_event(&mut sink, &started_event(&info, &state)).await;
    let codec = info.codec;
    let start = call_start(info, &state);
    // One outgoing frame's bytes.
    let samples = start.output_sample_rate_hz as usize * start.output_frame_ms as usize / 1000;
    let bytes = Vec::with_capacity(codec.bytes_per_sample() * samples);
    let wire = BrisvoxWire { sink, codec, bytes };
    drive_call(&state, start, permit, wire, |io| {
        read_loop(stream, decoder, inbound, io)
    })
    .await;
}

fn started_event(info: &StartInfo, state: &AppState) -> ServerEvent {
    ServerEvent::Started {
        protocol_version: info.protocol_version,
        call_id: info.call_id.clone(),
        codec: info.codec,
        sample_rate: info.sample_rate_hz,
        frame_ms: info.frame_ms,
        providers: state.agent.providers(),
        mock: state.agent.uses_mock(),
    }
}

fn call_start(info: StartInfo, state: &AppState) -> CallStart {
    let (codec, rate, frame_ms) = (info.codec, info.sample_rate_hz, info.frame_ms);
    tracing::info!(call_id = %info.call_id, codec = codec.as_str(), rate, frame_ms, "call started");
    CallStart {
        call_id: info.call_id,
        transport: CallTransport::BrisvoxWs {
            codec,
            sample_rate_hz: rate,
        },
        metadata: info.metadata,
        agent: state.agent.clone(),
        output_sample_rate_hz: rate,
        output_frame_ms: info.frame_ms,
    }
}

/// Reads the client's messages until the call ends from the client's side.
async fn read_loop(
    mut stream: SplitStream<WebSocket>,
    mut decoder: ClientMessageDecoder,
    mut inbound: InboundAudio,
    io: RouteIo,
) -> Outcome {
    while let Some(msg) = stream.next().await {
        let at = now();
        let res = match &msg {
            Ok(Message::Text(t)) => decoder.decode(ClientMessage::Text(t.as_str())),
            Ok(Message::Binary(b)) => decoder.decode(ClientMessage::Binary(b)),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return Outcome::Disconnected,
        };
        match res {
            Ok(ClientEvent::Audio { .. }) => {
                while let Some(bytes) = decoder.pop_frame() {
                    inbound.push(bytes, |f| io.push_frame(f, at));
                }
            }
            Ok(ClientEvent::Say { text, interrupt }) => {
                io.push_control(Control::Say { text, interrupt }, at).await;
            }
            Ok(ClientEvent::Dtmf { digit }) => {
                // The decoder checked the key.
                if let Ok(digit) = DtmfDigit::new(digit) {
                    io.push_control(Control::Dtmf { digit }, at).await;
                }
            }
            Ok(ClientEvent::End { .. }) => return Outcome::ClientEnd,
            Ok(_) => {}
            Err(e) => {
                let _ = io.cmd_tx.send(WriterCmd::Event(error_event(&e))).await;
                if e.is_fatal() {
                    tracing::info!(error = %e, "call ended by bad input");
                    return Outcome::ProtocolError {
                        close_code: e.close_code(),
                    };
                }
            }
        }
    }
    Outcome::Disconnected
}
