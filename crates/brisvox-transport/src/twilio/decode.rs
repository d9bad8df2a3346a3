//! [`TwilioDecoder`]: Twilio Media Streams messages in, typed events out.

use base64::Engine as _;

use crate::fields::{self, FieldError, Object};
use crate::framer::FrameAssembler;

use super::{
    DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_TEXT_BYTES, TWILIO_ENCODING, TWILIO_FRAME_BYTES,
    TWILIO_SAMPLE_RATE_HZ,
};

/// `start.mediaFormat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaFormat {
    /// Always `audio/x-mulaw` once decoded.
    pub encoding: String,
    /// Always 8000 once decoded, in Hz.
    pub sample_rate_hz: u32,
    /// Always 1 once decoded.
    pub channels: u32,
}

/// The `start` message.
#[derive(Debug, Clone, PartialEq)]
pub struct TwilioStart {
    /// `start.streamSid`: the stream's id, needed on every outbound message.
    pub stream_sid: String,
    /// `start.accountSid`.
    pub account_sid: String,
    /// `start.callSid`.
    pub call_sid: String,
    /// `start.tracks`: `inbound`, `outbound`.
    pub tracks: Vec<String>,
    /// `start.customParameters`: the `<Parameter>`s of the TwiML `<Stream>`.
    pub custom_parameters: serde_json::Map<String, serde_json::Value>,
    /// `start.mediaFormat`.
    pub media_format: MediaFormat,
}

/// The fields of a `media` message; the audio itself is in
/// [`TwilioDecoder::last_payload`] and, framed, in [`TwilioDecoder::pop_frame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaChunk {
    /// `media.track`: `inbound` (the caller) or `outbound`.
    pub track: String,
    /// `media.chunk`: chunk number, from 1.
    pub chunk: u64,
    /// `media.timestamp`: milliseconds since the stream started.
    pub timestamp_ms: u64,
    /// Decoded payload length, in mu-law bytes (= samples at 8 kHz).
    pub payload_bytes: usize,
    /// Whole inbound 20 ms frames now waiting in the decoder.
    pub frames_ready: usize,
}

/// A decoded message from Twilio.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TwilioEvent {
    /// `connected`: the first message.
    Connected {
        /// `protocol` (`"Call"`).
        protocol: String,
        /// `version` (`"1.0.0"`).
        version: String,
    },
    /// `start`: the stream's metadata.
    Start(TwilioStart),
    /// `media`: a chunk of audio.
    Media(MediaChunk),
    /// `mark`: the echo of a mark the server sent.
    Mark {
        /// `mark.name`.
        name: String,
    },
    /// `dtmf`: a key press.
    Dtmf {
        /// `dtmf.track` (`inbound_track`).
        track: String,
        /// `dtmf.digit`: one of `0-9`, `*`, `#`, `A-D`.
        digit: char,
    },
    /// `stop`: the stream ended.
    Stop {
        /// `stop.accountSid`.
        account_sid: String,
        /// `stop.callSid`.
        call_sid: String,
    },
}

/// Why a message from Twilio was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TwilioError {
    /// A text message longer than the limit.
    #[error("message of {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    MessageTooLarge {
        /// Its length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A binary websocket message (Twilio sends text only).
    #[error("binary message of {len_bytes} bytes: Twilio Media Streams sends JSON text only")]
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
        /// The event given.
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
    /// A media format other than mu-law, 8000 Hz, mono.
    #[error(
        "unsupported media format {encoding} {sample_rate_hz} Hz x{channels} (expected audio/x-mulaw 8000 Hz x1)"
    )]
    UnsupportedMediaFormat {
        /// The encoding given.
        encoding: String,
        /// The rate given, in Hz.
        sample_rate_hz: u64,
        /// The channel count given.
        channels: u64,
    },
    /// `media`, `mark` or `dtmf` before `start`.
    #[error("{event} arrived before start")]
    BeforeStart {
        /// The event.
        event: &'static str,
    },
    /// A second `start`.
    #[error("a second start on the same stream")]
    SecondStart,
    /// A message for another stream.
    #[error("streamSid {got:?} does not match the stream {expected:?}")]
    StreamSidMismatch {
        /// The stream of this connection.
        expected: String,
        /// The stream named in the message.
        got: String,
    },
    /// A `media.payload` that is not valid base64.
    #[error("media.payload is not valid base64: {detail}")]
    InvalidBase64 {
        /// What the decoder said.
        detail: String,
    },
    /// A `media.payload` longer than the limit once decoded.
    #[error("media payload of about {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    PayloadTooLarge {
        /// Its (estimated) decoded length.
        len_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A `dtmf.digit` that is not one key.
    #[error("dtmf.digit {digit:?} is not one of 0-9 * # A-D")]
    InvalidDigit {
        /// The digit given.
        digit: String,
    },
    /// A message after `stop`.
    #[error("{event} after stop")]
    AfterStop {
        /// The event.
        event: &'static str,
    },
}

impl TwilioError {
    fn field(event: &'static str, e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => Self::MissingField { event, field },
            FieldError::Invalid { field, expected } => Self::InvalidField {
                event,
                field,
                expected,
            },
        }
    }

    /// False for errors a stream survives: an unknown event (Twilio may add
    /// events) and a foreign or stale `streamSid` on one message.
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            Self::UnknownEvent { .. } | Self::StreamSidMismatch { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    BeforeStart,
    Streaming,
    Stopped,
}

/// Decodes one Twilio Media Streams connection. Feed each text message to
/// [`TwilioDecoder::decode_text`] (a binary message to
/// [`TwilioDecoder::decode_binary`], which refuses it); after a `media` event,
/// drain [`TwilioDecoder::pop_frame`].
#[derive(Debug)]
pub struct TwilioDecoder {
    max_text_bytes: usize,
    max_payload_bytes: usize,
    phase: Phase,
    stream_sid: Option<String>,
    payload: Vec<u8>,
    frames: FrameAssembler,
}

impl Default for TwilioDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_TEXT_BYTES, DEFAULT_MAX_PAYLOAD_BYTES)
    }
}

impl TwilioDecoder {
    /// A decoder with the given bounds on a text message and a decoded payload.
    pub fn new(max_text_bytes: usize, max_payload_bytes: usize) -> Self {
        Self {
            max_text_bytes,
            max_payload_bytes,
            phase: Phase::BeforeStart,
            stream_sid: None,
            payload: Vec::with_capacity(max_payload_bytes),
            frames: FrameAssembler::new(TWILIO_FRAME_BYTES, max_payload_bytes + TWILIO_FRAME_BYTES),
        }
    }

    /// The stream's id, once `start` was decoded.
    pub fn stream_sid(&self) -> Option<&str> {
        self.stream_sid.as_deref()
    }

    /// The mu-law bytes of the last `media` message.
    pub fn last_payload(&self) -> &[u8] {
        &self.payload
    }

    /// The next whole 20 ms inbound mu-law frame (160 bytes), if any.
    pub fn pop_frame(&mut self) -> Option<&[u8]> {
        self.frames.pop_frame()
    }

    /// Refuses a binary message: Twilio sends text only.
    pub fn decode_binary(&mut self, bytes: &[u8]) -> Result<TwilioEvent, TwilioError> {
        Err(TwilioError::BinaryMessage {
            len_bytes: bytes.len(),
        })
    }

    /// Decodes one text message.
    pub fn decode_text(&mut self, text: &str) -> Result<TwilioEvent, TwilioError> {
        if text.len() > self.max_text_bytes {
            return Err(TwilioError::MessageTooLarge {
                len_bytes: text.len(),
                limit_bytes: self.max_text_bytes,
            });
        }
        let obj =
            fields::parse_object(text).map_err(|detail| TwilioError::MalformedJson { detail })?;
        let event = match fields::string(&obj, "event") {
            Ok(e) => e,
            Err(FieldError::Missing { .. }) => return Err(TwilioError::MissingEvent),
            Err(e) => return Err(TwilioError::field("message", e)),
        };
        match event {
            "connected" => decode_connected(&obj),
            "start" => self.on_start(&obj),
            "media" => self.on_media(&obj),
            "mark" => self.on_mark(&obj),
            "dtmf" => self.on_dtmf(&obj),
            "stop" => self.on_stop(&obj),
            other => Err(TwilioError::UnknownEvent {
                event: other.chars().take(64).collect(),
            }),
        }
    }

    /// Checks that the call is streaming and that the message's top-level
    /// `streamSid`, when present, is this stream's.
    fn check_streaming(&self, obj: &Object, event: &'static str) -> Result<(), TwilioError> {
        match self.phase {
            Phase::BeforeStart => return Err(TwilioError::BeforeStart { event }),
            Phase::Stopped => return Err(TwilioError::AfterStop { event }),
            Phase::Streaming => {}
        }
        let got = fields::opt_string(obj, "streamSid").map_err(|e| TwilioError::field(event, e))?;
        match (got, self.stream_sid.as_deref()) {
            (Some(got), Some(expected)) if got != expected => Err(TwilioError::StreamSidMismatch {
                expected: expected.to_owned(),
                got: got.chars().take(64).collect(),
            }),
            _ => Ok(()),
        }
    }

    fn on_start(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        if self.phase != Phase::BeforeStart {
            return Err(TwilioError::SecondStart);
        }
        let start = parse_start(obj)?;
        self.stream_sid = Some(start.stream_sid.clone());
        self.phase = Phase::Streaming;
        Ok(TwilioEvent::Start(start))
    }

    fn on_media(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.check_streaming(obj, "media")?;
        let err = |e| TwilioError::field("media", e);
        let media = fields::object(obj, "media").map_err(err)?;
        let track = fields::string(media, "track").map_err(err)?.to_owned();
        let chunk = fields::uint_lenient(media, "chunk").map_err(err)?;
        let timestamp_ms = fields::uint_lenient(media, "timestamp").map_err(err)?;
        let b64 = fields::string(media, "payload").map_err(err)?;
        self.decode_payload(b64)?;
        if track == "inbound" {
            self.frames
                .push(&self.payload)
                .map_err(|_| TwilioError::PayloadTooLarge {
                    len_bytes: self.payload.len() + self.frames.pending_bytes(),
                    limit_bytes: self.frames.max_pending_bytes(),
                })?;
        }
        Ok(TwilioEvent::Media(MediaChunk {
            track,
            chunk,
            timestamp_ms,
            payload_bytes: self.payload.len(),
            frames_ready: self.frames.frames_ready(),
        }))
    }

    fn decode_payload(&mut self, b64: &str) -> Result<(), TwilioError> {
        let estimate = b64.len() / 4 * 3;
        if estimate > self.max_payload_bytes + 2 {
            return Err(TwilioError::PayloadTooLarge {
                len_bytes: estimate,
                limit_bytes: self.max_payload_bytes,
            });
        }
        self.payload.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(b64, &mut self.payload)
            .map_err(|e| TwilioError::InvalidBase64 {
                detail: e.to_string(),
            })?;
        if self.payload.len() > self.max_payload_bytes {
            let len_bytes = self.payload.len();
            self.payload.clear();
            return Err(TwilioError::PayloadTooLarge {
                len_bytes,
                limit_bytes: self.max_payload_bytes,
            });
        }
        Ok(())
    }

    fn on_mark(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.check_streaming(obj, "mark")?;
        let err = |e| TwilioError::field("mark", e);
        let mark = fields::object(obj, "mark").map_err(err)?;
        let name = fields::string(mark, "name").map_err(err)?.to_owned();
        Ok(TwilioEvent::Mark { name })
    }

    fn on_dtmf(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.check_streaming(obj, "dtmf")?;
        let err = |e| TwilioError::field("dtmf", e);
        let dtmf = fields::object(obj, "dtmf").map_err(err)?;
        let track = fields::opt_string(dtmf, "track")
            .map_err(err)?
            .unwrap_or("inbound_track")
            .to_owned();
        let raw = fields::string(dtmf, "digit").map_err(err)?;
        let mut chars = raw.chars();
        match (chars.next(), chars.next()) {
            (Some(d), None) if is_dtmf_key(d) => Ok(TwilioEvent::Dtmf { track, digit: d }),
            _ => Err(TwilioError::InvalidDigit {
                digit: raw.chars().take(16).collect(),
            }),
        }
    }

    fn on_stop(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.check_streaming(obj, "stop")?;
        let err = |e| TwilioError::field("stop", e);
        let stop = fields::object(obj, "stop").map_err(err)?;
        let account_sid = fields::string(stop, "accountSid").map_err(err)?.to_owned();
        let call_sid = fields::string(stop, "callSid").map_err(err)?.to_owned();
        self.phase = Phase::Stopped;
        Ok(TwilioEvent::Stop {
            account_sid,
            call_sid,
        })
    }
}

fn is_dtmf_key(d: char) -> bool {
    d.is_ascii_digit() || matches!(d, '*' | '#' | 'A'..='D')
}

fn decode_connected(obj: &Object) -> Result<TwilioEvent, TwilioError> {
    let err = |e| TwilioError::field("connected", e);
    Ok(TwilioEvent::Connected {
        protocol: fields::string(obj, "protocol").map_err(err)?.to_owned(),
        version: fields::string(obj, "version").map_err(err)?.to_owned(),
    })
}

fn parse_start(obj: &Object) -> Result<TwilioStart, TwilioError> {
    let err = |e| TwilioError::field("start", e);
    let start = fields::object(obj, "start").map_err(err)?;
    let tracks = match fields::value(start, "tracks").map_err(err)? {
        serde_json::Value::Array(items) => items
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>(),
        _ => None,
    }
    .ok_or(TwilioError::InvalidField {
        event: "start",
        field: "tracks",
        expected: "an array of strings",
    })?;
    let custom_parameters = match fields::object(start, "customParameters") {
        Ok(m) => m.clone(),
        Err(FieldError::Missing { .. }) => serde_json::Map::new(),
        Err(e) => return Err(err(e)),
    };
    Ok(TwilioStart {
        stream_sid: fields::string(start, "streamSid").map_err(err)?.to_owned(),
        account_sid: fields::string(start, "accountSid").map_err(err)?.to_owned(),
        call_sid: fields::string(start, "callSid").map_err(err)?.to_owned(),
        tracks,
        custom_parameters,
        media_format: parse_media_format(fields::object(start, "mediaFormat").map_err(err)?)?,
    })
}

fn parse_media_format(fmt: &Object) -> Result<MediaFormat, TwilioError> {
    let err = |e| TwilioError::field("start", e);
    let encoding = fields::string(fmt, "encoding").map_err(err)?;
    let rate = fields::uint_lenient(fmt, "sampleRate").map_err(err)?;
    let channels = fields::uint_lenient(fmt, "channels").map_err(err)?;
    if encoding != TWILIO_ENCODING || rate != u64::from(TWILIO_SAMPLE_RATE_HZ) || channels != 1 {
        return Err(TwilioError::UnsupportedMediaFormat {
            encoding: encoding.chars().take(64).collect(),
            sample_rate_hz: rate,
            channels,
        });
    }
    Ok(MediaFormat {
        encoding: encoding.to_owned(),
        sample_rate_hz: TWILIO_SAMPLE_RATE_HZ,
        channels: 1,
    })
}
