//! What every carrier's media stream has in common, and the one interface a
//! route drives them through.
//!
//! A phone carrier (Twilio, Telnyx, Plivo, Vonage, Exotel) opens a websocket to
//! the server and streams the caller's audio; the server streams the answer
//! back. The wire formats differ (JSON with base64 audio, or binary PCM with
//! JSON events; `mark`, `checkpoint` or `notify` to learn what was played;
//! `clear` or `clearAudio` to drop queued audio), but the meaning is the same.
//! [`MediaStream`] is that meaning: each carrier's codec decodes its messages
//! into [`StreamEvent`]s and whole 20 ms frames in the stream's
//! [`WireFormat`], and encodes media, marks and clears into [`Outbound`]
//! messages. A route adapter drives any carrier through it.
//!
//! Driving (sans-IO): feed each websocket message to
//! [`MediaStream::decode_text`] or [`MediaStream::decode_binary`], act on the
//! event, then drain [`MediaStream::pop_frame`] until `None`. After
//! [`StreamEvent::Start`], the `encode_*` methods return the messages to send.
//! Every decoder bounds what it accepts ([`StreamLimits`]) and reports bad
//! input as a [`StreamError`], never a panic.

/// Declares a carrier codec around a `MediaSession`: the struct, `Default`,
/// `new(limits)`, `stream_id` and `last_payload`, the same for every carrier.
macro_rules! session_stream {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            session: $crate::carrier::MediaSession,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new($crate::carrier::StreamLimits::default())
            }
        }

        impl $name {
            /// A stream codec with the given bounds.
            pub fn new(limits: $crate::carrier::StreamLimits) -> Self {
                Self {
                    session: $crate::carrier::MediaSession::new(limits),
                }
            }

            /// The bytes of the last audio payload.
            pub fn last_payload(&self) -> &[u8] {
                self.session.last_payload()
            }
        }
    };
}
pub(crate) use session_stream;

/// The [`MediaStream`] methods every `session_stream!` codec answers the same
/// way: `carrier`, `pop_frame` and `format`.
macro_rules! session_stream_methods {
    ($carrier:expr) => {
        fn carrier(&self) -> $crate::carrier::Carrier {
            $carrier
        }

        fn pop_frame(&mut self) -> Option<&[u8]> {
            self.session.pop_frame()
        }

        fn format(&self) -> Option<$crate::carrier::WireFormat> {
            self.session.format()
        }

        fn stream_id(&self) -> Option<&str> {
            self.session.stream_id()
        }
    };
}
pub(crate) use session_stream_methods;

/// The error for an event this codec does not know.
pub(crate) fn unknown_event<T>(event: &str) -> Result<T, StreamError> {
    Err(StreamError::UnknownEvent {
        event: truncate(event),
    })
}

/// The error for a binary message from a carrier that sends text only.
pub(crate) fn text_only<T>(bytes: &[u8]) -> Result<T, StreamError> {
    Err(StreamError::BinaryMessage {
        len_bytes: bytes.len(),
    })
}

pub mod control;
pub mod emulator;
mod playout;
mod session;

pub use playout::{DEFAULT_MAX_PENDING_MARKS, MARK_PREFIX, MarkOutcome, Playout, TwilioPlayout};
pub(crate) use session::{MediaSession, parse_message};

use serde_json::{Map, Value};

use crate::AudioCodec;
use crate::fields::FieldError;

/// The carriers brisvox speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carrier {
    /// Twilio Media Streams (`<Connect><Stream>`).
    Twilio,
    /// Telnyx Media Streaming (Call Control `stream_url`, TeXML `<Stream>`).
    Telnyx,
    /// Plivo Audio Streams (`<Stream bidirectional="true">`).
    Plivo,
    /// Vonage Voice API websockets (NCCO `connect` to a `websocket` endpoint).
    Vonage,
    /// Exotel Voicebot applet (AgentStream).
    Exotel,
}

impl Carrier {
    /// Every carrier, in the order routes and reports list them.
    pub const ALL: [Carrier; 5] = [
        Self::Twilio,
        Self::Telnyx,
        Self::Plivo,
        Self::Vonage,
        Self::Exotel,
    ];

    /// Lower-case name, used in routes, logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Twilio => "twilio",
            Self::Telnyx => "telnyx",
            Self::Plivo => "plivo",
            Self::Vonage => "vonage",
            Self::Exotel => "exotel",
        }
    }
}

/// The audio format of a stream, both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireFormat {
    /// Encoding of every sample.
    pub codec: AudioCodec,
    /// Samples per second, in Hz.
    pub sample_rate_hz: u32,
}

impl WireFormat {
    /// G.711 mu-law at 8 kHz, the telephone default.
    pub const MULAW_8K: Self = Self {
        codec: AudioCodec::Mulaw,
        sample_rate_hz: 8000,
    };

    /// Bytes in one 20 ms frame.
    pub fn frame_bytes(self) -> usize {
        self.codec.frame_bytes(self.sample_rate_hz)
    }

    /// Bytes per millisecond of audio.
    pub fn bytes_per_ms(self) -> usize {
        self.codec.bytes_per_sample() * self.sample_rate_hz as usize / 1000
    }
}

/// What the carrier said about the call when the stream started.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStart {
    /// The carrier.
    pub carrier: Carrier,
    /// The carrier's id of this stream (empty when it has none).
    pub stream_id: String,
    /// The carrier's id of the call: what its REST API takes to hang up or
    /// transfer (Twilio `CallSid`, Telnyx `call_control_id`, Plivo `callId`,
    /// Vonage call `uuid`, Exotel `call_sid`); empty when not given.
    pub call_id: String,
    /// The caller's number, when the carrier says it.
    pub from: Option<String>,
    /// The number called, when the carrier says it.
    pub to: Option<String>,
    /// Custom parameters set where the stream was configured (TwiML
    /// `<Parameter>`, Telnyx `custom_parameters`, Plivo `extraHeaders`, Vonage
    /// endpoint `headers`, Exotel `custom_parameters`).
    pub parameters: Map<String, Value>,
    /// Audio format both ways.
    pub format: WireFormat,
}

/// A decoded message from a carrier.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The carrier's hello before `start` (nothing to do).
    Connected,
    /// The stream started: ids, parameters, audio format.
    Start(StreamStart),
    /// Caller audio arrived; `frames_ready` whole frames wait in
    /// [`MediaStream::pop_frame`]. Audio of another track is counted in
    /// `payload_bytes` but not framed.
    Media {
        /// Decoded bytes of this message.
        payload_bytes: usize,
        /// Whole inbound frames now waiting.
        frames_ready: usize,
    },
    /// The caller pressed a key.
    Dtmf {
        /// One of `0-9`, `*`, `#`, `A-D`.
        digit: char,
    },
    /// The audio sent before the mark named `name` has played (or was
    /// cleared, for carriers that echo pending marks on a clear).
    Mark {
        /// The name given to [`CarrierEncoder::mark`].
        name: String,
    },
    /// The carrier confirmed a clear.
    Cleared,
    /// The carrier reported an error on the stream (the stream may go on).
    CarrierError {
        /// What the carrier said.
        detail: String,
    },
    /// The stream ended.
    Stop,
}

/// A message to send to the carrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// A websocket text message.
    Text(String),
    /// A websocket binary message.
    Binary(Vec<u8>),
}

/// Bounds on what a carrier decoder accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// One websocket message, in bytes.
    pub max_message_bytes: usize,
    /// One decoded audio payload, in bytes.
    pub max_payload_bytes: usize,
}

/// Default bound on one decoded payload: one second of PCM16 at 24 kHz, the
/// largest format any carrier sends (Exotel sends 100 ms chunks).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 48_000;

/// Default bound on one message: the base64 of a maximal payload plus room
/// for the JSON around it.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_PAYLOAD_BYTES / 3 * 4 + 16 * 1024;

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
        }
    }
}

/// One carrier's media-stream codec: decoder and encoder of one connection.
pub trait MediaStream {
    /// The carrier this codec speaks to.
    fn carrier(&self) -> Carrier;

    /// Decodes one websocket text message.
    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError>;

    /// Decodes one websocket binary message.
    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError>;

    /// The next whole 20 ms frame of caller audio, in [`MediaStream::format`].
    fn pop_frame(&mut self) -> Option<&[u8]>;

    /// The stream's audio format, once started.
    fn format(&self) -> Option<WireFormat>;

    /// The carrier's id of the stream, once started.
    fn stream_id(&self) -> Option<&str>;

    /// The encoder of the messages a server sends on this stream, once
    /// started. It owns what it needs, so a writer task can keep it while the
    /// reader goes on decoding.
    fn encoder(&self) -> Option<CarrierEncoder> {
        Some(CarrierEncoder {
            carrier: self.carrier(),
            stream_id: self.stream_id()?.to_owned(),
            format: self.format()?,
        })
    }
}

/// What a server sends, before a carrier's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encode<'a> {
    /// Audio to play (whole frames in the stream's format).
    Media(&'a [u8]),
    /// A mark named so.
    Mark(&'a str),
    /// Drop all queued audio.
    Clear,
}

/// The messages a server sends on one started stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarrierEncoder {
    carrier: Carrier,
    stream_id: String,
    format: WireFormat,
}

impl CarrierEncoder {
    /// The carrier.
    pub fn carrier(&self) -> Carrier {
        self.carrier
    }

    /// The stream's audio format.
    pub fn format(&self) -> WireFormat {
        self.format
    }

    /// A message that plays `audio` (whole frames in the stream's format;
    /// Vonage wants exactly one 20 ms frame per message).
    pub fn media(&self, audio: &[u8]) -> Outbound {
        self.encode(Encode::Media(audio))
    }

    /// A message asking the carrier to echo `name` once the audio sent so far
    /// has played (Twilio, Telnyx, Exotel `mark`; Plivo `checkpoint`; Vonage
    /// `notify`).
    pub fn mark(&self, name: &str) -> Outbound {
        self.encode(Encode::Mark(name))
    }

    /// A message dropping every queued, unplayed audio.
    pub fn clear(&self) -> Outbound {
        self.encode(Encode::Clear)
    }

    fn encode(&self, what: Encode<'_>) -> Outbound {
        let id = self.stream_id.as_str();
        match self.carrier {
            Carrier::Twilio => crate::twilio::encode(what, id),
            Carrier::Telnyx => crate::telnyx::encode(what),
            Carrier::Plivo => crate::plivo::encode(what, id, self.format),
            Carrier::Vonage => crate::vonage::encode(what),
            Carrier::Exotel => crate::exotel::encode(what, id),
        }
    }
}

/// Why a carrier's message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A message longer than the limit.
    #[error("message of {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    MessageTooLarge {
        /// Its length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A binary message from a carrier that sends text only.
    #[error("binary message of {len_bytes} bytes: this carrier sends JSON text only")]
    BinaryMessage {
        /// Its length.
        len_bytes: usize,
    },
    /// Not a JSON object.
    #[error("malformed JSON: {detail}")]
    MalformedJson {
        /// What the parser said.
        detail: String,
    },
    /// No `event` field.
    #[error("message has no \"event\" field")]
    MissingEvent,
    /// An `event` this decoder does not know.
    #[error("unknown event {event:?}")]
    UnknownEvent {
        /// The event given (at most 64 characters).
        event: String,
    },
    /// A required field is absent.
    #[error("{event} message lacks the field {field:?}")]
    MissingField {
        /// The event.
        event: &'static str,
        /// The field (its JSON name).
        field: &'static str,
    },
    /// A field has the wrong kind of value.
    #[error("{event}.{field} must be {expected}")]
    InvalidField {
        /// The event.
        event: &'static str,
        /// The field (its JSON name).
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A media format this codec does not take.
    #[error("unsupported media format {encoding} {sample_rate_hz} Hz x{channels}")]
    UnsupportedMediaFormat {
        /// The encoding given (at most 64 characters).
        encoding: String,
        /// The rate given, in Hz.
        sample_rate_hz: u64,
        /// The channel count given.
        channels: u64,
    },
    /// A message other than the greeting before `start`.
    #[error("{event} arrived before start")]
    BeforeStart {
        /// The event.
        event: &'static str,
    },
    /// A second `start`.
    #[error("a second start on the same stream")]
    SecondStart,
    /// A message naming another stream.
    #[error("stream id {got:?} does not match the stream {expected:?}")]
    StreamIdMismatch {
        /// The stream of this connection.
        expected: String,
        /// The stream named in the message (at most 64 characters).
        got: String,
    },
    /// A payload that is not valid base64.
    #[error("media payload is not valid base64: {detail}")]
    InvalidBase64 {
        /// What the decoder said.
        detail: String,
    },
    /// A payload longer than the limit once decoded.
    #[error("media payload of about {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    PayloadTooLarge {
        /// Its (estimated) decoded length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A DTMF digit that is not one key.
    #[error("dtmf digit {digit:?} is not one of 0-9 * # A-D")]
    InvalidDigit {
        /// The digit given (at most 64 characters).
        digit: String,
    },
    /// A message after `stop`.
    #[error("{event} after stop")]
    AfterStop {
        /// The event.
        event: &'static str,
    },
}

/// Websocket close codes (RFC 6455 section 7.4.1) for a fatal [`StreamError`].
pub mod close_code {
    /// 1002: the peer broke the protocol.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// 1003: data of a kind the server does not take.
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// 1009: a message too big to process.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
}

impl StreamError {
    pub(crate) fn field(event: &'static str, e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => Self::MissingField { event, field },
            FieldError::Invalid { field, expected } => Self::InvalidField {
                event,
                field,
                expected,
            },
        }
    }

    /// False for errors a stream survives: an unknown event (carriers add
    /// events) and a foreign or stale stream id on one message.
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            Self::UnknownEvent { .. } | Self::StreamIdMismatch { .. }
        )
    }

    /// The websocket close code to end the stream with, when fatal.
    pub fn close_code(&self) -> u16 {
        match self {
            Self::MessageTooLarge { .. } | Self::PayloadTooLarge { .. } => {
                close_code::MESSAGE_TOO_BIG
            }
            Self::BinaryMessage { .. } | Self::UnsupportedMediaFormat { .. } => {
                close_code::UNSUPPORTED_DATA
            }
            _ => close_code::PROTOCOL_ERROR,
        }
    }
}

/// True for one DTMF key: `0-9`, `*`, `#`, `A-D`.
pub(crate) fn is_dtmf_key(d: char) -> bool {
    d.is_ascii_digit() || matches!(d, '*' | '#' | 'A'..='D')
}

/// The single key in `digit`, or [`StreamError::InvalidDigit`].
pub(crate) fn parse_digit(digit: &str) -> Result<char, StreamError> {
    let mut chars = digit.chars();
    match (chars.next(), chars.next()) {
        (Some(d), None) if is_dtmf_key(d) => Ok(d),
        _ => Err(StreamError::InvalidDigit {
            digit: truncate(digit),
        }),
    }
}

/// A text message holding `value` as JSON.
pub(crate) fn json_text(value: &Value) -> Outbound {
    Outbound::Text(value.to_string())
}

/// `audio` as standard base64.
pub(crate) fn base64_of(audio: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(audio)
}

/// The optional object field `field` of `obj` (absent or null gives an empty map).
pub(crate) fn opt_object(
    obj: &crate::fields::Object,
    event: &'static str,
    field: &'static str,
) -> Result<Map<String, Value>, StreamError> {
    match crate::fields::object(obj, field) {
        Ok(m) => Ok(m.clone()),
        Err(FieldError::Missing { .. }) => Ok(Map::new()),
        Err(e) => Err(StreamError::field(event, e)),
    }
}

/// The optional string field `field` of `obj`, owned.
pub(crate) fn opt_owned(
    obj: &crate::fields::Object,
    event: &'static str,
    field: &'static str,
) -> Result<Option<String>, StreamError> {
    crate::fields::opt_string(obj, field)
        .map(|s| s.map(str::to_owned))
        .map_err(|e| StreamError::field(event, e))
}

/// At most 64 characters of `s`, for error messages.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_single_keys() {
        for ok in ["0", "9", "*", "#", "A", "D"] {
            assert!(parse_digit(ok).is_ok(), "{ok}");
        }
        for bad in ["", "12", "E", "a", " "] {
            assert!(
                matches!(parse_digit(bad), Err(StreamError::InvalidDigit { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn formats_know_their_frame_size() {
        assert_eq!(WireFormat::MULAW_8K.frame_bytes(), 160);
        let l16 = WireFormat {
            codec: AudioCodec::Pcm16,
            sample_rate_hz: 16000,
        };
        assert_eq!(l16.frame_bytes(), 640);
        assert_eq!(l16.bytes_per_ms(), 32);
    }

    #[test]
    fn only_unknown_events_and_foreign_ids_are_survivable() {
        assert!(!StreamError::UnknownEvent { event: "x".into() }.is_fatal());
        assert!(StreamError::SecondStart.is_fatal());
        assert_eq!(
            StreamError::PayloadTooLarge {
                len_bytes: 1,
                limit_bytes: 0
            }
            .close_code(),
            1009
        );
    }
}
