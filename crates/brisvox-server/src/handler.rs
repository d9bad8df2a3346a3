//! Where a decoded call is handed to the engine: the [`CallHandler`] trait.
//!
//! A route (`/call`, `/twilio`) accepts a call and builds its [`RouteEdge`]:
//! the engine's one call edge ([`brisvox_engine::edge`]) with the two
//! ready-made ends a websocket route uses, an
//! [`inbound_queue`](brisvox_engine::inbound_queue) its reader pushes the
//! caller's frames (16 kHz, 20 ms, with their arrival time) and controls into,
//! and an [`audio_queue`](brisvox_engine::audio_queue) its writer takes the
//! answer's frames (at [`CallStart::output_sample_rate_hz`], tagged with their
//! epoch) and clears from; plus the call's [`EventBus`](brisvox_engine::EventBus),
//! whose events the writer, `/metrics` and the logs consume independently.
//! The route then calls [`CallHandler::run_call`] once, on its own task.
//!
//! The product's handler is [`EngineCallHandler`](crate::engine::EngineCallHandler),
//! which runs [`brisvox_engine::run_call`] on the edge as it is;
//! [`EchoCallHandler`] is a test double that plays the caller back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use brisvox_audio::OutputFramer;
use brisvox_core::Epoch;
use brisvox_core::frame::INTERNAL_RATE_HZ;
use brisvox_engine::{
    AudioQueueSink, CallEdge, CallEnd, CallSink, CallSource, Control, EngineEvent, Inbound,
    InboundQueue,
};
use brisvox_transport::AudioCodec;

use crate::agent::AgentSettings;

/// The call's edge as a websocket route builds it.
pub type RouteEdge = CallEdge<InboundQueue, AudioQueueSink>;

/// The transport a call arrived on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallTransport {
    /// The brisvox websocket protocol (`/call`).
    BrisvoxWs {
        /// The client's codec.
        codec: AudioCodec,
        /// The client's sample rate, in Hz.
        sample_rate_hz: u32,
    },
    /// A phone carrier's media stream (`/twilio`, `/telnyx`, `/plivo`,
    /// `/vonage`, `/exotel`).
    Carrier {
        /// The carrier.
        carrier: brisvox_transport::Carrier,
        /// The carrier's id of the stream (Twilio `streamSid`).
        stream_id: String,
        /// The carrier's id of the call, as its REST API takes it (Twilio
        /// `callSid`, Telnyx `call_control_id`, ...).
        call_id: String,
        /// The stream's codec.
        codec: AudioCodec,
        /// The stream's sample rate, in Hz.
        sample_rate_hz: u32,
    },
    /// WebRTC (`/webrtc/offer`): Opus at 48 kHz both ways, the `/call`
    /// protocol's controls and events on a data channel.
    WebRtc,
}

impl CallTransport {
    /// The route's name, as the engine's [`CallContext`](brisvox_engine::CallContext) keeps it.
    pub fn name(&self) -> &'static str {
        match self {
            CallTransport::BrisvoxWs { .. } => "brisvox_ws",
            CallTransport::WebRtc => "webrtc",
            CallTransport::Carrier { carrier, .. } => carrier.as_str(),
        }
    }
}

/// What the handler knows when the call starts (the metadata is also in the
/// edge's [`CallContext`](brisvox_engine::CallContext)).
#[derive(Debug, Clone)]
pub struct CallStart {
    /// The call's id (the client's `call_id`, or Twilio's `callSid`).
    pub call_id: String,
    /// The transport.
    pub transport: CallTransport,
    /// Free metadata (the client's `metadata`, or Twilio's `customParameters`).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The agent.
    pub agent: Arc<AgentSettings>,
    /// The rate of the frames the route's writer takes, in Hz (the
    /// transport's rate); frames at any other rate are dropped, never
    /// resampled on the writer.
    pub output_sample_rate_hz: u32,
    /// The duration of each frame the route's writer takes, in milliseconds:
    /// what the client asked for on `/call` (`start`'s `frame_ms`), 20 on
    /// every other route.
    pub output_frame_ms: u32,
}

/// The handler could not run the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("call failed: {reason}")]
pub struct CallFailed {
    /// Why, for the `error` event and the logs.
    pub reason: String,
}

/// The future `run_call` returns: how the call ended, or why it could not run.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<CallEnd, CallFailed>> + Send>>;

/// Runs one call. Implemented by the engine's integration; the server calls it
/// once per admitted call, on its own task.
pub trait CallHandler: Send + Sync + 'static {
    /// Runs the call on `edge` until its source ends (the caller hung up or
    /// the route closed the input), its sink closes, or the handler ends it
    /// (then the route closes the connection: `end` `completed`, or
    /// `max_duration` for [`EndReason::MaxDuration`](brisvox_engine::turn::EndReason)).
    /// The server aborts the task if it does not return within the drain
    /// grace after the input closed.
    fn run_call(&self, start: CallStart, edge: RouteEdge) -> CallFuture;
}

/// A test double, not the product: plays the caller's audio back (framed at
/// the transport's rate, as the engine does; 16 kHz callers get their frames
/// bit exact), echoes `say` as a final transcript, reports DTMF and refuses
/// nothing. Used by the server's own tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoCallHandler;

impl CallHandler for EchoCallHandler {
    fn run_call(&self, start: CallStart, mut edge: RouteEdge) -> CallFuture {
        Box::pin(async move {
            let (out_hz, out_ms) = (start.output_sample_rate_hz, start.output_frame_ms);
            // Built off the workers, as the engine builds its framer.
            let framer = tokio::task::spawn_blocking(move || {
                OutputFramer::new(INTERNAL_RATE_HZ, out_hz, out_ms)
            })
            .await;
            let mut framer = match framer {
                Ok(Ok(framer)) => framer,
                Ok(Err(e)) => {
                    return Err(CallFailed {
                        reason: e.to_string(),
                    });
                }
                Err(e) => {
                    return Err(CallFailed {
                        reason: e.to_string(),
                    });
                }
            };
            while let Some(item) = edge.source.recv().await {
                match item {
                    Inbound::Audio { frame, .. } => {
                        let _ = framer.push(frame.samples(), frame.sample_rate_hz());
                        while let Some(out) = framer.next_frame() {
                            if edge.sink.send_audio(Epoch::ZERO, out).await.is_err() {
                                return Ok(CallEnd::TransportClosed);
                            }
                        }
                    }
                    Inbound::Control { control, .. } => match control {
                        Control::Say { text, .. } => edge.events.emit(EngineEvent::Transcript {
                            text,
                            is_final: true,
                        }),
                        Control::Dtmf { digit } => edge.events.emit(EngineEvent::Dtmf { digit }),
                        Control::Hangup { .. } => return Ok(CallEnd::Requested),
                        _ => {}
                    },
                    _ => {}
                }
            }
            Ok(CallEnd::Hangup)
        })
    }
}
