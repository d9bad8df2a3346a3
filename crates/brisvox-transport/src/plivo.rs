//! Plivo Audio Streams, bidirectional (`<Stream bidirectional="true">`).
//!
//! Plivo opens a websocket to the URL in the `<Stream>` XML element and sends
//! JSON text messages: one `start` (`start.callId`, `start.streamId`,
//! `start.accountId`, `start.tracks`, `start.mediaFormat` with `encoding` and
//! `sampleRate`, and `extra_headers` from the element's `extraHeaders`),
//! `media` (base64 audio with `track`, `timestamp`, `chunk`), `dtmf`,
//! `playedStream` (a checkpoint was reached) and `clearedAudio`. The server
//! sends `playAudio` (base64 audio with `contentType` and `sampleRate`),
//! `checkpoint` and `clearAudio`.
//! Reference: <https://www.plivo.com/docs/voice/audio-streaming/audio-streaming>
//! (stream event protocol), <https://www.plivo.com/docs/voice/xml/the-stream-element/checkpoint-event/>
//! and <https://docs.plivo.com/docs/voice/xml/audiostream> (the element).
//!
//! Audio: the element's `contentType`, `audio/x-mulaw;rate=8000` (G.711
//! mu-law) or `audio/x-l16;rate=8000|16000` (16-bit linear PCM, which we read
//! as little-endian; only a real account can confirm the byte order, see
//! docs/telephony/plivo.md). The server answers in the same format.

use serde_json::{Map, Value, json};

use crate::AudioCodec;
use crate::carrier::{
    Carrier, Encode, MediaStream, Outbound, StreamError, StreamEvent, StreamStart, WireFormat,
    base64_of, json_text, opt_owned, parse_message, session_stream, session_stream_methods,
    text_only, truncate, unknown_event,
};
use crate::fields::{self, Object};

/// `mediaFormat.encoding` of G.711 mu-law.
pub const PLIVO_MULAW: &str = "audio/x-mulaw";
/// `mediaFormat.encoding` of 16-bit linear PCM.
pub const PLIVO_L16: &str = "audio/x-l16";

/// The field naming the stream in Plivo's messages.
const ID: &str = "streamId";

session_stream!(
    /// One Plivo audio stream: decoder and encoder. See the module docs.
    PlivoStream
);

impl PlivoStream {
    fn on_start(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session.check_can_start()?;
        let err = |e| StreamError::field("start", e);
        let start = fields::object(obj, "start").map_err(err)?;
        let stream_id = fields::string(start, "streamId").map_err(err)?;
        let format = media_format(fields::object(start, "mediaFormat").map_err(err)?)?;
        let headers = opt_owned(obj, "start", "extra_headers")?;
        let begun = StreamStart {
            carrier: Carrier::Plivo,
            stream_id: stream_id.to_owned(),
            call_id: fields::string(start, "callId").map_err(err)?.to_owned(),
            from: None,
            to: None,
            parameters: parse_extra_headers(headers.as_deref().unwrap_or("")),
            format,
        };
        self.session.start(stream_id, format);
        Ok(StreamEvent::Start(begun))
    }

    fn on_played(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session
            .check_message(obj, "playedStream", "streamId")?;
        let name = fields::string(obj, "name")
            .map_err(|e| StreamError::field("playedStream", e))?
            .to_owned();
        Ok(StreamEvent::Mark { name })
    }

    fn on_cleared(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session
            .check_message(obj, "clearedAudio", "streamId")?;
        Ok(StreamEvent::Cleared)
    }
}

/// `extraHeaders` as Plivo passes them: `key=value` pairs separated by `;`
/// (the stream event reference) or `,` (the XML element's example). A pair
/// without `=` becomes a key with an empty value.
pub fn parse_extra_headers(headers: &str) -> Map<String, Value> {
    headers
        .split([';', ','])
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), Value::String(v.trim().to_owned())),
            None => (pair.to_owned(), Value::String(String::new())),
        })
        .collect()
}

fn media_format(fmt: &Object) -> Result<WireFormat, StreamError> {
    let err = |e| StreamError::field("start", e);
    let encoding = fields::string(fmt, "encoding").map_err(err)?;
    let rate = fields::uint_lenient(fmt, "sampleRate").map_err(err)?;
    let codec = match (encoding, rate) {
        (PLIVO_MULAW, 8000) => Some(AudioCodec::Mulaw),
        (PLIVO_L16, 8000 | 16000) => Some(AudioCodec::Pcm16),
        _ => None,
    };
    match (codec, u32::try_from(rate)) {
        (Some(codec), Ok(sample_rate_hz)) => Ok(WireFormat {
            codec,
            sample_rate_hz,
        }),
        _ => Err(StreamError::UnsupportedMediaFormat {
            encoding: truncate(encoding),
            sample_rate_hz: rate,
            channels: 1,
        }),
    }
}

fn content_type(codec: AudioCodec) -> &'static str {
    match codec {
        AudioCodec::Pcm16 => PLIVO_L16,
        // Plivo takes only mu-law and L16; a stream is never started in A-law.
        AudioCodec::Mulaw | AudioCodec::Alaw => PLIVO_MULAW,
    }
}

impl MediaStream for PlivoStream {
    session_stream_methods!(Carrier::Plivo);

    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError> {
        let (obj, event) = parse_message(&self.session, text, "event")?;
        match event.as_str() {
            "start" => self.on_start(&obj),
            "media" => self.session.on_media(&obj, ID, &["inbound"]),
            "dtmf" => self.session.on_dtmf(&obj, ID),
            // The support article calls the echo `played`.
            "playedStream" | "played" => self.on_played(&obj),
            "clearedAudio" => self.on_cleared(&obj),
            other => unknown_event(other),
        }
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError> {
        text_only(bytes)
    }
}

/// The message a server sends for `what` on the stream `id` in `format`.
pub(crate) fn encode(what: Encode<'_>, id: &str, format: WireFormat) -> Outbound {
    json_text(&match what {
        Encode::Media(audio) => json!({
            "event": "playAudio",
            "media": {
                "contentType": content_type(format.codec),
                "sampleRate": format.sample_rate_hz,
                "payload": base64_of(audio),
            }
        }),
        Encode::Mark(name) => json!({"event": "checkpoint", "streamId": id, "name": name}),
        Encode::Clear => json!({"event": "clearAudio", "streamId": id}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_headers_take_both_separators() {
        let m = parse_extra_headers("userId=12345;sessionId=abc-xyz");
        assert_eq!(m["userId"], "12345");
        assert_eq!(m["sessionId"], "abc-xyz");
        let m = parse_extra_headers("test1=12,test2=123");
        assert_eq!(m.len(), 2);
        assert_eq!(parse_extra_headers("").len(), 0);
    }

    #[test]
    fn l16_at_16k_is_accepted_and_answered_in_kind() {
        let mut s = PlivoStream::default();
        let start = r#"{"event":"start","sequenceNumber":1,"start":{"callId":"c","streamId":"s","accountId":"a","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-l16","sampleRate":16000}}}"#;
        s.decode_text(start).unwrap();
        assert_eq!(s.format().map(WireFormat::frame_bytes), Some(640));
        let Some(Outbound::Text(play)) = s.encoder().map(|e| e.media(&[0, 0])) else {
            panic!("no playAudio")
        };
        assert!(play.contains(r#""contentType":"audio/x-l16""#), "{play}");
        assert!(play.contains(r#""sampleRate":16000"#), "{play}");
    }

    #[test]
    fn mulaw_at_16k_is_refused() {
        let start = r#"{"event":"start","start":{"callId":"c","streamId":"s","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":16000}}}"#;
        assert!(matches!(
            PlivoStream::default().decode_text(start),
            Err(StreamError::UnsupportedMediaFormat { .. })
        ));
    }
}
