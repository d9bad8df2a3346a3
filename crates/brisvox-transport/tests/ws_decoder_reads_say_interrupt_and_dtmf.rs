//! `say` carries an optional `interrupt` (false unless given) and `dtmf` one
//! key; a bad value of either is a typed `invalid_field`, and both need a
//! started call.

use brisvox_transport::brisvox_ws::ClientControl;
use brisvox_transport::{ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError};

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

#[test]
fn say_takes_an_optional_interrupt() {
    let mut dec = started();
    let say = |text: &str, interrupt| ClientEvent::Say {
        text: text.into(),
        interrupt,
    };
    assert_eq!(
        text(&mut dec, r#"{"type":"say","text":"a"}"#),
        Ok(say("a", false))
    );
    assert_eq!(
        text(&mut dec, r#"{"type":"say","text":"b","interrupt":true}"#),
        Ok(say("b", true))
    );
    let round_trip = ClientControl::Say {
        text: "c".into(),
        interrupt: true,
    }
    .to_json();
    assert_eq!(text(&mut dec, &round_trip), Ok(say("c", true)));
    let err = text(&mut dec, r#"{"type":"say","text":"d","interrupt":"yes"}"#).unwrap_err();
    assert_eq!(
        (err.code(), err.is_fatal()),
        ("invalid_field", true),
        "{err}"
    );
}

#[test]
fn dtmf_takes_one_key() {
    let mut dec = ClientMessageDecoder::default();
    assert_eq!(
        text(&mut dec, r#"{"type":"dtmf","digit":"5"}"#),
        Err(DecodeError::ControlBeforeStart { kind: "dtmf" })
    );
    let mut dec = started();
    for (digit, want) in [("5", '5'), ("#", '#'), ("b", 'B')] {
        let msg = ClientControl::Dtmf {
            digit: digit.into(),
        }
        .to_json();
        assert_eq!(text(&mut dec, &msg), Ok(ClientEvent::Dtmf { digit: want }));
    }
    for bad in [r#""55""#, r#""x""#, r#""""#, "5"] {
        let msg = format!(r#"{{"type":"dtmf","digit":{bad}}}"#);
        let err = text(&mut started(), &msg).unwrap_err();
        assert_eq!(err.code(), "invalid_field", "{bad}: {err}");
    }
    let err = text(&mut started(), r#"{"type":"dtmf"}"#).unwrap_err();
    assert_eq!(err.code(), "missing_field");
}
