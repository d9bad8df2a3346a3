//! [`TwilioStream`]: Twilio Media Streams behind the carrier-neutral
//! [`MediaStream`] interface, so a route drives Twilio like every other carrier.

use crate::carrier::{Carrier, MediaStream, StreamError, StreamEvent, StreamStart, WireFormat};

use super::{TwilioDecoder, TwilioEvent};

/// One Twilio stream: a [`TwilioDecoder`] and what its `start` said.
#[derive(Debug, Default)]
pub struct TwilioStream {
    decoder: TwilioDecoder,
    started: bool,
}

impl TwilioStream {
    /// A stream codec around `decoder` (which sets the bounds).
    pub fn new(decoder: TwilioDecoder) -> Self {
        Self {
            decoder,
            started: false,
        }
    }

    fn translate(&mut self, ev: TwilioEvent) -> StreamEvent {
        match ev {
            TwilioEvent::Connected { .. } => StreamEvent::Connected,
            TwilioEvent::Start(start) => {
                self.started = true;
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
        self.started.then_some(WireFormat::MULAW_8K)
    }

    fn stream_id(&self) -> Option<&str> {
        self.decoder.stream_sid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Outbound;

    #[test]
    fn twilio_speaks_the_common_interface() {
        let mut s = TwilioStream::default();
        assert!(s.encoder().is_none());
        let start = r#"{"event":"start","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1","tracks":["inbound"],"customParameters":{"token":"t"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}"#;
        let StreamEvent::Start(st) = s.decode_text(start).unwrap() else {
            panic!("not a start")
        };
        assert_eq!(st.call_id, "CA1");
        assert_eq!(st.parameters["token"], "t");
        assert_eq!(
            s.encoder().map(|e| e.clear()),
            Some(Outbound::Text(
                r#"{"event":"clear","streamSid":"MZ1"}"#.into()
            ))
        );
    }
}
