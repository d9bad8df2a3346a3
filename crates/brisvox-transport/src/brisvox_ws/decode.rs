//! [`ClientMessageDecoder`]: the client's websocket messages in, typed events out.

use crate::fields::{self, FieldError, Object};
use crate::framer::{FrameAssembler, FramerError};

use super::{
    AudioCodec, DEFAULT_FRAME_MS, DecoderLimits, MAX_CALL_ID_BYTES, PROTOCOL_VERSION,
    SUPPORTED_FRAME_MS, SUPPORTED_SAMPLE_RATES_HZ, StartInfo,
};

/// One websocket message from the client, as the server's socket received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// A text message (JSON control).
    Text(&'a str),
    /// A binary message (audio).
    Binary(&'a [u8]),
}

/// What a decoded client message means.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The call starts with these settings.
    Start(StartInfo),
    /// Audio arrived; `frames_ready` whole 20 ms frames can now be taken with
    /// [`ClientMessageDecoder::pop_frame`].
    Audio {
        /// Whole frames waiting.
        frames_ready: usize,
    },
    /// The client ends the call.
    End {
        /// The client's reason, if it gave one.
        reason: Option<String>,
    },
    /// The client asks the bot to say `text`.
    Say {
        /// What to say.
        text: String,
        /// Cut the bot now (`true`) or queue after its current answer
        /// (`false`, the default).
        interrupt: bool,
    },
    /// The client reports a key press.
    Dtmf {
        /// The key: `0`-`9`, `*`, `#` or `A`-`D`.
        digit: char,
    },
}

/// Why a client message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A text message longer than the limit.
    #[error("text message of {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    TextTooLarge {
        /// Its length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A binary message longer than the limit.
    #[error("binary message of {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    BinaryTooLarge {
        /// Its length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A text message that is not a JSON object.
    #[error("malformed JSON: {detail}")]
    MalformedJson {
        /// What the parser said.
        detail: String,
    },
    /// A JSON object without a `type` field.
    #[error("message has no \"type\" field")]
    MissingType,
    /// A `type` this protocol version does not know.
    #[error("unknown message type {kind:?} (expected start, end, say or dtmf)")]
    UnknownType {
        /// The type given.
        kind: String,
    },
    /// A required field is absent.
    #[error("{message} message lacks the required field {field:?}")]
    MissingField {
        /// The message type.
        message: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong kind of value.
    #[error("{message}.{field} must be {expected}")]
    InvalidField {
        /// The message type.
        message: &'static str,
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A `start` with a protocol version other than ours.
    #[error("protocol_version {version} is not supported (this server speaks {supported})")]
    UnsupportedProtocolVersion {
        /// The version asked for.
        version: u64,
        /// The version spoken here.
        supported: u32,
    },
    /// A `start` with a codec other than `pcm16`, `mulaw` or `alaw`.
    #[error("codec {codec:?} is not supported (allowed: pcm16, mulaw, alaw)")]
    UnsupportedCodec {
        /// The codec asked for.
        codec: String,
    },
    /// A `start` with a sample rate not in the list.
    #[error(
        "sample_rate {sample_rate_hz} Hz is not supported (allowed: 8000, 16000, 24000, 48000)"
    )]
    UnsupportedSampleRate {
        /// The rate asked for, in Hz.
        sample_rate_hz: u64,
    },
    /// Binary audio before the `start` message.
    #[error("audio arrived before the start message")]
    AudioBeforeStart,
    /// A control that needs a started call arrived before `start`.
    #[error("{kind} arrived before the start message")]
    ControlBeforeStart {
        /// The message type.
        kind: &'static str,
    },
    /// A second `start` on the same connection.
    #[error("the call has already started; a second start is not allowed")]
    SecondStart,
    /// A text message where audio belongs: non-JSON text after `start`, or a
    /// JSON message carrying audio (`type` `audio` or `media`). Audio travels in
    /// binary messages only.
    #[error("text message of {len_bytes} bytes where audio belongs: send audio as binary messages")]
    TextWhereAudioBelongs {
        /// Length of the text message.
        len_bytes: usize,
    },
    /// More audio waits than the bound allows (the reader did not drain frames).
    #[error("audio backlog: {pending_bytes} bytes waiting + {pushed_bytes} pushed > {limit_bytes}")]
    AudioBacklog {
        /// Bytes already waiting.
        pending_bytes: usize,
        /// Bytes refused.
        pushed_bytes: usize,
        /// The bound.
        limit_bytes: usize,
    },
    /// A message after the client's `end`.
    #[error("message after the end of the call")]
    AfterEnd,
    /// Binary data where only controls travel (WebRTC's data channel: the
    /// audio has its own track).
    #[error("binary data is not accepted here: audio travels on the media track")]
    AudioNotAccepted,
}

/// Websocket close codes (RFC 6455, section 7.4.1) used for fatal errors.
pub mod close_code {
    /// 1002: protocol error.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// 1003: unsupported data (audio in text, a codec or rate we do not speak).
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// 1008: policy violation.
    pub const POLICY_VIOLATION: u16 = 1008;
    /// 1009: message too big.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
}

impl DecodeError {
    /// Stable code for the `error` event (`docs/WEBSOCKET_PROTOCOL.md`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::TextTooLarge { .. } | Self::BinaryTooLarge { .. } => "message_too_large",
            Self::MalformedJson { .. } => "malformed_json",
            Self::MissingType => "missing_type",
            Self::UnknownType { .. } => "unknown_type",
            Self::MissingField { .. } => "missing_field",
            Self::InvalidField { .. } => "invalid_field",
            Self::UnsupportedProtocolVersion { .. } => "unsupported_protocol_version",
            Self::UnsupportedCodec { .. } => "unsupported_codec",
            Self::UnsupportedSampleRate { .. } => "unsupported_sample_rate",
            Self::AudioBeforeStart => "audio_before_start",
            Self::ControlBeforeStart { .. } => "not_started",
            Self::SecondStart => "second_start",
            Self::TextWhereAudioBelongs { .. } => "text_where_audio_belongs",
            Self::AudioBacklog { .. } => "audio_backlog",
            Self::AfterEnd => "after_end",
            Self::AudioNotAccepted => "audio_not_accepted",
        }
    }

    /// False only for errors the call survives (an unknown message type, for
    /// forward compatibility): the server reports them and goes on.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::UnknownType { .. })
    }

    /// The websocket close code for a fatal error.
    pub fn close_code(&self) -> u16 {
        match self {
            Self::TextTooLarge { .. } | Self::BinaryTooLarge { .. } => close_code::MESSAGE_TOO_BIG,
            Self::TextWhereAudioBelongs { .. }
            | Self::UnsupportedCodec { .. }
            | Self::UnsupportedSampleRate { .. }
            | Self::UnsupportedProtocolVersion { .. } => close_code::UNSUPPORTED_DATA,
            Self::AudioBacklog { .. } | Self::AfterEnd => close_code::POLICY_VIOLATION,
            _ => close_code::PROTOCOL_ERROR,
        }
    }

    fn field(message: &'static str, e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => Self::MissingField { message, field },
            FieldError::Invalid { field, expected } => Self::InvalidField {
                message,
                field,
                expected,
            },
        }
    }
}

impl From<FramerError> for DecodeError {
    fn from(e: FramerError) -> Self {
        match e {
            FramerError::Backlog {
                pending_bytes,
                pushed_bytes,
                limit_bytes,
            } => Self::AudioBacklog {
                pending_bytes,
                pushed_bytes,
                limit_bytes,
            },
        }
    }
}

#[derive(Debug)]
enum State {
    AwaitingStart,
    /// Controls only: the call started in the transport's signalling and
    /// its audio travels elsewhere (WebRTC's data channel).
    Controls,
    Started {
        info: StartInfo,
        frames: FrameAssembler,
    },
    Ended,
}

/// Decodes the client side of one brisvox websocket connection. See the module
/// docs of [`crate::brisvox_ws`] for how to drive it.
#[derive(Debug)]
pub struct ClientMessageDecoder {
    limits: DecoderLimits,
    state: State,
}

impl Default for ClientMessageDecoder {
    fn default() -> Self {
        Self::new(DecoderLimits::default())
    }
}

impl ClientMessageDecoder {
    /// A decoder for a new connection, waiting for `start`.
    pub fn new(limits: DecoderLimits) -> Self {
        Self {
            limits,
            state: State::AwaitingStart,
        }
    }

    /// A decoder of the controls alone (`say`, `dtmf`, `end`), for a
    /// transport whose call started in its own signalling and whose audio
    /// has its own track: WebRTC's data channel. `start` is refused
    /// (`second_start`), and so is binary audio (`audio_not_accepted`).
    pub fn controls_only(limits: DecoderLimits) -> Self {
        Self {
            limits,
            state: State::Controls,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> DecoderLimits {
        self.limits
    }

    /// The call's settings once `start` was decoded.
    pub fn start_info(&self) -> Option<&StartInfo> {
        match &self.state {
            State::Started { info, .. } => Some(info),
            _ => None,
        }
    }

    /// Decodes one websocket message.
    pub fn decode(&mut self, msg: ClientMessage<'_>) -> Result<ClientEvent, DecodeError> {
        match msg {
            ClientMessage::Text(text) => self.decode_text(text),
            ClientMessage::Binary(bytes) => self.decode_binary(bytes),
        }
    }

    /// The next whole 20 ms audio frame in the call's codec and rate, if any.
    pub fn pop_frame(&mut self) -> Option<&[u8]> {
        match &mut self.state {
            State::Started { frames, .. } => frames.pop_frame(),
            _ => None,
        }
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<ClientEvent, DecodeError> {
        if bytes.len() > self.limits.max_binary_bytes {
            return Err(DecodeError::BinaryTooLarge {
                len_bytes: bytes.len(),
                limit_bytes: self.limits.max_binary_bytes,
            });
        }
        match &mut self.state {
            State::AwaitingStart => Err(DecodeError::AudioBeforeStart),
            State::Controls => Err(DecodeError::AudioNotAccepted),
            State::Ended => Err(DecodeError::AfterEnd),
            State::Started { frames, .. } => {
                frames.push(bytes)?;
                Ok(ClientEvent::Audio {
                    frames_ready: frames.frames_ready(),
                })
            }
        }
    }

    fn decode_text(&mut self, text: &str) -> Result<ClientEvent, DecodeError> {
        if text.len() > self.limits.max_text_bytes {
            return Err(DecodeError::TextTooLarge {
                len_bytes: text.len(),
                limit_bytes: self.limits.max_text_bytes,
            });
        }
        if matches!(self.state, State::Ended) {
            return Err(DecodeError::AfterEnd);
        }
        let started = matches!(self.state, State::Started { .. });
        let obj = fields::parse_object(text).map_err(|detail| {
            if started && !text.trim_start().starts_with('{') {
                DecodeError::TextWhereAudioBelongs {
                    len_bytes: text.len(),
                }
            } else {
                DecodeError::MalformedJson { detail }
            }
        })?;
        let kind = match fields::string(&obj, "type") {
            Ok(kind) => kind,
            Err(FieldError::Missing { .. }) => return Err(DecodeError::MissingType),
            Err(e) => return Err(DecodeError::field("message", e)),
        };
        match kind {
            "start" => self.on_start(&obj),
            "end" => self.on_end(&obj),
            "say" => self.on_say(&obj),
            "dtmf" => self.on_dtmf(&obj),
            "audio" | "media" => Err(DecodeError::TextWhereAudioBelongs {
                len_bytes: text.len(),
            }),
            other => Err(DecodeError::UnknownType {
                kind: truncate(other, 64),
            }),
        }
    }

    fn on_start(&mut self, obj: &Object) -> Result<ClientEvent, DecodeError> {
        if !matches!(self.state, State::AwaitingStart) {
            return Err(DecodeError::SecondStart);
        }
        let info = parse_start(obj)?;
        let frame_bytes = info.codec.frame_bytes(info.sample_rate_hz);
        let max_pending = self.limits.max_pending_audio_bytes;
        self.state = State::Started {
            info: info.clone(),
            frames: FrameAssembler::new(frame_bytes, max_pending),
        };
        Ok(ClientEvent::Start(info))
    }

    fn on_end(&mut self, obj: &Object) -> Result<ClientEvent, DecodeError> {
        let reason = fields::opt_string(obj, "reason")
            .map_err(|e| DecodeError::field("end", e))?
            .map(|r| truncate(r, 256));
        self.state = State::Ended;
        Ok(ClientEvent::End { reason })
    }

    fn on_say(&mut self, obj: &Object) -> Result<ClientEvent, DecodeError> {
        if !matches!(self.state, State::Started { .. } | State::Controls) {
            return Err(DecodeError::ControlBeforeStart { kind: "say" });
        }
        let err = |e| DecodeError::field("say", e);
        let text = fields::string(obj, "text").map_err(err)?;
        let interrupt = fields::opt_bool(obj, "interrupt").map_err(err)?;
        Ok(ClientEvent::Say {
            text: text.to_owned(),
            interrupt: interrupt.unwrap_or(false),
        })
    }

    fn on_dtmf(&mut self, obj: &Object) -> Result<ClientEvent, DecodeError> {
        if !matches!(self.state, State::Started { .. } | State::Controls) {
            return Err(DecodeError::ControlBeforeStart { kind: "dtmf" });
        }
        let digit = fields::string(obj, "digit").map_err(|e| DecodeError::field("dtmf", e))?;
        let mut chars = digit.chars();
        match (chars.next().map(|c| c.to_ascii_uppercase()), chars.next()) {
            (Some(c @ ('0'..='9' | '*' | '#' | 'A'..='D')), None) => {
                Ok(ClientEvent::Dtmf { digit: c })
            }
            _ => Err(DecodeError::InvalidField {
                message: "dtmf",
                field: "digit",
                expected: "one of 0-9, *, #, A-D",
            }),
        }
    }
}

fn parse_start(obj: &Object) -> Result<StartInfo, DecodeError> {
    let err = |e| DecodeError::field("start", e);
    let version = fields::uint(obj, "protocol_version").map_err(err)?;
    if version != u64::from(PROTOCOL_VERSION) {
        return Err(DecodeError::UnsupportedProtocolVersion {
            version,
            supported: PROTOCOL_VERSION,
        });
    }
    let codec_name = fields::string(obj, "codec").map_err(err)?;
    let codec = AudioCodec::parse(codec_name).ok_or_else(|| DecodeError::UnsupportedCodec {
        codec: truncate(codec_name, 64),
    })?;
    let rate = fields::uint(obj, "sample_rate").map_err(err)?;
    let sample_rate_hz = u32::try_from(rate)
        .ok()
        .filter(|r| SUPPORTED_SAMPLE_RATES_HZ.contains(r))
        .ok_or(DecodeError::UnsupportedSampleRate {
            sample_rate_hz: rate,
        })?;
    let call_id = fields::string(obj, "call_id").map_err(err)?;
    if call_id.is_empty() || call_id.len() > MAX_CALL_ID_BYTES {
        return Err(DecodeError::InvalidField {
            message: "start",
            field: "call_id",
            expected: "a non-empty string of at most 256 bytes",
        });
    }
    let metadata = match fields::object(obj, "metadata") {
        Ok(m) => m.clone(),
        Err(FieldError::Missing { .. }) => serde_json::Map::new(),
        Err(e) => return Err(err(e)),
    };
    let frame_ms = match fields::value(obj, "frame_ms") {
        Ok(v) => v
            .as_u64()
            .and_then(|ms| u32::try_from(ms).ok())
            .filter(|ms| SUPPORTED_FRAME_MS.contains(ms))
            .ok_or(DecodeError::InvalidField {
                message: "start",
                field: "frame_ms",
                expected: "10, 20 or 40 (milliseconds of audio in each server message)",
            })?,
        Err(FieldError::Missing { .. }) => DEFAULT_FRAME_MS,
        Err(e) => return Err(err(e)),
    };
    Ok(StartInfo {
        protocol_version: PROTOCOL_VERSION,
        codec,
        sample_rate_hz,
        call_id: call_id.to_owned(),
        metadata,
        frame_ms,
    })
}

/// At most `max_bytes` of `s`, cut at a char boundary (error texts stay short).
fn truncate(s: &str, max_bytes: usize) -> String {
    if s.len() <= max_bytes {
        return s.to_owned();
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("ağaç", 2), "a");
        assert_eq!(truncate("abc", 5), "abc");
    }
}
