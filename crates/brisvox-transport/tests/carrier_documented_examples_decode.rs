//! Each carrier's documented example messages, verbatim from its reference
//! page, decode to what the page says they mean; and what the encoders send
//! equals the documented examples of the messages a server sends.
//!
//! Sources (stored copies read on 2026-12-01):
//! - Telnyx: <https://developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket>
//! - Plivo: <https://www.plivo.com/docs/voice-agents/audio-streaming/concepts/audio-streaming-reference>
//!   and <https://www.plivo.com/docs/voice/xml/the-stream-element/checkpoint-event/>
//! - Exotel: <https://developer.exotel.com/docs/agentstream/websocket-protocol>
//!
//! Where a page elides an audio payload (`"...` or `<base64-encoded PCM>`),
//! the verbatim message is refused as invalid base64 and the same message
//! with a real payload is decoded.

use brisvox_transport::{
    AudioCodec, ExotelStream, MediaStream, Outbound, PlivoStream, StreamError, StreamEvent,
    TelnyxStream, WireFormat,
};
use serde_json::Value;

const TELNYX_CONNECTED: &str = r#"{
"event": "connected",
"version": "1.0.0"
}"#;

const TELNYX_START: &str = r#"{
"event": "start",
"sequence_number": "1",
"stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC",
"start": {
"user_id": "3E6F995F-85F7-4705-9741-53B116D28237",
"call_control_id": "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ",
"call_session_id": "ff55a038-6f5d-11ef-9692-02420aeffb1f",
"from": "+13122010094",
"to": "+13122123456",
"tags": [
"TAG1",
"TAG2"
],
"client_state": "aGF2ZSBhIG5pY2UgZGF5ID1d",
"custom_parameters": {
"customer_id": "customer_123"
},
"media_format": {
"encoding": "PCMU",
"sample_rate": 8000,
"channels": 1
}
}
}"#;

#[test]
fn telnyx_connected_and_start() {
    let mut s = TelnyxStream::default();
    assert_eq!(s.decode_text(TELNYX_CONNECTED), Ok(StreamEvent::Connected));
    let StreamEvent::Start(start) = s.decode_text(TELNYX_START).unwrap() else {
        panic!("not a start")
    };
    assert_eq!(start.stream_id, "32DE0DEA-53CB-4B21-89A4-9E1819C043BC");
    assert_eq!(
        start.call_id,
        "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ"
    );
    assert_eq!(start.from.as_deref(), Some("+13122010094"));
    assert_eq!(start.to.as_deref(), Some("+13122123456"));
    assert_eq!(start.parameters["customer_id"], "customer_123");
    assert_eq!(start.format, WireFormat::MULAW_8K);
}

const PLIVO_START: &str = r#"{
  "event": "start",
  "sequenceNumber": 1,
  "start": {
    "callId": "12345678-1234-1234-1234-123456789abc",
    "streamId": "87654321-4321-4321-4321-cba987654321",
    "accountId": "MAXXXXXXXXXXXXXXXXXX",
    "tracks": ["inbound"],
    "mediaFormat": {
      "encoding": "audio/x-mulaw",
      "sampleRate": 8000
    }
  },
  "extra_headers": "userId=12345;sessionId=abc-xyz"
}"#;

const PLIVO_MEDIA: &str = r#"{
  "event": "media",
  "sequenceNumber": 42,
  "streamId": "87654321-4321-4321-4321-cba987654321",
  "media": {
    "track": "inbound",
    "timestamp": "1705312200000",
    "chunk": 41,
    "payload": "//uQxAAAAAANIAAAAAExBTUUzLjEwMFVV..."
  },
  "extra_headers": "userId=12345;sessionId=abc-xyz"
}"#;

#[test]
fn plivo_start_and_media() {
    let mut s = PlivoStream::default();
    let StreamEvent::Start(start) = s.decode_text(PLIVO_START).unwrap() else {
        panic!("not a start")
    };
    assert_eq!(start.call_id, "12345678-1234-1234-1234-123456789abc");
    assert_eq!(start.stream_id, "87654321-4321-4321-4321-cba987654321");
    assert_eq!(start.parameters["userId"], "12345");
    assert_eq!(start.parameters["sessionId"], "abc-xyz");
    assert_eq!(start.format, WireFormat::MULAW_8K);
    assert!(matches!(
        s.decode_text(PLIVO_MEDIA),
        Err(StreamError::InvalidBase64 { .. })
    ));
    // The elided payload cut to whole base64 quads (32 characters, 24 bytes).
    let whole = PLIVO_MEDIA.replace("MFVV...", "MFV");
    assert_eq!(
        s.decode_text(&whole),
        Ok(StreamEvent::Media {
            payload_bytes: 24,
            frames_ready: 0
        })
    );
}

const PLIVO_CHECKPOINT: &str = r#"{
  "event": "checkpoint",
  "streamId": "20170ada-f610-433b-8758-c02a2aab3662",
  "name": "customer greeting audio"
}"#;

const PLIVO_PLAYED: &str = r#"{
  "event": "playedStream",
  "streamId": "20170ada-f610-433b-8758-c02a2aab3662",
  "name": "customer greeting audio"
}"#;

#[test]
fn plivo_checkpoint_and_its_echo() {
    let mut s = PlivoStream::default();
    let start = PLIVO_START.replace(
        "87654321-4321-4321-4321-cba987654321",
        "20170ada-f610-433b-8758-c02a2aab3662",
    );
    s.decode_text(&start).unwrap();
    let Outbound::Text(sent) = s.encoder().unwrap().mark("customer greeting audio") else {
        panic!("no checkpoint")
    };
    let sent: Value = serde_json::from_str(&sent).unwrap();
    let documented: Value = serde_json::from_str(PLIVO_CHECKPOINT).unwrap();
    assert_eq!(sent, documented);
    assert_eq!(
        s.decode_text(PLIVO_PLAYED),
        Ok(StreamEvent::Mark {
            name: "customer greeting audio".into()
        })
    );
}

const EXOTEL_CONNECTED: &str = r#"{ "event": "connected" }"#;

const EXOTEL_START: &str = r#"{
"event": "start",
"sequence_number": "1",
"stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
"start": {
"stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
"call_sid": "CAxxxxxxxxxxxxxxxxxxxxxxxx",
"account_sid": "ACxxxxxxxxxxxxxxxxxxxxxxxx",
"from": "+919876543210",
"to": "+918047491899",
"custom_parameters": { "key1": "value1" },
"media_format": {
"encoding": "audio/x-raw",
"sample_rate": "8000",
"bit_rate": "16"
}
}
}"#;

const EXOTEL_MEDIA: &str = r#"{
"event": "media",
"sequence_number": "3",
"stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
"media": {
"chunk": "2",
"timestamp": "200",
"payload": "<base64-encoded PCM>"
}
}"#;

const EXOTEL_DTMF: &str = r#"{
"event": "dtmf",
"sequence_number": "7",
"stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
"dtmf": { "digit": "5", "duration": "100" }
}"#;

#[test]
fn exotel_connected_start_media_and_dtmf() {
    let mut s = ExotelStream::default();
    assert_eq!(s.decode_text(EXOTEL_CONNECTED), Ok(StreamEvent::Connected));
    let StreamEvent::Start(start) = s.decode_text(EXOTEL_START).unwrap() else {
        panic!("not a start")
    };
    assert_eq!(start.call_id, "CAxxxxxxxxxxxxxxxxxxxxxxxx");
    assert_eq!(start.from.as_deref(), Some("+919876543210"));
    assert_eq!(start.parameters["key1"], "value1");
    assert_eq!(
        start.format,
        WireFormat {
            codec: AudioCodec::Pcm16,
            sample_rate_hz: 8000
        }
    );
    assert!(matches!(
        s.decode_text(EXOTEL_MEDIA),
        Err(StreamError::InvalidBase64 { .. })
    ));
    // 100 ms of PCM16 at 8 kHz, the chunk size Exotel sends.
    let payload = brisvox_transport_b64(&[0u8; 1600]);
    let real = EXOTEL_MEDIA.replace("<base64-encoded PCM>", &payload);
    assert_eq!(
        s.decode_text(&real),
        Ok(StreamEvent::Media {
            payload_bytes: 1600,
            frames_ready: 5
        })
    );
    assert_eq!(
        s.decode_text(EXOTEL_DTMF),
        Ok(StreamEvent::Dtmf { digit: '5' })
    );
}

fn brisvox_transport_b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
