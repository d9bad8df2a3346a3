//! The routes' decoders (`brisvox-transport`): what a caller or a carrier
//! sends over the websocket, message by message, as the server's read loops
//! feed them: decode, take every whole frame, stop at a fatal error.
//!
//! Checked besides "no panic": every frame taken is one whole 20 ms frame of
//! the negotiated format, the frames taken are the frames announced, and the
//! messages the server would send back on a carrier's stream (a mark) stay
//! valid JSON whatever ids the carrier chose.

use brisvox_transport::brisvox_ws::{ClientMessage, ClientMessageDecoder};
use brisvox_transport::carrier::{MediaStream, Outbound, Playout, StreamEvent};
use brisvox_transport::twilio::{DEFAULT_MAX_PAYLOAD_BYTES, TwilioDecoder, TwilioStream};
use brisvox_transport::{ClientEvent, ExotelStream, PlivoStream, TelnyxStream, VonageStream};

use crate::messages::{Message, messages};

/// The Twilio route's bound on one text message (`ws_carrier.rs`: the larger
/// of `max_message_bytes` and 64 KiB).
const TWILIO_TEXT_LIMIT_BYTES: usize = 64 * 1024;

/// `/call`: the brisvox websocket protocol's client messages.
pub fn call_ws(data: &[u8]) {
    let mut decoder = ClientMessageDecoder::default();
    for msg in messages(data) {
        let decoded = match &msg {
            Message::Text(t) => decoder.decode(ClientMessage::Text(t)),
            Message::Binary(b) => decoder.decode(ClientMessage::Binary(b)),
        };
        match decoded {
            Ok(ClientEvent::Audio { frames_ready }) => {
                let info = decoder
                    .start_info()
                    .expect("audio is accepted only after start");
                let frame_bytes = info.codec.frame_bytes(info.sample_rate_hz);
                let mut taken = 0;
                while let Some(frame) = decoder.pop_frame() {
                    assert_eq!(frame.len(), frame_bytes, "a frame of the wrong size");
                    taken += 1;
                }
                assert_eq!(taken, frames_ready, "frames announced vs taken");
            }
            Ok(_) => {}
            Err(e) => {
                let _ = (e.code(), e.close_code(), e.to_string());
                if e.is_fatal() {
                    return;
                }
            }
        }
    }
}

/// `/twilio`: Twilio Media Streams, through the carrier interface.
pub fn twilio(data: &[u8]) {
    let decoder = TwilioDecoder::new(TWILIO_TEXT_LIMIT_BYTES, DEFAULT_MAX_PAYLOAD_BYTES);
    carrier_stream(TwilioStream::new(decoder), data);
}

/// Telnyx media streaming.
pub fn telnyx(data: &[u8]) {
    carrier_stream(TelnyxStream::default(), data);
}

/// Plivo audio streams.
pub fn plivo(data: &[u8]) {
    carrier_stream(PlivoStream::default(), data);
}

/// Vonage websockets.
pub fn vonage(data: &[u8]) {
    carrier_stream(VonageStream::default(), data);
}

/// Exotel AgentStream.
pub fn exotel(data: &[u8]) {
    carrier_stream(ExotelStream::default(), data);
}

/// Drives one carrier codec through `data`'s messages.
fn carrier_stream(mut stream: impl MediaStream, data: &[u8]) {
    let mut playout: Option<Playout> = None;
    for msg in messages(data) {
        let decoded = match &msg {
            Message::Text(t) => stream.decode_text(t),
            Message::Binary(b) => stream.decode_binary(b),
        };
        let event = match decoded {
            Ok(event) => event,
            Err(e) => {
                let _ = (e.close_code(), e.to_string());
                if e.is_fatal() {
                    return;
                }
                continue;
            }
        };
        match event {
            StreamEvent::Start(start) => {
                check_replies(&stream);
                playout = Some(Playout::for_format(start.format));
            }
            StreamEvent::Media { frames_ready, .. } => take_frames(&mut stream, frames_ready),
            StreamEvent::Mark { name } => {
                if let Some(p) = &mut playout {
                    p.handle_mark(&name);
                }
            }
            StreamEvent::Stop => return,
            _ => {}
        }
    }
}

fn take_frames(stream: &mut impl MediaStream, frames_ready: usize) {
    let frame_bytes = stream
        .format()
        .expect("media frames only after start")
        .frame_bytes();
    let mut taken = 0;
    while let Some(frame) = stream.pop_frame() {
        assert_eq!(frame.len(), frame_bytes, "a frame of the wrong size");
        taken += 1;
    }
    assert_eq!(taken, frames_ready, "frames announced vs taken");
}

/// What the server sends back on the stream must stay well-formed whatever
/// ids the carrier's start carried.
fn check_replies(stream: &impl MediaStream) {
    let format = stream.format().expect("started");
    let encoder = stream.encoder().expect("an encoder once started");
    assert_eq!(
        encoder.format(),
        format,
        "the encoder's format is the stream's"
    );
    let audio = vec![0u8; format.frame_bytes()];
    let replies = [
        encoder.mark("brisvox-mark-1"),
        encoder.clear(),
        encoder.media(&audio),
    ];
    for reply in replies {
        if let Outbound::Text(text) = reply {
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "a reply that is not JSON: {text}"
            );
        }
    }
}
