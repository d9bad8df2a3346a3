//! Property test: audio, marks, clears and key presses survive a trip through
//! each carrier's protocol both ways. Caller audio built as the carrier sends
//! it comes out of the decoder as the same bytes in whole 20 ms frames; what
//! the encoder sends reads back, as the carrier reads it, as the same audio,
//! mark or clear.

use brisvox_transport::carrier::emulator::{CarrierEmulator, ServerCommand};
use brisvox_transport::{
    AudioCodec, Carrier, ExotelStream, MediaStream, Outbound, PlivoStream, StreamEvent,
    TelnyxStream, TwilioStream, VonageStream, WireFormat,
};
use proptest::prelude::*;

fn formats() -> impl Strategy<Value = (Carrier, WireFormat)> {
    let f = |codec, sample_rate_hz| WireFormat {
        codec,
        sample_rate_hz,
    };
    prop_oneof![
        Just((Carrier::Twilio, WireFormat::MULAW_8K)),
        Just((Carrier::Telnyx, WireFormat::MULAW_8K)),
        Just((Carrier::Telnyx, f(AudioCodec::Alaw, 8000))),
        Just((Carrier::Plivo, WireFormat::MULAW_8K)),
        Just((Carrier::Plivo, f(AudioCodec::Pcm16, 8000))),
        Just((Carrier::Plivo, f(AudioCodec::Pcm16, 16000))),
        Just((Carrier::Vonage, f(AudioCodec::Pcm16, 8000))),
        Just((Carrier::Vonage, f(AudioCodec::Pcm16, 16000))),
        Just((Carrier::Exotel, f(AudioCodec::Pcm16, 8000))),
        Just((Carrier::Exotel, f(AudioCodec::Pcm16, 16000))),
        Just((Carrier::Exotel, f(AudioCodec::Pcm16, 24000))),
    ]
}

fn codec_for(carrier: Carrier) -> Box<dyn MediaStream> {
    match carrier {
        Carrier::Twilio => Box::new(TwilioStream::default()),
        Carrier::Telnyx => Box::new(TelnyxStream::default()),
        Carrier::Plivo => Box::new(PlivoStream::default()),
        Carrier::Vonage => Box::new(VonageStream::default()),
        Carrier::Exotel => Box::new(ExotelStream::default()),
    }
}

fn decode(stream: &mut dyn MediaStream, msg: Outbound) -> StreamEvent {
    match msg {
        Outbound::Text(t) => stream.decode_text(&t).unwrap(),
        Outbound::Binary(b) => stream.decode_binary(&b).unwrap(),
    }
}

fn started(carrier: Carrier, format: WireFormat) -> (Box<dyn MediaStream>, CarrierEmulator) {
    let mut stream = codec_for(carrier);
    let mut emu = CarrierEmulator::new(carrier, format, "S-1", "C-1");
    let mut params = serde_json::Map::new();
    params.insert("token".into(), "t0k".into());
    let mut started = None;
    for m in emu.opening(&params, "+15550100", "+15550199") {
        if let StreamEvent::Start(s) = decode(stream.as_mut(), m) {
            started = Some(s);
        }
    }
    let start = started.expect("the opening starts the stream");
    assert_eq!(start.carrier, carrier);
    assert_eq!(start.call_id, "C-1");
    assert_eq!(start.format, format);
    assert_eq!(start.parameters["token"], "t0k");
    (stream, emu)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn caller_audio_comes_out_in_whole_frames(
        (carrier, format) in formats(),
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1500), 1..6),
    ) {
        let (mut stream, mut emu) = started(carrier, format);
        let frame = format.frame_bytes();
        let mut sent = Vec::new();
        let mut got = Vec::new();
        for mut chunk in chunks {
            if format.codec == AudioCodec::Pcm16 {
                chunk.truncate(chunk.len() / 2 * 2);
            }
            sent.extend_from_slice(&chunk);
            let ev = decode(stream.as_mut(), emu.media(&chunk));
            let is_media = matches!(ev, StreamEvent::Media { .. });
            prop_assert!(is_media, "{:?}", ev);
            while let Some(f) = stream.pop_frame() {
                prop_assert_eq!(f.len(), frame);
                got.extend_from_slice(f);
            }
        }
        prop_assert_eq!(&got[..], &sent[..sent.len() / frame * frame]);
    }

    #[test]
    fn server_commands_read_back_as_sent(
        (carrier, format) in formats(),
        audio in proptest::collection::vec(any::<u8>(), 1..2000),
        name in "[a-z0-9-]{1,20}",
        digit in proptest::sample::select(vec!['0', '5', '9', '*', '#', 'A', 'D']),
    ) {
        let (mut stream, mut emu) = started(carrier, format);
        let played = emu.parse_command(&stream.encoder().unwrap().media(&audio)).unwrap();
        prop_assert_eq!(played, ServerCommand::Play(audio));
        let mark = emu.parse_command(&stream.encoder().unwrap().mark(&name)).unwrap();
        prop_assert_eq!(mark, ServerCommand::Mark(name.clone()));
        prop_assert_eq!(emu.parse_command(&stream.encoder().unwrap().clear()).unwrap(), ServerCommand::Clear);
        prop_assert_eq!(decode(stream.as_mut(), emu.mark_echo(&name)), StreamEvent::Mark { name });
        prop_assert_eq!(decode(stream.as_mut(), emu.dtmf(digit)), StreamEvent::Dtmf { digit });
        if let Some(cleared) = emu.cleared() {
            prop_assert_eq!(decode(stream.as_mut(), cleared), StreamEvent::Cleared);
        }
        if let Some(stop) = emu.stop() {
            prop_assert_eq!(decode(stream.as_mut(), stop), StreamEvent::Stop);
        }
    }
}
