//! A Twilio session in the documented message shapes (fixture) decodes end to
//! end: metadata, every audio byte as 20 ms frames, the key press, the mark echo
//! settling the playout tracker, and stop.

use brisvox_transport::TwilioDecoder;
use brisvox_transport::twilio::{MarkOutcome, TwilioEncoder, TwilioEvent, TwilioPlayout};

#[test]
fn fixture_session() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/twilio_session.json")).unwrap();
    let msgs = doc["messages"].as_array().unwrap();
    let mut dec = TwilioDecoder::default();
    let mut playout = TwilioPlayout::default();
    let (mut frames, mut media, mut digits, mut stopped) = (Vec::new(), 0, String::new(), false);
    let mut sent = Vec::new();
    for m in msgs {
        match dec.decode_text(&m.to_string()).unwrap() {
            TwilioEvent::Connected { protocol, version } => {
                assert_eq!((protocol.as_str(), version.as_str()), ("Call", "1.0.0"));
            }
            TwilioEvent::Start(start) => {
                assert_eq!(start.stream_sid, "MZ18ad3ab5a668481ce02b83e7395059f0");
                assert_eq!(start.call_sid, "CA5b9f4a1e2c3d4e5f60718293a4b5c6d7");
                assert_eq!(start.tracks, ["inbound"]);
                assert_eq!(start.custom_parameters["agent"], "support");
                assert_eq!(start.media_format.sample_rate_hz, 8000);
                // The server answers with a greeting chunk and a mark.
                let enc = TwilioEncoder::new(&start.stream_sid);
                sent.push(enc.media(&[0xff; 1600]));
                playout.on_media_sent(1600);
                sent.push(enc.mark(&playout.next_mark()));
            }
            TwilioEvent::Media(chunk) => {
                media += 1;
                assert_eq!(chunk.chunk, media);
                assert_eq!(chunk.timestamp_ms, media * 20);
                assert_eq!(chunk.payload_bytes, 160);
                while let Some(f) = dec.pop_frame() {
                    frames.extend_from_slice(f);
                }
            }
            TwilioEvent::Dtmf { track, digit } => {
                assert_eq!(track, "inbound_track");
                digits.push(digit);
            }
            TwilioEvent::Mark { name } => {
                assert_eq!(
                    playout.handle_mark(&name),
                    MarkOutcome::Played {
                        played_ms: 200,
                        unplayed_ms: 0
                    }
                );
            }
            TwilioEvent::Stop { call_sid, .. } => {
                assert_eq!(call_sid, "CA5b9f4a1e2c3d4e5f60718293a4b5c6d7");
                stopped = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(media, 10);
    assert_eq!(frames.len(), 1600);
    // The tone is not silence: mu-law silence is 0xff/0x7f.
    assert!(frames.iter().filter(|&&b| b != 0xff && b != 0x7f).count() > 1000);
    assert_eq!(digits, "7");
    assert!(stopped);
    let first: serde_json::Value = serde_json::from_str(&sent[0]).unwrap();
    assert_eq!(first["event"], "media");
    assert_eq!(first["streamSid"], "MZ18ad3ab5a668481ce02b83e7395059f0");
}
