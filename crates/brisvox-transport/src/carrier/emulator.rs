//! [`CarrierEmulator`]: the carrier's side of each media-stream protocol.
//!
//! No carrier can be reached from a test or a benchmark, so the fake carriers
//! in the server's end-to-end tests and in `brisvox-bench` speak each
//! protocol from the carrier's end: they build the messages a carrier sends
//! (the documented shapes, the same ones the decoders' tests take verbatim
//! from the carriers' pages) and read the commands a server sends back. Pure
//! functions over a little state (stream id, sequence numbers, elapsed audio);
//! no sockets.

use serde_json::{Map, Value, json};

use super::{
    Carrier, Outbound, StreamError, WireFormat, base64_of, json_text, parse_message,
    session::MediaSession,
};
use crate::AudioCodec;
use crate::fields;

/// What a server asked the carrier to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerCommand {
    /// Play this audio (in the stream's format).
    Play(Vec<u8>),
    /// Echo this mark once the audio before it has played.
    Mark(String),
    /// Drop all queued audio.
    Clear,
}

/// One emulated carrier stream. See the module docs.
#[derive(Debug, Clone)]
pub struct CarrierEmulator {
    carrier: Carrier,
    format: WireFormat,
    stream_id: String,
    call_id: String,
    sequence: u64,
    chunk: u64,
    sent_bytes: u64,
}

impl CarrierEmulator {
    /// A stream of `carrier` in `format`, with these ids.
    pub fn new(carrier: Carrier, format: WireFormat, stream_id: &str, call_id: &str) -> Self {
        Self {
            carrier,
            format,
            stream_id: stream_id.to_owned(),
            call_id: call_id.to_owned(),
            sequence: 0,
            chunk: 0,
            sent_bytes: 0,
        }
    }

    /// The carrier.
    pub fn carrier(&self) -> Carrier {
        self.carrier
    }

    /// The stream's audio format.
    pub fn format(&self) -> WireFormat {
        self.format
    }

    fn next_sequence(&mut self) -> u64 {
        self.sequence += 1;
        self.sequence
    }

    fn elapsed_ms(&self) -> u64 {
        self.sent_bytes / self.format.bytes_per_ms().max(1) as u64
    }

    /// The messages that open the stream: the greeting (where the carrier
    /// sends one) and the start, carrying `parameters`, `from` and `to`.
    pub fn opening(
        &mut self,
        parameters: &Map<String, Value>,
        from: &str,
        to: &str,
    ) -> Vec<Outbound> {
        match self.carrier {
            Carrier::Twilio => self.twilio_opening(parameters),
            Carrier::Telnyx => self.telnyx_opening(parameters, from, to),
            Carrier::Plivo => vec![self.plivo_start(parameters)],
            Carrier::Vonage => vec![self.vonage_connected(parameters, from, to)],
            Carrier::Exotel => self.exotel_opening(parameters, from, to),
        }
    }

    fn twilio_opening(&mut self, parameters: &Map<String, Value>) -> Vec<Outbound> {
        let sequence = self.next_sequence();
        vec![
            json_text(&json!({"event": "connected", "protocol": "Call", "version": "1.0.0"})),
            json_text(&json!({
                "event": "start",
                "sequenceNumber": sequence.to_string(),
                "start": {
                    "accountSid": "AC00000000000000000000000000000000",
                    "streamSid": self.stream_id,
                    "callSid": self.call_id,
                    "tracks": ["inbound"],
                    "customParameters": parameters,
                    "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                },
                "streamSid": self.stream_id,
            })),
        ]
    }

    fn telnyx_opening(
        &mut self,
        parameters: &Map<String, Value>,
        from: &str,
        to: &str,
    ) -> Vec<Outbound> {
        let encoding = match self.format.codec {
            AudioCodec::Alaw => "PCMA",
            _ => "PCMU",
        };
        let sequence = self.next_sequence();
        vec![
            json_text(&json!({"event": "connected", "version": "1.0.0"})),
            json_text(&json!({
                "event": "start",
                "sequence_number": sequence.to_string(),
                "stream_id": self.stream_id,
                "start": {
                    "user_id": "00000000-0000-0000-0000-000000000000",
                    "call_control_id": self.call_id,
                    "from": from,
                    "to": to,
                    "custom_parameters": parameters,
                    "media_format": {"encoding": encoding, "sample_rate": 8000, "channels": 1},
                },
            })),
        ]
    }

    fn plivo_start(&mut self, parameters: &Map<String, Value>) -> Outbound {
        let encoding = match self.format.codec {
            AudioCodec::Pcm16 => "audio/x-l16",
            _ => "audio/x-mulaw",
        };
        let headers = parameters
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(";");
        let sequence = self.next_sequence();
        json_text(&json!({
            "event": "start",
            "sequenceNumber": sequence,
            "start": {
                "callId": self.call_id,
                "streamId": self.stream_id,
                "accountId": "MA0000000000000000000",
                "tracks": ["inbound"],
                "mediaFormat": {"encoding": encoding, "sampleRate": self.format.sample_rate_hz},
            },
            "extra_headers": headers,
        }))
    }

    fn vonage_connected(
        &mut self,
        parameters: &Map<String, Value>,
        from: &str,
        to: &str,
    ) -> Outbound {
        let mut obj = parameters.clone();
        obj.insert("event".into(), "websocket:connected".into());
        obj.insert(
            "content-type".into(),
            format!("audio/l16;rate={}", self.format.sample_rate_hz).into(),
        );
        obj.insert(
            super::super::vonage::CALL_UUID_HEADER.into(),
            self.call_id.clone().into(),
        );
        obj.insert("from".into(), from.into());
        obj.insert("to".into(), to.into());
        json_text(&Value::Object(obj))
    }

    fn exotel_opening(
        &mut self,
        parameters: &Map<String, Value>,
        from: &str,
        to: &str,
    ) -> Vec<Outbound> {
        let sequence = self.next_sequence();
        vec![
            json_text(&json!({"event": "connected"})),
            json_text(&json!({
                "event": "start",
                "sequence_number": sequence.to_string(),
                "stream_sid": self.stream_id,
                "start": {
                    "stream_sid": self.stream_id,
                    "call_sid": self.call_id,
                    "account_sid": "AC0000",
                    "from": from,
                    "to": to,
                    "custom_parameters": parameters,
                    "media_format": {
                        "encoding": "audio/x-raw",
                        "sample_rate": self.format.sample_rate_hz.to_string(),
                        "bit_rate": "16",
                    },
                },
            })),
        ]
    }

    /// A message carrying `audio` (caller audio in the stream's format).
    pub fn media(&mut self, audio: &[u8]) -> Outbound {
        let sequence = self.next_sequence();
        self.chunk += 1;
        let timestamp = self.elapsed_ms();
        self.sent_bytes += audio.len() as u64;
        let payload = base64_of(audio);
        match self.carrier {
            Carrier::Twilio => json_text(&json!({
                "event": "media",
                "sequenceNumber": sequence.to_string(),
                "media": {"track": "inbound", "chunk": self.chunk.to_string(),
                          "timestamp": timestamp.to_string(), "payload": payload},
                "streamSid": self.stream_id,
            })),
            Carrier::Telnyx => json_text(&json!({
                "event": "media",
                "sequence_number": sequence.to_string(),
                "media": {"track": "inbound", "chunk": self.chunk.to_string(),
                          "timestamp": timestamp.to_string(), "payload": payload},
                "stream_id": self.stream_id,
            })),
            Carrier::Plivo => json_text(&json!({
                "event": "media",
                "sequenceNumber": sequence,
                "streamId": self.stream_id,
                "media": {"track": "inbound", "timestamp": timestamp.to_string(),
                          "chunk": self.chunk, "payload": payload},
            })),
            Carrier::Vonage => Outbound::Binary(audio.to_vec()),
            Carrier::Exotel => json_text(&json!({
                "event": "media",
                "sequence_number": sequence.to_string(),
                "stream_sid": self.stream_id,
                "media": {"chunk": self.chunk.to_string(), "timestamp": timestamp.to_string(),
                          "payload": payload},
            })),
        }
    }

    /// A key press.
    pub fn dtmf(&mut self, digit: char) -> Outbound {
        let sequence = self.next_sequence();
        let digit = digit.to_string();
        match self.carrier {
            Carrier::Twilio => json_text(&json!({
                "event": "dtmf", "streamSid": self.stream_id, "sequenceNumber": sequence.to_string(),
                "dtmf": {"track": "inbound_track", "digit": digit},
            })),
            Carrier::Telnyx => json_text(&json!({
                "event": "dtmf", "stream_id": self.stream_id, "sequence_number": sequence.to_string(),
                "dtmf": {"digit": digit},
            })),
            Carrier::Plivo => json_text(&json!({
                "event": "dtmf", "sequenceNumber": sequence, "streamId": self.stream_id,
                "dtmf": {"track": "inbound", "digit": digit, "timestamp": self.elapsed_ms().to_string()},
            })),
            Carrier::Vonage => {
                json_text(&json!({"event": "websocket:dtmf", "digit": digit, "duration": 260}))
            }
            Carrier::Exotel => json_text(&json!({
                "event": "dtmf", "sequence_number": sequence.to_string(), "stream_sid": self.stream_id,
                "dtmf": {"digit": digit, "duration": "100"},
            })),
        }
    }

    /// The echo of the server's mark `name`.
    pub fn mark_echo(&mut self, name: &str) -> Outbound {
        let sequence = self.next_sequence();
        match self.carrier {
            Carrier::Twilio => json_text(&json!({
                "event": "mark", "streamSid": self.stream_id, "sequenceNumber": sequence.to_string(),
                "mark": {"name": name},
            })),
            Carrier::Telnyx => json_text(&json!({
                "event": "mark", "sequence_number": sequence.to_string(), "stream_id": self.stream_id,
                "mark": {"name": name},
            })),
            Carrier::Plivo => json_text(
                &json!({"event": "playedStream", "streamId": self.stream_id, "name": name}),
            ),
            Carrier::Vonage => {
                json_text(&json!({"event": "websocket:notify", "payload": {"name": name}}))
            }
            Carrier::Exotel => json_text(&json!({
                "event": "mark", "sequence_number": sequence.to_string(), "stream_sid": self.stream_id,
                "mark": {"name": name},
            })),
        }
    }

    /// The confirmation of a clear, for carriers that send one.
    pub fn cleared(&self) -> Option<Outbound> {
        match self.carrier {
            Carrier::Plivo => Some(json_text(
                &json!({"event": "clearedAudio", "streamId": self.stream_id}),
            )),
            Carrier::Vonage => Some(json_text(&json!({"event": "websocket:cleared"}))),
            _ => None,
        }
    }

    /// The end of the stream, for carriers that announce it (the others
    /// close the socket).
    pub fn stop(&mut self) -> Option<Outbound> {
        let sequence = self.next_sequence();
        match self.carrier {
            Carrier::Twilio => Some(json_text(&json!({
                "event": "stop", "sequenceNumber": sequence.to_string(), "streamSid": self.stream_id,
                "stop": {"accountSid": "AC00000000000000000000000000000000", "callSid": self.call_id},
            }))),
            Carrier::Telnyx => Some(json_text(&json!({
                "event": "stop", "sequence_number": sequence.to_string(), "stream_id": self.stream_id,
                "stop": {"user_id": "00000000-0000-0000-0000-000000000000", "call_control_id": self.call_id},
            }))),
            Carrier::Exotel => Some(json_text(&json!({
                "event": "stop", "sequence_number": sequence.to_string(), "stream_sid": self.stream_id,
                "stop": {"call_sid": self.call_id, "account_sid": "AC0000", "reason": "callended"},
            }))),
            Carrier::Plivo | Carrier::Vonage => None,
        }
    }

    /// Reads a message the server sent.
    pub fn parse_command(&self, msg: &Outbound) -> Result<ServerCommand, StreamError> {
        let text = match msg {
            Outbound::Binary(audio) if self.carrier == Carrier::Vonage => {
                return Ok(ServerCommand::Play(audio.clone()));
            }
            Outbound::Binary(b) => return Err(StreamError::BinaryMessage { len_bytes: b.len() }),
            Outbound::Text(t) => t,
        };
        let probe = MediaSession::new(super::StreamLimits::default());
        let field = if self.carrier == Carrier::Vonage {
            "action"
        } else {
            "event"
        };
        let (obj, event) = parse_message(&probe, text, field)?;
        match (self.carrier, event.as_str()) {
            (_, "media" | "playAudio") => {
                let err = |e| StreamError::field("media", e);
                let media = fields::object(&obj, "media").map_err(err)?;
                decode_audio(fields::string(media, "payload").map_err(err)?)
            }
            (Carrier::Plivo, "checkpoint") => Ok(ServerCommand::Mark(string_at(
                &obj,
                "checkpoint",
                &["name"],
            )?)),
            (Carrier::Vonage, "notify") => Ok(ServerCommand::Mark(string_at(
                &obj,
                "notify",
                &["payload", "name"],
            )?)),
            (_, "mark") => Ok(ServerCommand::Mark(string_at(
                &obj,
                "mark",
                &["mark", "name"],
            )?)),
            (_, "clear" | "clearAudio") => Ok(ServerCommand::Clear),
            (_, other) => Err(StreamError::UnknownEvent {
                event: super::truncate(other),
            }),
        }
    }
}

fn decode_audio(b64: &str) -> Result<ServerCommand, StreamError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map(ServerCommand::Play)
        .map_err(|e| StreamError::InvalidBase64 {
            detail: e.to_string(),
        })
}

/// The string at `path` (object keys) inside `obj`.
fn string_at(
    obj: &fields::Object,
    event: &'static str,
    path: &[&'static str],
) -> Result<String, StreamError> {
    let (last, parents) = path.split_last().ok_or(StreamError::MissingEvent)?;
    let mut cur = obj;
    for key in parents {
        cur = fields::object(cur, key).map_err(|e| StreamError::field(event, e))?;
    }
    fields::string(cur, last)
        .map(str::to_owned)
        .map_err(|e| StreamError::field(event, e))
}
