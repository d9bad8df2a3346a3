//! Property test: no input panics a carrier decoder. Arbitrary text, binary
//! messages and near-valid JSON (each carrier's events with random fields),
//! before and after a valid start, give an event or a typed error.

use brisvox_transport::carrier::emulator::CarrierEmulator;
use brisvox_transport::{
    AudioCodec, Carrier, ExotelStream, MediaStream, Outbound, PlivoStream, TelnyxStream,
    TwilioStream, VonageStream, WireFormat,
};
use proptest::prelude::*;

fn codec_for(carrier: Carrier) -> (Box<dyn MediaStream>, WireFormat) {
    let pcm16 = |rate| WireFormat {
        codec: AudioCodec::Pcm16,
        sample_rate_hz: rate,
    };
    match carrier {
        Carrier::Twilio => (Box::new(TwilioStream::default()), WireFormat::MULAW_8K),
        Carrier::Telnyx => (Box::new(TelnyxStream::default()), WireFormat::MULAW_8K),
        Carrier::Plivo => (Box::new(PlivoStream::default()), WireFormat::MULAW_8K),
        Carrier::Vonage => (Box::new(VonageStream::default()), pcm16(16000)),
        Carrier::Exotel => (Box::new(ExotelStream::default()), pcm16(8000)),
    }
}

fn carriers() -> impl Strategy<Value = Carrier> {
    prop_oneof![
        Just(Carrier::Twilio),
        Just(Carrier::Telnyx),
        Just(Carrier::Plivo),
        Just(Carrier::Vonage),
        Just(Carrier::Exotel),
    ]
}

fn messages() -> impl Strategy<Value = Vec<Result<String, Vec<u8>>>> {
    let text = prop_oneof![
        any::<String>(),
        "\\{\"(event|action)\":\"(connected|start|media|mark|dtmf|stop|error|playedStream|clearedAudio|websocket:connected|websocket:dtmf|websocket:notify|websocket:cleared)\"[ -~]{0,80}\\}",
        "\\{\"event\":\"media\",\"(stream_id|streamId|stream_sid|streamSid)\":\"[A-Z0-9]{0,4}\",\"media\":\\{\"payload\":\"[A-Za-z0-9+/=]{0,40}\"\\}\\}",
    ];
    proptest::collection::vec(
        prop_oneof![
            text.prop_map(Ok),
            proptest::collection::vec(any::<u8>(), 0..700).prop_map(Err),
        ],
        0..24,
    )
}

fn feed(stream: &mut dyn MediaStream, msg: &Result<String, Vec<u8>>) {
    let result = match msg {
        Ok(text) => stream.decode_text(text),
        Err(bytes) => stream.decode_binary(bytes),
    };
    if let Err(e) = result {
        assert!(!e.to_string().is_empty());
        assert!(e.close_code() >= 1002);
    }
    while let Some(frame) = stream.pop_frame() {
        assert!(!frame.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_messages_never_panic(carrier in carriers(), msgs in messages(), start_first in any::<bool>()) {
        let (mut stream, format) = codec_for(carrier);
        if start_first {
            let mut emu = CarrierEmulator::new(carrier, format, "S1", "C1");
            for m in emu.opening(&serde_json::Map::new(), "+15550100", "+15550199") {
                let Outbound::Text(t) = m else { continue };
                stream.decode_text(&t).unwrap();
            }
        }
        for m in &msgs {
            feed(stream.as_mut(), m);
        }
    }
}
