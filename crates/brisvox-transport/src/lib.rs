//! brisvox-transport: the wire protocols a call arrives on, as sans-IO codecs.
//!
//! - [`brisvox_ws`]: the brisvox websocket protocol, version 1
//!   (`docs/WEBSOCKET_PROTOCOL.md`): a JSON `start`, binary audio both ways, JSON
//!   events from the server.
//! - [`twilio`]: Twilio Media Streams (JSON text messages with base64 mu-law at
//!   8 kHz), plus [`twilio::TwilioPlayout`], which learns from echoed marks how
//!   much of the sent audio the caller has heard.
//! - [`telnyx`], [`plivo`], [`vonage`], [`exotel`]: the other carriers' media
//!   streams, each a [`carrier::MediaStream`]: the one interface every carrier
//!   (Twilio too, through [`twilio::TwilioStream`]) is driven through, with
//!   its shared [`carrier::StreamError`] and [`carrier::Playout`] tracker.
//! - [`plivo_answer`] and [`telnyx_answer`]: those carriers' answer webhooks
//!   (their signatures, the XML that streams a call here); [`form`] decodes
//!   the form bodies they send.
//! - [`framer`]: [`framer::FrameAssembler`], binary audio of any size in, whole
//!   20 ms frames out, bounded.
//! - `webrtc` (feature `webrtc`, on in the server): `webrtc::WebRtcPeer`, one
//!   call's WebRTC peer connection on str0m: Opus audio both ways, the
//!   `/call` protocol's controls and events on a data channel.
//!
//! Nothing here owns a socket, a task or a clock. The websocket server (in
//! `brisvox-server`) reads a message, hands it to a decoder (`decode`), acts on
//! the typed event it gets back, drains whole audio frames (`pop_frame`) and
//! writes what the encoders return. Every decoder bounds what it accepts by
//! named limits and reports bad input as a typed error, never a panic.

pub mod brisvox_ws;
pub mod carrier;
pub mod exotel;
pub mod form;
pub mod framer;
pub mod plivo;
pub mod plivo_answer;
pub mod telnyx;
pub mod telnyx_answer;
pub mod twilio;
pub mod vonage;
#[cfg(feature = "webrtc")]
pub mod webrtc;

mod fields;

pub use brisvox_ws::{
    AudioCodec, ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError, DecoderLimits,
    ServerEvent, StartInfo,
};
pub use carrier::{
    Carrier, CarrierEncoder, MediaStream, Outbound, Playout, StreamError, StreamEvent,
    StreamLimits, StreamStart, WireFormat,
};
pub use exotel::ExotelStream;
pub use framer::{FrameAssembler, FramerError};
pub use plivo::PlivoStream;
pub use telnyx::TelnyxStream;
pub use twilio::{TwilioDecoder, TwilioError, TwilioEvent, TwilioPlayout, TwilioStream};
pub use vonage::VonageStream;

/// Length of one audio frame on every transport, in milliseconds.
pub const FRAME_MS: u32 = 20;
