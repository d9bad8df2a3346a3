//! Property test: arbitrary text never panics the Twilio decoder, and any
//! payload bytes come back exactly from a media message.

use base64::Engine as _;
use brisvox_transport::TwilioDecoder;
use brisvox_transport::twilio::TwilioEvent;
use proptest::prelude::*;

const START: &str = r#"{"event":"start","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(msgs in proptest::collection::vec(prop_oneof![
        any::<String>(),
        "\\{\"event\":\"(connected|start|media|mark|dtmf|stop)\"[ -~]{0,60}\\}",
        Just(START.to_owned()),
    ], 0..20)) {
        let mut dec = TwilioDecoder::default();
        for m in &msgs {
            if let Err(e) = dec.decode_text(m) {
                prop_assert!(!e.to_string().is_empty());
            }
            while dec.pop_frame().is_some() {}
        }
    }

    #[test]
    fn media_payload_round_trips(payload in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut dec = TwilioDecoder::default();
        dec.decode_text(START).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&payload);
        let msg = format!(r#"{{"event":"media","media":{{"track":"inbound","chunk":1,"timestamp":"0","payload":"{b64}"}}}}"#);
        let TwilioEvent::Media(chunk) = dec.decode_text(&msg).unwrap() else { panic!("not media") };
        prop_assert_eq!(chunk.payload_bytes, payload.len());
        prop_assert_eq!(dec.last_payload(), &payload[..]);
        prop_assert_eq!(chunk.frames_ready, payload.len() / 160);
    }
}
