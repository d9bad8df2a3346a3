//! [`TwilioStream`]: Twilio Media Streams behind the carrier-neutral
//! [`MediaStream`] interface, so a route drives Twilio like every other carrier.

use crate::carrier::{
    Carrier, MediaStream, Outbound, StreamError, StreamEvent, StreamStart, WireFormat,
};

use super::{TwilioDecoder, TwilioEncoder, TwilioEvent};

/// One Twilio stream: [`TwilioDecoder`] plus the [`TwilioEncoder`] of the
/// stream it started.
#[derive(Debug, Default)]
pub struct TwilioStream {
    decoder: TwilioDecoder,
    encoder: Option<TwilioEncoder>,
}

impl TwilioStream {
    /// A stream codec around `decoder` (which sets the bounds).
    pub fn new(decoder: TwilioDecoder) -> Self {
        Self {
            decoder,
            encoder: None,
        }
    }

    /// The stream's `streamSid`, once started.
    pub fn stream_sid(&self) -> Option<&str> {
        self.decoder.stream_sid()
    }

    fn translate(&mut self, ev: TwilioEvent) -> StreamEvent {
        match ev {
            TwilioEvent::Connected { .. } => StreamEvent::Connected,
            TwilioEvent::Start(start) => {
                self.encoder = Some(TwilioEncoder::new(&start.stream_sid));
                StreamEvent::Start(StreamStart {
                    carrier: Carrier::Twilio,
                    stream_id: start.stream_sid,
                    call_id: start.call_sid,
                    from: None,
                    to: None,
                    parameters: start.custom_parameters,
                    format: WireFormat::MULAW_8K,
                })
            }
            TwilioEvent::Media(chunk) => StreamEvent::Media {
                payload_bytes: chunk.payload_bytes,
                frames_ready: chunk.frames_ready,
            },
            TwilioEvent::Mark { name } => StreamEvent::Mark { name },
            TwilioEvent::Dtmf { digit, .. } => StreamEvent::Dtmf { digit },
            TwilioEvent::Stop { .. } => StreamEvent::Stop,
        }
    }
}

impl MediaStream for TwilioStream {
    fn carrier(&self) -> Carrier {
        Carrier::Twilio
    }

    fn decode_text(&mut self, text: &str) -> Result<StreamEvent, StreamError> {
        let ev = self.decoder.decode_text(text)?;
        Ok(self.translate(ev))
    }

    fn decode_binary(&mut self, bytes: &[u8]) -> Result<StreamEvent, StreamError> {
        let ev = self.decoder.decode_binary(bytes)?;
        Ok(self.translate(ev))
    }

    fn pop_frame(&mut self) -> Option<&[u8]> {
        self.decoder.pop_frame()
    }

    fn format(&self) -> Option<WireFormat> {
        self.encoder.as_ref().map(|_| WireFormat::MULAW_8K)
    }

    fn encode_media(&self, audio: &[u8]) -> Option<Outbound> {
        Some(Outbound::Text(self.encoder.as_ref()?.media(audio)))
    }

    fn encode_mark(&self, name: &str) -> Option<Outbound> {
        Some(Outbound::Text(self.encoder.as_ref()?.mark(name)))
    }

    fn encode_clear(&self) -> Option<Outbound> {
        Some(Outbound::Text(self.encoder.as_ref()?.clear()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_speaks_the_common_interface() {
        let mut s = TwilioStream::default();
        assert!(s.encode_clear().is_none());
        let start = r#"{"event":"start","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1","tracks":["inbound"],"customParameters":{"token":"t"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}"#;
        let StreamEvent::Start(st) = s.decode_text(start).unwrap() else {
            panic!("not a start")
        };
        assert_eq!(st.call_id, "CA1");
        assert_eq!(st.parameters["token"], "t");
        assert_eq!(
            s.encode_clear(),
            Some(Outbound::Text(
                r#"{"event":"clear","streamSid":"MZ1"}"#.into()
            ))
        );
    }
}
