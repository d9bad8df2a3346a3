//! The decoder of a transport whose call starts in its signalling and whose
//! audio has its own track (WebRTC's data channel): `say`, `dtmf` and `end`
//! are decoded as on `/call` with no `start` first; `start` and binary
//! messages are refused with their codes.

use brisvox_transport::{
    ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError, DecoderLimits,
};

fn text(dec: &mut ClientMessageDecoder, t: &str) -> Result<ClientEvent, DecodeError> {
    dec.decode(ClientMessage::Text(t))
}

#[test]
fn controls_need_no_start() {
    let mut dec = ClientMessageDecoder::controls_only(DecoderLimits::default());
    assert_eq!(
        text(&mut dec, r#"{"type":"say","text":"hi"}"#),
        Ok(ClientEvent::Say {
            text: "hi".into(),
            interrupt: false
        })
    );
    assert_eq!(
        text(&mut dec, r#"{"type":"dtmf","digit":"5"}"#),
        Ok(ClientEvent::Dtmf { digit: '5' })
    );
    assert!(dec.start_info().is_none());
    assert_eq!(
        text(&mut dec, r#"{"type":"end"}"#),
        Ok(ClientEvent::End { reason: None })
    );
    assert_eq!(
        text(&mut dec, r#"{"type":"say","text":"late"}"#),
        Err(DecodeError::AfterEnd)
    );
}

#[test]
fn start_and_binary_are_refused() {
    let mut dec = ClientMessageDecoder::controls_only(DecoderLimits::default());
    let start = r#"{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"c1"}"#;
    let err = text(&mut dec, start).unwrap_err();
    assert_eq!(err, DecodeError::SecondStart);
    let err = dec.decode(ClientMessage::Binary(&[0; 640])).unwrap_err();
    assert_eq!(err, DecodeError::AudioNotAccepted);
    assert_eq!(err.code(), "audio_not_accepted");
    assert!(err.is_fatal());
    // Not JSON: malformed, not "text where audio belongs" (there is no audio here).
    let err = text(&mut dec, "hello").unwrap_err();
    assert!(matches!(err, DecodeError::MalformedJson { .. }), "{err:?}");
}
