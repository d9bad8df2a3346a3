//! Every kind of bad Twilio input gets its own typed error.

use brisvox_transport::TwilioDecoder;
use brisvox_transport::twilio::{TwilioError, TwilioEvent};

const START: &str = r#"{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1","tracks":["inbound"],"customParameters":{},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}"#;

fn started() -> TwilioDecoder {
    let mut dec = TwilioDecoder::default();
    assert!(matches!(dec.decode_text(START), Ok(TwilioEvent::Start(_))));
    dec
}

fn media(payload: &str) -> String {
    format!(
        r#"{{"event":"media","streamSid":"MZ1","media":{{"track":"inbound","chunk":"1","timestamp":"5","payload":"{payload}"}}}}"#
    )
}

#[test]
fn framing_errors() {
    let mut dec = TwilioDecoder::new(100, 8000);
    assert!(matches!(
        dec.decode_text("nope"),
        Err(TwilioError::MalformedJson { .. })
    ));
    assert_eq!(dec.decode_text("{}"), Err(TwilioError::MissingEvent));
    assert_eq!(
        dec.decode_binary(&[1, 2]),
        Err(TwilioError::BinaryMessage { len_bytes: 2 })
    );
    let long = format!(r#"{{"event":"{}"}}"#, "x".repeat(100));
    assert_eq!(
        dec.decode_text(&long),
        Err(TwilioError::MessageTooLarge {
            len_bytes: long.len(),
            limit_bytes: 100
        })
    );
    let err = dec.decode_text(r#"{"event":"hangup"}"#).unwrap_err();
    assert_eq!(
        err,
        TwilioError::UnknownEvent {
            event: "hangup".into()
        }
    );
    assert!(!err.is_fatal());
}

#[test]
fn start_errors() {
    let bad_format = START.replace("audio/x-mulaw", "audio/l16");
    assert_eq!(
        TwilioDecoder::default().decode_text(&bad_format),
        Err(TwilioError::UnsupportedMediaFormat {
            encoding: "audio/l16".into(),
            sample_rate_hz: 8000,
            channels: 1
        })
    );
    let no_call = START.replace(r#""callSid":"CA1","#, "");
    assert_eq!(
        TwilioDecoder::default().decode_text(&no_call),
        Err(TwilioError::MissingField {
            event: "start",
            field: "callSid"
        })
    );
    let bad_tracks = START.replace(r#"["inbound"]"#, "[1]");
    assert!(matches!(
        TwilioDecoder::default().decode_text(&bad_tracks),
        Err(TwilioError::InvalidField {
            field: "tracks",
            ..
        })
    ));
    assert_eq!(started().decode_text(START), Err(TwilioError::SecondStart));
}

#[test]
fn media_errors() {
    assert_eq!(
        TwilioDecoder::default().decode_text(&media("AAAA")),
        Err(TwilioError::BeforeStart { event: "media" })
    );
    assert!(matches!(
        started().decode_text(&media("!!!")),
        Err(TwilioError::InvalidBase64 { .. })
    ));
    let mut small = TwilioDecoder::new(64 * 1024, 160);
    small.decode_text(START).unwrap();
    assert!(matches!(
        small.decode_text(&media(&"A".repeat(400))),
        Err(TwilioError::PayloadTooLarge {
            limit_bytes: 160,
            ..
        })
    ));
    let other = media("AAAA").replace("MZ1", "MZ2");
    let err = started().decode_text(&other).unwrap_err();
    assert_eq!(
        err,
        TwilioError::StreamIdMismatch {
            expected: "MZ1".into(),
            got: "MZ2".into()
        }
    );
    assert!(!err.is_fatal());
    let bad_chunk = media("AAAA").replace(r#""chunk":"1""#, r#""chunk":"one""#);
    assert!(matches!(
        started().decode_text(&bad_chunk),
        Err(TwilioError::InvalidField {
            event: "media",
            field: "chunk",
            ..
        })
    ));
}

#[test]
fn dtmf_mark_and_stop_errors() {
    let mut dec = started();
    assert_eq!(
        dec.decode_text(r#"{"event":"dtmf","dtmf":{"track":"inbound_track","digit":"12"}}"#),
        Err(TwilioError::InvalidDigit { digit: "12".into() })
    );
    assert_eq!(
        dec.decode_text(r#"{"event":"mark","mark":{}}"#),
        Err(TwilioError::MissingField {
            event: "mark",
            field: "name"
        })
    );
    dec.decode_text(r#"{"event":"stop","stop":{"accountSid":"AC1","callSid":"CA1"}}"#)
        .unwrap();
    assert_eq!(
        dec.decode_text(&media("AAAA")),
        Err(TwilioError::AfterStop { event: "media" })
    );
}
