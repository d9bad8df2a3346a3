//! The brisvox websocket protocol, version 1 (`docs/WEBSOCKET_PROTOCOL.md`).
//!
//! A client opens the websocket, sends one JSON `start` text message, then
//! streams binary audio (PCM16 little-endian or mu-law, at the rate it chose).
//! The server answers with JSON events and binary audio in the same codec and
//! rate. Either side may end the call with an `end` message.
//!
//! - [`ClientMessageDecoder`]: websocket messages from the client in, typed
//!   [`ClientEvent`]s and whole 20 ms audio frames out, or a typed
//!   [`DecodeError`] (each with a stable [`DecodeError::code`] for the `error`
//!   event and a websocket close code when it ends the call).
//! - [`ServerEvent`]: the server's JSON events; [`ServerEvent::to_json`] encodes.
//! - [`ClientControl`]: the client's text messages, for clients and tests.
//!
//! Sans-IO: the server's websocket task feeds each message to
//! [`ClientMessageDecoder::decode`], then drains
//! [`ClientMessageDecoder::pop_frame`] until `None`.

mod decode;
mod events;

pub use decode::{ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError, close_code};
pub use events::{ClientControl, Providers, ServerEvent, TurnMetricsMs};

use brisvox_audio::g711::G711Law;
use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Sample rates a client may choose, in Hz.
pub const SUPPORTED_SAMPLE_RATES_HZ: [u32; 4] = [8000, 16000, 24000, 48000];

/// Durations a client may choose for the server's audio messages (`start`'s
/// `frame_ms`), in milliseconds: each fits one frame at every supported rate.
pub const SUPPORTED_FRAME_MS: [u32; 3] = [10, 20, 40];

/// The duration of the server's audio messages when `start` names none, in ms.
pub const DEFAULT_FRAME_MS: u32 = 20;

/// Default bound on one text message, in bytes (a `start` with its metadata).
pub const DEFAULT_MAX_TEXT_BYTES: usize = 16 * 1024;

/// Default bound on one binary message, in bytes: 500 ms of PCM16 at 48 kHz.
pub const DEFAULT_MAX_BINARY_BYTES: usize = 48_000;

/// Default bound on audio bytes waiting to form a frame, in bytes: one maximal
/// binary message plus one frame at the highest rate (PCM16 48 kHz).
pub const DEFAULT_MAX_PENDING_AUDIO_BYTES: usize = DEFAULT_MAX_BINARY_BYTES + 1920;

/// Bound on the `call_id` string, in bytes.
pub const MAX_CALL_ID_BYTES: usize = 256;

/// Audio encoding of the binary messages, chosen by the client in `start`,
/// and of every carrier's media (see [`crate::carrier::WireFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AudioCodec {
    /// Signed 16-bit little-endian PCM, mono.
    Pcm16,
    /// G.711 mu-law (PCMU), one byte per sample, mono.
    Mulaw,
    /// G.711 A-law (PCMA), one byte per sample, mono.
    Alaw,
}

impl AudioCodec {
    /// The codec's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pcm16 => "pcm16",
            Self::Mulaw => "mulaw",
            Self::Alaw => "alaw",
        }
    }

    /// Bytes per sample.
    pub fn bytes_per_sample(self) -> usize {
        match self {
            Self::Pcm16 => 2,
            Self::Mulaw | Self::Alaw => 1,
        }
    }

    /// Bytes in one 20 ms frame at `sample_rate_hz`.
    pub fn frame_bytes(self, sample_rate_hz: u32) -> usize {
        crate::FrameAssembler::frame_bytes_for(self.bytes_per_sample(), sample_rate_hz)
    }

    /// Decodes `bytes` in this codec into `out` (cleared first) as PCM16
    /// samples. A trailing odd byte of PCM16 is ignored (frames are whole).
    pub fn decode_to(self, bytes: &[u8], out: &mut Vec<i16>) {
        out.clear();
        match self {
            Self::Pcm16 => out.extend(
                bytes
                    .chunks_exact(2)
                    .map(|b| i16::from_le_bytes([b[0], b[1]])),
            ),
            Self::Mulaw => out.extend(bytes.iter().map(|&c| G711Law::MuLaw.decode(c))),
            Self::Alaw => out.extend(bytes.iter().map(|&c| G711Law::ALaw.decode(c))),
        }
    }

    /// Encodes PCM16 `samples` into `out` (cleared first) in this codec.
    pub fn encode_to(self, samples: &[i16], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Self::Pcm16 => {
                // Sized once and filled in place: vectorises, where pushing
                // two bytes at a time checks the capacity per sample.
                out.resize(samples.len() * 2, 0);
                for (pair, s) in out.chunks_exact_mut(2).zip(samples) {
                    pair.copy_from_slice(&s.to_le_bytes());
                }
            }
            Self::Mulaw => out.extend(samples.iter().map(|&s| G711Law::MuLaw.encode(s))),
            Self::Alaw => out.extend(samples.iter().map(|&s| G711Law::ALaw.encode(s))),
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "pcm16" => Some(Self::Pcm16),
            "mulaw" => Some(Self::Mulaw),
            "alaw" => Some(Self::Alaw),
            _ => None,
        }
    }
}

/// What the client's `start` message says about the call.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInfo {
    /// Protocol version the client speaks (always [`PROTOCOL_VERSION`] once decoded).
    pub protocol_version: u32,
    /// Audio codec both ways.
    pub codec: AudioCodec,
    /// Sample rate of the audio both ways, in Hz (one of [`SUPPORTED_SAMPLE_RATES_HZ`]).
    pub sample_rate_hz: u32,
    /// The client's id for the call (non-empty, at most [`MAX_CALL_ID_BYTES`]).
    pub call_id: String,
    /// Free metadata from the client, passed through to the call.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Audio in each of the server's binary messages, in milliseconds (one of
    /// [`SUPPORTED_FRAME_MS`]; [`DEFAULT_FRAME_MS`] when `start` names none).
    /// The client's own audio may come in messages of any size.
    pub frame_ms: u32,
}

/// Size limits of a [`ClientMessageDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderLimits {
    /// Bound on one text message, in bytes.
    pub max_text_bytes: usize,
    /// Bound on one binary message, in bytes.
    pub max_binary_bytes: usize,
    /// Bound on audio bytes waiting to form a whole frame.
    pub max_pending_audio_bytes: usize,
}

impl Default for DecoderLimits {
    fn default() -> Self {
        Self {
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_binary_bytes: DEFAULT_MAX_BINARY_BYTES,
            max_pending_audio_bytes: DEFAULT_MAX_PENDING_AUDIO_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcm16_encodes_little_endian_and_round_trips() {
        let samples = [0i16, 1, -1, i16::MIN, i16::MAX, 0x1234];
        // A reused buffer, longer than the frame, is cleared first.
        let mut bytes = vec![0xAA; 64];
        AudioCodec::Pcm16.encode_to(&samples, &mut bytes);
        assert_eq!(
            bytes,
            [0, 0, 1, 0, 0xFF, 0xFF, 0, 0x80, 0xFF, 0x7F, 0x34, 0x12]
        );
        let mut back = vec![7; 3];
        AudioCodec::Pcm16.decode_to(&bytes, &mut back);
        assert_eq!(back, samples);
    }
}
