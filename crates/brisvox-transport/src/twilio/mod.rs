//! Twilio Media Streams, bidirectional (`<Connect><Stream>`).
//!
//! Twilio opens a websocket to the server and sends JSON text messages:
//! `connected`, one `start` (stream and call ids, tracks, custom parameters,
//! media format: mu-law, 8000 Hz, mono), `media` (base64 mu-law chunks of the
//! caller's audio), `dtmf` (a key press), `mark` (the echo of a mark the server
//! sent, once the audio queued before it has played) and `stop`. The server
//! sends `media` (base64 mu-law to play), `mark` and `clear` (drop all queued
//! audio; Twilio then echoes the pending marks).
//!
//! - [`TwilioDecoder`]: Twilio's messages in, [`TwilioEvent`]s and whole 20 ms
//!   mu-law frames out ([`TwilioDecoder::pop_frame`]), typed [`TwilioError`]s.
//! - [`TwilioEncoder`]: the outbound `media`, `mark` and `clear` messages.
//! - [`TwilioPlayout`]: which of the sent audio the caller has heard, from the
//!   echoed marks; forgets pending marks on barge-in.
//! - [`signature`]: `X-Twilio-Signature` validation (webhooks and the stream's
//!   websocket upgrade); [`twiml`]: the `<Connect><Stream>` and `<Dial>` TwiML.

mod decode;
pub mod signature;
mod stream;
pub mod twiml;

pub use crate::carrier::{DEFAULT_MAX_PENDING_MARKS, MARK_PREFIX, MarkOutcome, TwilioPlayout};
pub use decode::{MediaChunk, MediaFormat, TwilioDecoder, TwilioError, TwilioEvent, TwilioStart};
pub use stream::TwilioStream;

use serde::Serialize;

/// Twilio's audio rate, in Hz.
pub const TWILIO_SAMPLE_RATE_HZ: u32 = 8000;

/// Twilio's audio encoding as named in `start.mediaFormat.encoding`.
pub const TWILIO_ENCODING: &str = "audio/x-mulaw";

/// Bytes of one 20 ms mu-law frame at 8 kHz.
pub const TWILIO_FRAME_BYTES: usize = 160;

/// Default bound on one text message from Twilio, in bytes.
pub const DEFAULT_MAX_TEXT_BYTES: usize = 64 * 1024;

/// Default bound on one decoded `media` payload, in bytes (1 s of mu-law).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 8000;

/// Builds the messages the server sends to Twilio on one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwilioEncoder {
    stream_sid: String,
}

#[derive(Serialize)]
struct Outbound<'a> {
    event: &'static str,
    #[serde(rename = "streamSid")]
    stream_sid: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    media: Option<OutMedia>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mark: Option<OutMark<'a>>,
}

#[derive(Serialize)]
struct OutMedia {
    payload: String,
}

#[derive(Serialize)]
struct OutMark<'a> {
    name: &'a str,
}

/// The message a server sends for `what` on the stream `stream_sid`.
pub(crate) fn encode(what: crate::carrier::Encode<'_>, stream_sid: &str) -> crate::Outbound {
    use crate::carrier::Encode;
    let enc = TwilioEncoder::new(stream_sid);
    crate::Outbound::Text(match what {
        Encode::Media(audio) => enc.media(audio),
        Encode::Mark(name) => enc.mark(name),
        Encode::Clear => enc.clear(),
    })
}

impl TwilioEncoder {
    /// An encoder for the stream `stream_sid` (from `start`).
    pub fn new(stream_sid: impl Into<String>) -> Self {
        Self {
            stream_sid: stream_sid.into(),
        }
    }

    /// The stream this encoder writes to.
    pub fn stream_sid(&self) -> &str {
        &self.stream_sid
    }

    /// A `media` message that plays `mulaw` (8 kHz mu-law bytes).
    pub fn media(&self, mulaw: &[u8]) -> String {
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::STANDARD.encode(mulaw);
        self.to_json(Outbound {
            event: "media",
            stream_sid: &self.stream_sid,
            media: Some(OutMedia { payload }),
            mark: None,
        })
    }

    /// A `mark` message named `name`; Twilio echoes it when the audio sent
    /// before it has played (or was cleared).
    pub fn mark(&self, name: &str) -> String {
        self.to_json(Outbound {
            event: "mark",
            stream_sid: &self.stream_sid,
            media: None,
            mark: Some(OutMark { name }),
        })
    }

    /// A `clear` message: Twilio drops all audio queued for playback.
    pub fn clear(&self) -> String {
        self.to_json(Outbound {
            event: "clear",
            stream_sid: &self.stream_sid,
            media: None,
            mark: None,
        })
    }

    fn to_json(&self, msg: Outbound<'_>) -> String {
        // Cannot fail: plain strings and structs with string keys.
        serde_json::to_string(&msg).expect("outbound Twilio messages always serialise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_messages_have_twilios_shape() {
        let enc = TwilioEncoder::new("MZ1");
        assert_eq!(
            enc.media(&[0xff, 0x7f, 0x00]),
            r#"{"event":"media","streamSid":"MZ1","media":{"payload":"/38A"}}"#
        );
        assert_eq!(
            enc.mark("bv-1"),
            r#"{"event":"mark","streamSid":"MZ1","mark":{"name":"bv-1"}}"#
        );
        assert_eq!(enc.clear(), r#"{"event":"clear","streamSid":"MZ1"}"#);
    }
}
