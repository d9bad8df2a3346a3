//! Exotel AgentStream: the Voicebot applet (bidirectional).
//!
//! When a call reaches a Voicebot applet, Exotel opens a websocket to the
//! applet's URL and sends JSON text messages: `connected`, one `start`
//! (`stream_sid`, and in `start`: `call_sid`, `account_sid`, `from`, `to`,
//! `custom_parameters` (the applet URL's query parameters), `media_format`
//! with `encoding` `audio/x-raw`, `sample_rate` and `bit_rate` as strings),
//! `media` (base64 16-bit linear PCM, about every 100 ms), `dtmf`, `mark`
//! (the echo of a mark the server sent) and `stop`. The server sends `media`,
//! `mark` and `clear`, each with the `stream_sid`.
//! Reference: <https://developer.exotel.com/docs/agentstream/websocket-protocol>
//! and <https://developer.exotel.com/docs/agentstream/stream-voicebot-applet>
//! (the applet: sample rate 8000, 16000 or 24000 chosen with a
//! `?sample-rate=` query parameter on the URL).
//!
//! Audio: 16-bit little-endian linear PCM, mono, at the stream's rate. Exotel
//! asks for outbound chunks in multiples of 320 bytes; a 20 ms frame at any
//! of its rates is one (320, 640 or 960 bytes).

use serde_json::json;

use crate::AudioCodec;
use crate::carrier::{
    Carrier, Encode, MediaStream, Outbound, StreamError, StreamEvent, StreamStart, WireFormat,
    base64_of, json_text, opt_object, opt_owned, parse_message, session_stream,
    session_stream_methods, text_only, truncate, unknown_event,
};
use crate::fields::{self, Object};

/// `media_format.encoding` of Exotel's linear PCM.
pub const EXOTEL_ENCODING: &str = "audio/x-raw";

/// Sample rates the Voicebot applet offers, in Hz.
pub const EXOTEL_SAMPLE_RATES_HZ: [u32; 3] = [8000, 16000, 24000];

/// The field naming the stream in Exotel's messages.
const ID: &str = "stream_sid";

session_stream!(
    /// One Exotel Voicebot stream: decoder and encoder. See the module docs.
    ExotelStream
);

impl ExotelStream {
    fn on_start(&mut self, obj: &Object) -> Result<StreamEvent, StreamError> {
        self.session.check_can_start()?;
        let err = |e| StreamError::field("start", e);
        let start = fields::object(obj, "start").map_err(err)?;
        let stream_sid = match fields::opt_string(obj, "stream_sid").map_err(err)? {
            Some(sid) => sid,
            None => fields::string(start, "stream_sid").map_err(err)?,
        };
        let format = media_format(fields::object(start, "media_format").map_err(err)?)?;
        let begun = StreamStart {
            carrier: Carrier::Exotel,
            stream_id: stream_sid.to_owned(),
            call_id: fields::string(start, "call_sid").map_err(err)?.to_owned(),
            from: opt_owned(start, "start", "from")?,
            to: opt_owned(start, "start", "to")?,
            parameters: opt_object(start, "start", "custom_parameters")?,
            format,
        };
        self.session.start(stream_sid, format);
        Ok(StreamEvent::Start(begun))
    }
}

fn media_format(fmt: &Object) -> Result<WireFormat, StreamError> {
    let err = |e| StreamError::field("start", e);
    let encoding = fields::string(fmt, "encoding").map_err(err)?;
    let rate = fields::uint_lenient(fmt, "sample_rate").map_err(err)?;
    let bits = match fmt.get("bit_rate") {
        None | Some(serde_json::Value::Null) => 16,
        Some(_) => fields::uint_lenient(fmt, "bit_rate").map_err(err)?,
    };
    let rate_ok = u32::try_from(rate)
        .ok()
        .filter(|r| EXOTEL_SAMPLE_RATES_HZ.contains(r));
    match rate_ok {
        Some(sample_rate_hz) if encoding == EXOTEL_ENCODING && bits == 16 => Ok(WireFormat {
            codec: AudioCodec::Pcm16,
            sample_rate_hz,
        }),
        _ => Err(StreamError::UnsupportedMediaFormat {
            encoding: truncate(encoding),
            sample_rate_hz: rate,
            channels: 1,
        }),
    }
}

impl MediaStream for ExotelStream {
    session_stream_methods!(Carrier::Exotel);

    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError> {
        let (obj, event) = parse_message(&self.session, text, "event")?;
        match event.as_str() {
            "connected" => Ok(StreamEvent::Connected),
            "start" => self.on_start(&obj),
            "media" => self.session.on_media(&obj, ID, &[]),
            "dtmf" => self.session.on_dtmf(&obj, ID),
            "mark" => self.session.on_mark(&obj, ID),
            "stop" => self.session.on_stop(&obj, ID),
            other => unknown_event(other),
        }
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError> {
        text_only(bytes)
    }
}

/// The message a server sends for `what` on the stream `sid`.
pub(crate) fn encode(what: Encode<'_>, sid: &str) -> Outbound {
    json_text(&match what {
        Encode::Media(audio) => json!({
            "event": "media",
            "stream_sid": sid,
            "media": {"payload": base64_of(audio)},
        }),
        Encode::Mark(name) => json!({"event": "mark", "stream_sid": sid, "mark": {"name": name}}),
        Encode::Clear => json!({"event": "clear", "stream_sid": sid}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(rate: &str) -> String {
        format!(
            r#"{{"event":"start","stream_sid":"MZ1","start":{{"stream_sid":"MZ1","call_sid":"CA1","media_format":{{"encoding":"audio/x-raw","sample_rate":"{rate}","bit_rate":"16"}}}}}}"#
        )
    }

    #[test]
    fn every_applet_rate_is_pcm16() {
        for rate in EXOTEL_SAMPLE_RATES_HZ {
            let mut s = ExotelStream::default();
            s.decode_text(&start(&rate.to_string())).unwrap();
            assert_eq!(
                s.format(),
                Some(WireFormat {
                    codec: AudioCodec::Pcm16,
                    sample_rate_hz: rate
                })
            );
        }
        assert!(matches!(
            ExotelStream::default().decode_text(&start("44100")),
            Err(StreamError::UnsupportedMediaFormat { .. })
        ));
    }

    #[test]
    fn outbound_messages_carry_the_stream_sid() {
        let mut s = ExotelStream::default();
        s.decode_text(&start("8000")).unwrap();
        assert_eq!(
            s.encoder().map(|e| e.clear()),
            Some(Outbound::Text(
                r#"{"event":"clear","stream_sid":"MZ1"}"#.into()
            ))
        );
    }
}
