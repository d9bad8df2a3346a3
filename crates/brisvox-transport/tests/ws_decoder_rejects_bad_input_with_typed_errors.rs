//! Every kind of bad client input gets its own typed error, code and close code.

use brisvox_transport::brisvox_ws::close_code;
use brisvox_transport::{
    ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError, DecoderLimits,
};

const START: &str =
    r#"{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"c1"}"#;

fn text(dec: &mut ClientMessageDecoder, t: &str) -> Result<ClientEvent, DecodeError> {
    dec.decode(ClientMessage::Text(t))
}

fn started() -> ClientMessageDecoder {
    let mut dec = ClientMessageDecoder::default();
    assert!(matches!(text(&mut dec, START), Ok(ClientEvent::Start(_))));
    dec
}

fn start_with(field: &str, value: &str) -> String {
    let mut obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(START).unwrap();
    obj.insert(field.into(), serde_json::from_str(value).unwrap());
    serde_json::Value::Object(obj).to_string()
}

#[test]
fn malformed_json() {
    let err = text(&mut ClientMessageDecoder::default(), "{\"type\":").unwrap_err();
    assert!(matches!(err, DecodeError::MalformedJson { .. }), "{err:?}");
    assert_eq!(err.code(), "malformed_json");
    assert_eq!(err.close_code(), close_code::PROTOCOL_ERROR);
    let err = text(&mut ClientMessageDecoder::default(), "[1,2]").unwrap_err();
    assert!(matches!(err, DecodeError::MalformedJson { ref detail } if detail.contains("array")));
}

#[test]
fn missing_and_unknown_type() {
    let mut dec = ClientMessageDecoder::default();
    assert_eq!(text(&mut dec, "{}").unwrap_err(), DecodeError::MissingType);
    let err = text(&mut dec, r#"{"type":"dance"}"#).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnknownType {
            kind: "dance".into()
        }
    );
    assert!(!err.is_fatal());
    let err = text(&mut dec, r#"{"type":7}"#).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidField { field: "type", .. }
    ));
}

#[test]
fn missing_and_invalid_start_fields() {
    for field in ["protocol_version", "codec", "sample_rate", "call_id"] {
        let mut obj: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(START).unwrap();
        obj.remove(field);
        let err = text(
            &mut ClientMessageDecoder::default(),
            &serde_json::Value::Object(obj).to_string(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            DecodeError::MissingField {
                message: "start",
                field
            }
        );
        assert_eq!(err.code(), "missing_field");
    }
    let cases = [
        ("sample_rate", r#""16000""#),
        ("call_id", "42"),
        ("call_id", r#""""#),
        ("metadata", "[]"),
        ("protocol_version", "-1"),
        ("frame_ms", "30"),
        ("frame_ms", "0"),
        ("frame_ms", "60"),
        ("frame_ms", "20.5"),
        ("frame_ms", r#""20""#),
        ("frame_ms", "4294967316"),
    ];
    for (field, value) in cases {
        let err = text(
            &mut ClientMessageDecoder::default(),
            &start_with(field, value),
        )
        .unwrap_err();
        assert!(
            matches!(err, DecodeError::InvalidField { message: "start", field: f, .. } if f == field),
            "{field}={value}: {err:?}"
        );
    }
}

#[test]
fn wrong_codec_rate_and_version() {
    let err = text(
        &mut ClientMessageDecoder::default(),
        &start_with("codec", r#""opus""#),
    )
    .unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnsupportedCodec {
            codec: "opus".into()
        }
    );
    assert_eq!(err.close_code(), close_code::UNSUPPORTED_DATA);
    for rate in [0, 11025, 22050, 44100, 96000, 4_294_967_296_u64] {
        let err = text(
            &mut ClientMessageDecoder::default(),
            &start_with("sample_rate", &rate.to_string()),
        )
        .unwrap_err();
        assert_eq!(
            err,
            DecodeError::UnsupportedSampleRate {
                sample_rate_hz: rate
            }
        );
    }
    let err = text(
        &mut ClientMessageDecoder::default(),
        &start_with("protocol_version", "2"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnsupportedProtocolVersion {
            version: 2,
            supported: 1
        }
    );
}

#[test]
fn audio_before_start_and_second_start() {
    let mut dec = ClientMessageDecoder::default();
    assert_eq!(
        dec.decode(ClientMessage::Binary(&[0; 640])).unwrap_err(),
        DecodeError::AudioBeforeStart
    );
    assert_eq!(
        text(&mut dec, r#"{"type":"say","text":"hi"}"#).unwrap_err(),
        DecodeError::ControlBeforeStart { kind: "say" }
    );
    let mut dec = started();
    assert_eq!(text(&mut dec, START).unwrap_err(), DecodeError::SecondStart);
}

#[test]
fn oversized_messages() {
    let limits = DecoderLimits {
        max_text_bytes: 200,
        max_binary_bytes: 1000,
        max_pending_audio_bytes: 2000,
    };
    let mut dec = ClientMessageDecoder::new(limits);
    let big = format!(r#"{{"type":"say","text":"{}"}}"#, "a".repeat(300));
    let err = text(&mut dec, &big).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TextTooLarge {
            len_bytes: big.len(),
            limit_bytes: 200
        }
    );
    assert_eq!(err.close_code(), close_code::MESSAGE_TOO_BIG);
    text(&mut dec, START).unwrap();
    let err = dec.decode(ClientMessage::Binary(&[0; 1001])).unwrap_err();
    assert_eq!(
        err,
        DecodeError::BinaryTooLarge {
            len_bytes: 1001,
            limit_bytes: 1000
        }
    );
    assert_eq!(err.code(), "message_too_large");
}

#[test]
fn undrained_audio_hits_the_backlog_bound() {
    let limits = DecoderLimits {
        max_text_bytes: 1000,
        max_binary_bytes: 1000,
        max_pending_audio_bytes: 1500,
    };
    let mut dec = ClientMessageDecoder::new(limits);
    text(&mut dec, START).unwrap();
    dec.decode(ClientMessage::Binary(&[0; 1000])).unwrap();
    let err = dec.decode(ClientMessage::Binary(&[0; 1000])).unwrap_err();
    assert_eq!(
        err,
        DecodeError::AudioBacklog {
            pending_bytes: 1000,
            pushed_bytes: 1000,
            limit_bytes: 1500
        }
    );
}

#[test]
fn text_where_audio_belongs() {
    let mut dec = started();
    let raw = "\u{1}\u{2}garbage-audio";
    let err = text(&mut dec, raw).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TextWhereAudioBelongs {
            len_bytes: raw.len()
        }
    );
    assert_eq!(err.code(), "text_where_audio_belongs");
    assert_eq!(err.close_code(), close_code::UNSUPPORTED_DATA);
    let media = r#"{"type":"audio","payload":"AAAA"}"#;
    assert_eq!(
        text(&mut started(), media).unwrap_err(),
        DecodeError::TextWhereAudioBelongs {
            len_bytes: media.len()
        }
    );
}

#[test]
fn messages_after_end() {
    let mut dec = started();
    assert_eq!(
        text(&mut dec, r#"{"type":"end","reason":"bye"}"#).unwrap(),
        ClientEvent::End {
            reason: Some("bye".into())
        }
    );
    assert_eq!(
        dec.decode(ClientMessage::Binary(&[0; 2])).unwrap_err(),
        DecodeError::AfterEnd
    );
    assert_eq!(text(&mut dec, START).unwrap_err(), DecodeError::AfterEnd);
}

#[test]
fn frame_ms_is_optional_and_names_the_servers_message_size() {
    let info = |t: &str| match text(&mut ClientMessageDecoder::default(), t) {
        Ok(ClientEvent::Start(info)) => info,
        other => panic!("{t}: {other:?}"),
    };
    assert_eq!(info(START).frame_ms, 20);
    assert_eq!(info(&start_with("frame_ms", "null")).frame_ms, 20);
    for ms in [10, 20, 40] {
        assert_eq!(info(&start_with("frame_ms", &ms.to_string())).frame_ms, ms);
    }
    let err = text(
        &mut ClientMessageDecoder::default(),
        &start_with("frame_ms", "30"),
    )
    .unwrap_err();
    assert_eq!(err.code(), "invalid_field");
    assert!(err.is_fatal());
    assert!(err.to_string().contains("10, 20 or 40"), "{err}");
}
