//! [`MediaSession`]: the state every carrier decoder keeps, in one place.
//!
//! A stream is before its `start`, streaming, or stopped; it has one stream id
//! and one audio format; its caller audio arrives as payloads (base64 in JSON,
//! or binary) that are framed into whole 20 ms frames. Each carrier module
//! parses its own message shapes and calls these methods for the rest, so the
//! rules (bounds, order, framing) are the same for every carrier.

use base64::Engine as _;

use super::{StreamError, StreamEvent, StreamLimits, WireFormat, truncate};
use crate::fields::{self, FieldError, Object};
use crate::framer::FrameAssembler;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    BeforeStart,
    Streaming,
    Stopped,
}

/// Phase, ids, format and audio framing of one carrier stream.
#[derive(Debug)]
pub(crate) struct MediaSession {
    limits: StreamLimits,
    phase: Phase,
    stream_id: Option<String>,
    format: Option<WireFormat>,
    payload: Vec<u8>,
    frames: FrameAssembler,
}

impl MediaSession {
    /// A session before its `start`.
    pub(crate) fn new(limits: StreamLimits) -> Self {
        Self {
            limits,
            phase: Phase::BeforeStart,
            stream_id: None,
            format: None,
            payload: Vec::with_capacity(limits.max_payload_bytes),
            frames: FrameAssembler::new(1, 1),
        }
    }

    /// Refuses a message over the size bound.
    pub(crate) fn check_size(&self, len_bytes: usize) -> Result<(), StreamError> {
        if len_bytes > self.limits.max_message_bytes {
            return Err(StreamError::MessageTooLarge {
                len_bytes,
                limit_bytes: self.limits.max_message_bytes,
            });
        }
        Ok(())
    }

    /// The stream's id, once started.
    pub(crate) fn stream_id(&self) -> Option<&str> {
        self.stream_id.as_deref()
    }

    /// The stream's format, once started.
    pub(crate) fn format(&self) -> Option<WireFormat> {
        self.format
    }

    /// The bytes of the last payload.
    pub(crate) fn last_payload(&self) -> &[u8] {
        &self.payload
    }

    /// The next whole inbound frame.
    pub(crate) fn pop_frame(&mut self) -> Option<&[u8]> {
        self.frames.pop_frame()
    }

    /// Refuses a second start; call before parsing the start's fields.
    pub(crate) fn check_can_start(&self) -> Result<(), StreamError> {
        match self.phase {
            Phase::BeforeStart => Ok(()),
            Phase::Streaming => Err(StreamError::SecondStart),
            Phase::Stopped => Err(StreamError::AfterStop { event: "start" }),
        }
    }

    /// Starts the stream with its id and format.
    pub(crate) fn start(&mut self, stream_id: &str, format: WireFormat) {
        let frame = format.frame_bytes();
        self.frames = FrameAssembler::new(frame, self.limits.max_payload_bytes + frame);
        self.stream_id = Some(stream_id.to_owned());
        self.format = Some(format);
        self.phase = Phase::Streaming;
    }

    /// Checks that the stream is streaming and that `got` (the message's
    /// stream id, when it names one) is this stream's.
    pub(crate) fn check_streaming(
        &self,
        event: &'static str,
        got: Option<&str>,
    ) -> Result<(), StreamError> {
        match self.phase {
            Phase::BeforeStart => return Err(StreamError::BeforeStart { event }),
            Phase::Stopped => return Err(StreamError::AfterStop { event }),
            Phase::Streaming => {}
        }
        match (got, self.stream_id.as_deref()) {
            (Some(got), Some(expected)) if got != expected => Err(StreamError::StreamIdMismatch {
                expected: expected.to_owned(),
                got: truncate(got),
            }),
            _ => Ok(()),
        }
    }

    /// Like [`MediaSession::check_streaming`], reading the stream id from the
    /// string field `id_field` of `obj` when present.
    pub(crate) fn check_message(
        &self,
        obj: &Object,
        event: &'static str,
        id_field: &'static str,
    ) -> Result<(), StreamError> {
        let got = fields::opt_string(obj, id_field).map_err(|e| StreamError::field(event, e))?;
        self.check_streaming(event, got)
    }

    /// `media` whose object `media` holds `payload` and maybe `track`: the
    /// audio is framed when the track is absent or one of `inbound_tracks`.
    pub(crate) fn on_media(
        &mut self,
        obj: &Object,
        id_field: &'static str,
        inbound_tracks: &[&str],
    ) -> Result<StreamEvent, StreamError> {
        self.check_message(obj, "media", id_field)?;
        let err = |e| StreamError::field("media", e);
        let media = fields::object(obj, "media").map_err(err)?;
        let track = fields::opt_string(media, "track").map_err(err)?;
        let inbound = track.is_none_or(|t| inbound_tracks.contains(&t));
        let b64 = fields::string(media, "payload").map_err(err)?;
        Ok(self.push_base64(b64, inbound)?.into())
    }

    /// `dtmf` whose object `dtmf` holds the `digit`.
    pub(crate) fn on_dtmf(
        &self,
        obj: &Object,
        id_field: &'static str,
    ) -> Result<StreamEvent, StreamError> {
        self.check_message(obj, "dtmf", id_field)?;
        let err = |e| StreamError::field("dtmf", e);
        let dtmf = fields::object(obj, "dtmf").map_err(err)?;
        let digit = super::parse_digit(fields::string(dtmf, "digit").map_err(err)?)?;
        Ok(StreamEvent::Dtmf { digit })
    }

    /// `mark` whose object `mark` holds the `name`.
    pub(crate) fn on_mark(
        &self,
        obj: &Object,
        id_field: &'static str,
    ) -> Result<StreamEvent, StreamError> {
        self.check_message(obj, "mark", id_field)?;
        let err = |e| StreamError::field("mark", e);
        let mark = fields::object(obj, "mark").map_err(err)?;
        let name = fields::string(mark, "name").map_err(err)?.to_owned();
        Ok(StreamEvent::Mark { name })
    }

    /// `stop`: the stream ends.
    pub(crate) fn on_stop(
        &mut self,
        obj: &Object,
        id_field: &'static str,
    ) -> Result<StreamEvent, StreamError> {
        self.check_message(obj, "stop", id_field)?;
        self.stop();
        Ok(StreamEvent::Stop)
    }

    /// Ends the stream.
    pub(crate) fn stop(&mut self) {
        self.phase = Phase::Stopped;
        self.frames.clear();
    }

    /// Decodes a base64 payload; frames it when `inbound`.
    pub(crate) fn push_base64(&mut self, b64: &str, inbound: bool) -> Result<Pushed, StreamError> {
        let limit = self.limits.max_payload_bytes;
        let estimate = b64.len() / 4 * 3;
        if estimate > limit + 2 {
            return Err(StreamError::PayloadTooLarge {
                len_bytes: estimate,
                limit_bytes: limit,
            });
        }
        self.payload.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(b64, &mut self.payload)
            .map_err(|e| StreamError::InvalidBase64 {
                detail: e.to_string(),
            })?;
        if self.payload.len() > limit {
            let len_bytes = self.payload.len();
            self.payload.clear();
            return Err(StreamError::PayloadTooLarge {
                len_bytes,
                limit_bytes: limit,
            });
        }
        self.frame_payload(inbound)
    }

    /// Takes a binary payload (raw audio); frames it when `inbound`.
    pub(crate) fn push_binary(
        &mut self,
        bytes: &[u8],
        inbound: bool,
    ) -> Result<Pushed, StreamError> {
        if bytes.len() > self.limits.max_payload_bytes {
            return Err(StreamError::PayloadTooLarge {
                len_bytes: bytes.len(),
                limit_bytes: self.limits.max_payload_bytes,
            });
        }
        self.payload.clear();
        self.payload.extend_from_slice(bytes);
        self.frame_payload(inbound)
    }

    fn frame_payload(&mut self, inbound: bool) -> Result<Pushed, StreamError> {
        if inbound {
            self.frames
                .push(&self.payload)
                .map_err(|_| StreamError::PayloadTooLarge {
                    len_bytes: self.payload.len() + self.frames.pending_bytes(),
                    limit_bytes: self.frames.max_pending_bytes(),
                })?;
        }
        Ok(Pushed {
            payload_bytes: self.payload.len(),
            frames_ready: self.frames.frames_ready(),
        })
    }
}

/// What one payload added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pushed {
    /// Decoded bytes of the payload.
    pub(crate) payload_bytes: usize,
    /// Whole inbound frames now waiting.
    pub(crate) frames_ready: usize,
}

impl From<Pushed> for StreamEvent {
    fn from(p: Pushed) -> Self {
        StreamEvent::Media {
            payload_bytes: p.payload_bytes,
            frames_ready: p.frames_ready,
        }
    }
}

/// Parses a JSON text message within `limits` and returns it with its
/// `event` (or, for carriers that name it so, `event_field`).
pub(crate) fn parse_message(
    session: &MediaSession,
    text: &str,
    event_field: &'static str,
) -> Result<(Object, String), StreamError> {
    session.check_size(text.len())?;
    let obj = fields::parse_object(text).map_err(|detail| StreamError::MalformedJson { detail })?;
    let event = match fields::string(&obj, event_field) {
        Ok(e) => e.to_owned(),
        Err(FieldError::Missing { .. }) => return Err(StreamError::MissingEvent),
        Err(e) => return Err(StreamError::field("message", e)),
    };
    Ok((obj, event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AudioCodec;

    fn started() -> MediaSession {
        let mut s = MediaSession::new(StreamLimits::default());
        s.start("S1", WireFormat::MULAW_8K);
        s
    }

    #[test]
    fn payloads_are_framed_only_for_the_inbound_track() {
        let mut s = started();
        let b64 = base64::engine::general_purpose::STANDARD.encode([0xFFu8; 400]);
        assert_eq!(
            s.push_base64(&b64, false).unwrap(),
            Pushed {
                payload_bytes: 400,
                frames_ready: 0
            }
        );
        assert_eq!(
            StreamEvent::from(s.push_base64(&b64, true).unwrap()),
            StreamEvent::Media {
                payload_bytes: 400,
                frames_ready: 2
            }
        );
        assert_eq!(s.pop_frame().map(<[u8]>::len), Some(160));
    }

    #[test]
    fn the_frame_follows_the_format() {
        let mut s = MediaSession::new(StreamLimits::default());
        s.start(
            "S",
            WireFormat {
                codec: AudioCodec::Pcm16,
                sample_rate_hz: 16000,
            },
        );
        s.push_binary(&[0; 1280], true).unwrap();
        assert_eq!(s.pop_frame().map(<[u8]>::len), Some(640));
    }

    #[test]
    fn order_is_enforced() {
        let mut s = MediaSession::new(StreamLimits::default());
        assert_eq!(
            s.check_streaming("media", None),
            Err(StreamError::BeforeStart { event: "media" })
        );
        s.start("S1", WireFormat::MULAW_8K);
        assert_eq!(s.check_can_start(), Err(StreamError::SecondStart));
        assert!(matches!(
            s.check_streaming("mark", Some("S2")),
            Err(StreamError::StreamIdMismatch { .. })
        ));
        s.stop();
        assert_eq!(
            s.check_streaming("media", Some("S1")),
            Err(StreamError::AfterStop { event: "media" })
        );
    }

    #[test]
    fn oversized_payloads_are_refused_before_decoding() {
        let mut s = MediaSession::new(StreamLimits {
            max_message_bytes: 1 << 20,
            max_payload_bytes: 100,
        });
        s.start("S", WireFormat::MULAW_8K);
        let b64 = base64::engine::general_purpose::STANDARD.encode([0u8; 300]);
        assert!(matches!(
            s.push_base64(&b64, true),
            Err(StreamError::PayloadTooLarge {
                limit_bytes: 100,
                ..
            })
        ));
        assert!(matches!(
            s.push_binary(&[0; 101], true),
            Err(StreamError::PayloadTooLarge { .. })
        ));
    }
}
