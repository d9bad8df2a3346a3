//! Vonage Voice API websockets (an NCCO `connect` action to a `websocket`
//! endpoint).
//!
//! Vonage opens a websocket to the endpoint's `uri`. Its first message is a
//! JSON text `{"event":"websocket:connected","content-type":"audio/l16;rate=16000", ...}`
//! that also carries every key of the endpoint's `headers` object. Then the
//! caller's audio arrives as binary messages of raw 16-bit little-endian
//! linear PCM, mono, 20 ms each, at the rate of the `content-type` (8000 or
//! 16000 Hz); events arrive as JSON text (`websocket:dtmf`,
//! `websocket:notify`, `websocket:cleared`). The server sends audio the same
//! way (binary, one 20 ms frame per message) and JSON commands:
//! `{"action":"clear"}` drops queued audio, `{"action":"notify","payload":{..}}`
//! asks for a `websocket:notify` echo with that payload once the audio before
//! it has played.
//! Reference: <https://developer.vonage.com/en/voice/voice-api/concepts/websockets>
//! and the NCCO reference <https://developer.vonage.com/en/voice/voice-api/ncco-reference>.
//!
//! Call ids: Vonage puts no call id in the stream itself. The answer URL
//! brisvox serves puts the call's `uuid`, `from` and `to` in the endpoint
//! `headers` (`call_uuid`, `from`, `to`), which this codec reads back; other
//! header keys become the stream's parameters.

use serde_json::{Map, Value, json};

use crate::AudioCodec;
use crate::carrier::{
    Carrier, Encode, MediaStream, Outbound, StreamError, StreamEvent, StreamStart, WireFormat,
    json_text, parse_digit, parse_message, session_stream, session_stream_methods, truncate,
    unknown_event,
};
use crate::fields::{self, Object};

/// The `content-type` prefix of Vonage's linear PCM.
pub const VONAGE_L16: &str = "audio/l16;rate=";

/// Header key under which brisvox's answer NCCO passes the call `uuid`.
pub const CALL_UUID_HEADER: &str = "call_uuid";

session_stream!(
    /// One Vonage websocket: decoder and encoder. See the module docs.
    VonageStream
);

impl VonageStream {
    fn on_connected(&mut self, mut obj: Object) -> Result<StreamEvent, StreamError> {
        self.session.check_can_start()?;
        let content_type = fields::string(&obj, "content-type")
            .map_err(|e| StreamError::field("websocket:connected", e))?;
        let format = parse_content_type(content_type)?;
        obj.remove("event");
        obj.remove("content-type");
        let take = |obj: &mut Object, key: &str| match obj.remove(key) {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                obj.insert(key.to_owned(), other);
                None
            }
            None => None,
        };
        let call_id = take(&mut obj, CALL_UUID_HEADER).unwrap_or_default();
        let from = take(&mut obj, "from");
        let to = take(&mut obj, "to");
        self.session.start(&call_id, format);
        Ok(StreamEvent::Start(StreamStart {
            carrier: Carrier::Vonage,
            stream_id: call_id.clone(),
            call_id,
            from,
            to,
            parameters: Map::from_iter(obj),
            format,
        }))
    }

    fn on_dtmf(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session.check_streaming("websocket:dtmf", None)?;
        let err = |e| StreamError::field("websocket:dtmf", e);
        // The digit is a top-level field; accept it nested under `dtmf` too.
        let digit = match fields::opt_string(obj, "digit").map_err(err)? {
            Some(d) => d,
            None => {
                let dtmf = fields::object(obj, "dtmf").map_err(err)?;
                fields::string(dtmf, "digit").map_err(err)?
            }
        };
        Ok(StreamEvent::Dtmf {
            digit: parse_digit(digit)?,
        })
    }

    fn on_notify(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session.check_streaming("websocket:notify", None)?;
        let err = |e| StreamError::field("websocket:notify", e);
        let payload = fields::object(obj, "payload").map_err(err)?;
        let name = fields::string(payload, "name").map_err(err)?.to_owned();
        Ok(StreamEvent::Mark { name })
    }
}

/// The format of a `content-type` such as `audio/l16;rate=16000`.
pub fn parse_content_type(content_type: &str) -> Result<WireFormat, StreamError> {
    let rate = content_type
        .strip_prefix(VONAGE_L16)
        .and_then(|r| r.trim().parse::<u32>().ok());
    match rate {
        Some(sample_rate_hz @ (8000 | 16000)) => Ok(WireFormat {
            codec: AudioCodec::Pcm16,
            sample_rate_hz,
        }),
        _ => Err(StreamError::UnsupportedMediaFormat {
            encoding: truncate(content_type),
            sample_rate_hz: rate.map_or(0, u64::from),
            channels: 1,
        }),
    }
}

impl MediaStream for VonageStream {
    session_stream_methods!(Carrier::Vonage);

    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError> {
        let (obj, event) = parse_message(&self.session, text, "event")?;
        match event.as_str() {
            "websocket:connected" => self.on_connected(obj),
            "websocket:dtmf" => self.on_dtmf(&obj),
            "websocket:notify" => self.on_notify(&obj),
            "websocket:cleared" => {
                self.session.check_streaming("websocket:cleared", None)?;
                Ok(StreamEvent::Cleared)
            }
            other => unknown_event(other),
        }
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError> {
        self.session.check_size(bytes.len())?;
        self.session.check_streaming("audio", None)?;
        Ok(self.session.push_binary(bytes, true)?.into())
    }
}

/// The message a server sends for `what`: audio as binary, commands as JSON.
pub(crate) fn encode(what: Encode<'_>) -> Outbound {
    match what {
        Encode::Media(audio) => Outbound::Binary(audio.to_vec()),
        Encode::Mark(name) => json_text(&json!({"action": "notify", "payload": {"name": name}})),
        Encode::Clear => json_text(&json!({"action": "clear"})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_give_the_rate() {
        assert_eq!(
            parse_content_type("audio/l16;rate=8000").map(|f| f.sample_rate_hz),
            Ok(8000)
        );
        for bad in ["audio/l16;rate=44100", "audio/pcmu", "audio/l16;rate="] {
            assert!(parse_content_type(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_become_ids_and_parameters() {
        let mut s = VonageStream::default();
        let ev = s
            .decode_text(r#"{"event":"websocket:connected","content-type":"audio/l16;rate=16000","call_uuid":"u-1","from":"447700900000","lang":"en"}"#)
            .unwrap();
        let StreamEvent::Start(start) = ev else {
            panic!("not a start")
        };
        assert_eq!(start.call_id, "u-1");
        assert_eq!(start.from.as_deref(), Some("447700900000"));
        assert_eq!(start.parameters.len(), 1);
        assert_eq!(start.parameters["lang"], "en");
    }

    #[test]
    fn audio_before_the_greeting_is_refused() {
        assert_eq!(
            VonageStream::default().decode_binary(&[0; 640]),
            Err(StreamError::BeforeStart { event: "audio" })
        );
    }
}
