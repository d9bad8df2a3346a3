//! Bad input from a carrier gets the typed error that names the problem.

use brisvox_transport::carrier::StreamLimits;
use brisvox_transport::{
    ExotelStream, MediaStream, PlivoStream, StreamError, TelnyxStream, VonageStream,
};

const TELNYX_START: &str = r#"{"event":"start","stream_id":"S1","start":{"call_control_id":"v3:c","media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}}}"#;

#[test]
fn order_and_ids_are_checked() {
    let mut s = TelnyxStream::default();
    let media = r#"{"event":"media","stream_id":"S1","media":{"payload":"AAAA"}}"#;
    assert_eq!(
        s.decode_text(media),
        Err(StreamError::BeforeStart { event: "media" })
    );
    s.decode_text(TELNYX_START).unwrap();
    assert_eq!(s.decode_text(TELNYX_START), Err(StreamError::SecondStart));
    let foreign = media.replace("S1", "S2");
    let e = s.decode_text(&foreign).unwrap_err();
    assert!(matches!(e, StreamError::StreamIdMismatch { .. }));
    assert!(!e.is_fatal());
    s.decode_text(r#"{"event":"stop","stream_id":"S1"}"#)
        .unwrap();
    assert_eq!(
        s.decode_text(media),
        Err(StreamError::AfterStop { event: "media" })
    );
}

#[test]
fn malformed_messages() {
    let mut s = PlivoStream::default();
    assert!(matches!(
        s.decode_text("not json"),
        Err(StreamError::MalformedJson { .. })
    ));
    assert!(matches!(
        s.decode_text("[1]"),
        Err(StreamError::MalformedJson { .. })
    ));
    assert_eq!(s.decode_text("{}"), Err(StreamError::MissingEvent));
    assert_eq!(
        s.decode_text(r#"{"event":"start","start":{"streamId":"s"}}"#),
        Err(StreamError::MissingField {
            event: "start",
            field: "mediaFormat"
        })
    );
    assert_eq!(
        s.decode_binary(&[1, 2]),
        Err(StreamError::BinaryMessage { len_bytes: 2 })
    );
    let unknown = s.decode_text(r#"{"event":"someday"}"#).unwrap_err();
    assert!(!unknown.is_fatal());
}

#[test]
fn bad_digits_and_formats() {
    let mut s = ExotelStream::default();
    let start = r#"{"event":"start","stream_sid":"M","start":{"call_sid":"C","media_format":{"encoding":"audio/x-raw","sample_rate":"8000","bit_rate":"8"}}}"#;
    assert!(matches!(
        s.decode_text(start),
        Err(StreamError::UnsupportedMediaFormat { .. })
    ));
    s.decode_text(&start.replace(r#""bit_rate":"8""#, r#""bit_rate":"16""#))
        .unwrap();
    assert_eq!(
        s.decode_text(r#"{"event":"dtmf","stream_sid":"M","dtmf":{"digit":"55"}}"#),
        Err(StreamError::InvalidDigit { digit: "55".into() })
    );
    assert_eq!(
        s.decode_text(r#"{"event":"mark","stream_sid":"M","mark":{"name":7}}"#),
        Err(StreamError::InvalidField {
            event: "mark",
            field: "name",
            expected: "a string"
        })
    );
}

#[test]
fn size_limits_hold() {
    let limits = StreamLimits {
        max_message_bytes: 200,
        max_payload_bytes: 320,
    };
    let mut s = VonageStream::new(limits);
    let long = format!(r#"{{"event":"x","pad":"{}"}}"#, "a".repeat(300));
    assert!(matches!(
        s.decode_text(&long),
        Err(StreamError::MessageTooLarge {
            limit_bytes: 200,
            ..
        })
    ));
    s.decode_text(r#"{"event":"websocket:connected","content-type":"audio/l16;rate=8000"}"#)
        .unwrap();
    let e = s.decode_binary(&[0; 199]).unwrap();
    assert!(matches!(e, brisvox_transport::StreamEvent::Media { .. }));
    let e = s.decode_binary(&[0; 400]).unwrap_err();
    assert_eq!(e.close_code(), 1009);
    assert_eq!(
        VonageStream::default().decode_text(
            r#"{"event":"websocket:connected","content-type":"audio/pcmu;rate=8000"}"#
        ),
        Err(StreamError::UnsupportedMediaFormat {
            encoding: "audio/pcmu;rate=8000".into(),
            sample_rate_hz: 0,
            channels: 1
        })
    );
}
