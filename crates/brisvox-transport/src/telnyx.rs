//! Telnyx Media Streaming over websockets, bidirectional (RTP mode).
//!
//! Telnyx opens a websocket to the `stream_url` given to Call Control
//! (`answer`, `dial` or `streaming_start`) or to TeXML `<Stream>`, and sends
//! JSON text frames: `connected`, one `start` (`stream_id`, and in `start`:
//! `call_control_id`, `from`, `to`, `custom_parameters`, `client_state`,
//! `media_format` with `encoding`, `sample_rate`, `channels`), `media`
//! (base64 RTP payloads, no RTP header, with `track`, `chunk`, `timestamp`),
//! `dtmf`, `mark` (the echo of a mark the server sent), `error` and `stop`.
//! With `stream_bidirectional_mode: "rtp"` the server sends `media` (base64
//! payload in the bidirectional codec), `mark` and `clear`.
//! Reference: <https://developers.telnyx.com/docs/voice/programmable-voice/media-streaming>
//! and the AsyncAPI page
//! <https://developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket>.
//!
//! Audio: G.711 at 8 kHz, PCMU (mu-law) or PCMA (A-law), whichever
//! `media_format.encoding` says. The server answers in the same codec, so
//! configure `stream_bidirectional_codec` equal to the stream codec
//! (docs/telephony/telnyx.md). Other encodings (G722, OPUS, AMR-WB, L16) are
//! refused with [`StreamError::UnsupportedMediaFormat`].

use serde_json::json;

use crate::AudioCodec;
use crate::carrier::{
    Carrier, Encode, MediaStream, Outbound, StreamError, StreamEvent, StreamStart, WireFormat,
    base64_of, json_text, opt_object, opt_owned, parse_message, session_stream,
    session_stream_methods, text_only, truncate, unknown_event,
};
use crate::fields::{self, Object};

/// The field naming the stream in Telnyx's messages.
const ID: &str = "stream_id";

session_stream!(
    /// One Telnyx media stream: decoder and encoder. See the module docs.
    TelnyxStream
);

impl TelnyxStream {
    fn on_start(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session.check_can_start()?;
        let err = |e| StreamError::field("start", e);
        let stream_id = fields::string(obj, "stream_id").map_err(err)?;
        let start = fields::object(obj, "start").map_err(err)?;
        let format = media_format(fields::object(start, "media_format").map_err(err)?)?;
        let begun = StreamStart {
            carrier: Carrier::Telnyx,
            stream_id: stream_id.to_owned(),
            call_id: fields::string(start, "call_control_id")
                .map_err(err)?
                .to_owned(),
            from: opt_owned(start, "start", "from")?,
            to: opt_owned(start, "start", "to")?,
            parameters: opt_object(start, "start", "custom_parameters")?,
            format,
        };
        self.session.start(stream_id, format);
        Ok(StreamEvent::Start(begun))
    }
}

/// `error`: `payload.code`, `payload.title`, `payload.detail`, all optional.
fn on_error(obj: &Object) -> StreamEvent {
    let payload = obj.get("payload").and_then(|p| p.as_object());
    let get = |k: &str| {
        payload
            .and_then(|p| p.get(k))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
    };
    let detail = [get("code"), get("title"), get("detail")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(": ");
    StreamEvent::CarrierError {
        detail: if detail.is_empty() {
            "error without payload".to_owned()
        } else {
            detail
        },
    }
}

fn media_format(fmt: &Object) -> Result<WireFormat, StreamError> {
    let err = |e| StreamError::field("start", e);
    let encoding = fields::string(fmt, "encoding").map_err(err)?;
    let rate = fields::uint_lenient(fmt, "sample_rate").map_err(err)?;
    let channels = match fmt.get("channels") {
        None | Some(serde_json::Value::Null) => 1,
        Some(_) => fields::uint_lenient(fmt, "channels").map_err(err)?,
    };
    let codec = match encoding {
        "PCMU" => Some(AudioCodec::Mulaw),
        "PCMA" => Some(AudioCodec::Alaw),
        _ => None,
    };
    match codec {
        Some(codec) if rate == 8000 && channels == 1 => Ok(WireFormat {
            codec,
            sample_rate_hz: 8000,
        }),
        _ => Err(StreamError::UnsupportedMediaFormat {
            encoding: truncate(encoding),
            sample_rate_hz: rate,
            channels,
        }),
    }
}

impl MediaStream for TelnyxStream {
    session_stream_methods!(Carrier::Telnyx);

    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError> {
        let (obj, event) = parse_message(&self.session, text, "event")?;
        match event.as_str() {
            "connected" => Ok(StreamEvent::Connected),
            "start" => self.on_start(&obj),
            // `track` is "inbound" or "outbound"; absent means inbound.
            "media" => self
                .session
                .on_media(&obj, ID, &["inbound", "inbound_track"]),
            "dtmf" => self.session.on_dtmf(&obj, ID),
            "mark" => self.session.on_mark(&obj, ID),
            "error" => Ok(on_error(&obj)),
            "stop" => self.session.on_stop(&obj, ID),
            other => unknown_event(other),
        }
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError> {
        text_only(bytes)
    }
}

/// The message a server sends for `what` (Telnyx needs no stream id).
pub(crate) fn encode(what: Encode<'_>) -> Outbound {
    json_text(&match what {
        Encode::Media(audio) => json!({"event": "media", "media": {"payload": base64_of(audio)}}),
        Encode::Mark(name) => json!({"event": "mark", "mark": {"name": name}}),
        Encode::Clear => json!({"event": "clear"}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = r#"{"event":"start","sequence_number":"1","stream_id":"S1","start":{"call_control_id":"v3:c","media_format":{"encoding":"PCMA","sample_rate":8000,"channels":1}}}"#;

    #[test]
    fn pcma_streams_are_a_law_at_8k() {
        let mut s = TelnyxStream::default();
        let StreamEvent::Start(start) = s.decode_text(START).unwrap() else {
            panic!("not a start")
        };
        assert_eq!(start.format.codec, AudioCodec::Alaw);
        assert_eq!(start.call_id, "v3:c");
        assert_eq!(s.format(), Some(start.format));
    }

    #[test]
    fn other_codecs_are_refused() {
        let l16 = START.replace("PCMA", "L16");
        assert!(matches!(
            TelnyxStream::default().decode_text(&l16),
            Err(StreamError::UnsupportedMediaFormat { .. })
        ));
    }

    #[test]
    fn nothing_is_encoded_before_start() {
        let s = TelnyxStream::default();
        assert!(s.encoder().is_none());
    }

    #[test]
    fn errors_carry_the_carriers_words() {
        let ev = TelnyxStream::default()
            .decode_text(r#"{"event":"error","payload":{"code":100002,"title":"Unknown error","detail":"x"}}"#)
            .unwrap();
        assert_eq!(
            ev,
            StreamEvent::CarrierError {
                detail: "100002: Unknown error: x".into()
            }
        );
    }
}
