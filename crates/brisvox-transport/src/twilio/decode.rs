//! [`TwilioDecoder`]: Twilio Media Streams messages in, typed events out.

use crate::carrier::{
    MediaSession, StreamError, StreamLimits, WireFormat, parse_digit, parse_message, truncate,
};
use crate::fields::{self, FieldError, Object};

use super::{
    DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_TEXT_BYTES, TWILIO_ENCODING, TWILIO_SAMPLE_RATE_HZ,
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

/// Why a message from Twilio was refused: the error every carrier codec
/// shares ([`StreamError`]).
pub type TwilioError = StreamError;

/// Decodes one Twilio Media Streams connection. Feed each text message to
/// [`TwilioDecoder::decode_text`] (a binary message to
/// [`TwilioDecoder::decode_binary`], which refuses it); after a `media` event,
/// drain [`TwilioDecoder::pop_frame`].
#[derive(Debug)]
pub struct TwilioDecoder {
    session: MediaSession,
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
            session: MediaSession::new(StreamLimits {
                max_message_bytes: max_text_bytes,
                max_payload_bytes,
            }),
        }
    }

    /// The stream's id, once `start` was decoded.
    pub fn stream_sid(&self) -> Option<&str> {
        self.session.stream_id()
    }

    /// The mu-law bytes of the last `media` message.
    pub fn last_payload(&self) -> &[u8] {
        self.session.last_payload()
    }

    /// The next whole 20 ms inbound mu-law frame (160 bytes), if any.
    pub fn pop_frame(&mut self) -> Option<&[u8]> {
        self.session.pop_frame()
    }

    /// Refuses a binary message: Twilio sends text only.
    pub fn decode_binary(&mut self, bytes: &[u8]) -> Result<TwilioEvent, TwilioError> {
        Err(TwilioError::BinaryMessage {
            len_bytes: bytes.len(),
        })
    }

    /// Decodes one text message.
    pub fn decode_text(&mut self, text: &str) -> Result<TwilioEvent, TwilioError> {
        let (obj, event) = parse_message(&self.session, text, "event")?;
        match event.as_str() {
            "connected" => decode_connected(&obj),
            "start" => self.on_start(&obj),
            "media" => self.on_media(&obj),
            "mark" => self.on_mark(&obj),
            "dtmf" => self.on_dtmf(&obj),
            "stop" => self.on_stop(&obj),
            other => Err(TwilioError::UnknownEvent {
                event: truncate(other),
            }),
        }
    }

    /// Checks that the call is streaming and that the message's top-level
    /// `streamSid`, when present, is this stream's.
    fn check_streaming(&self, obj: &Object, event: &'static str) -> Result<(), TwilioError> {
        self.session.check_message(obj, event, "streamSid")
    }

    fn on_start(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.session.check_can_start()?;
        let start = parse_start(obj)?;
        self.session.start(&start.stream_sid, WireFormat::MULAW_8K);
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
        let pushed = self.session.push_base64(b64, track == "inbound")?;
        Ok(TwilioEvent::Media(MediaChunk {
            track,
            chunk,
            timestamp_ms,
            payload_bytes: pushed.payload_bytes,
            frames_ready: pushed.frames_ready,
        }))
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
        let digit = parse_digit(fields::string(dtmf, "digit").map_err(err)?)?;
        Ok(TwilioEvent::Dtmf { track, digit })
    }

    fn on_stop(&mut self, obj: &Object) -> Result<TwilioEvent, TwilioError> {
        self.check_streaming(obj, "stop")?;
        let err = |e| TwilioError::field("stop", e);
        let stop = fields::object(obj, "stop").map_err(err)?;
        let account_sid = fields::string(stop, "accountSid").map_err(err)?.to_owned();
        let call_sid = fields::string(stop, "callSid").map_err(err)?.to_owned();
        self.session.stop();
        Ok(TwilioEvent::Stop {
            account_sid,
            call_sid,
        })
    }
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
            encoding: truncate(encoding),
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
