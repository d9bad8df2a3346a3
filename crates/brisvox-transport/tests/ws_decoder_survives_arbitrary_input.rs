//! Property tests: arbitrary bytes and strings never panic the decoder, and
//! valid messages round-trip through the encoders.

use brisvox_transport::brisvox_ws::{
    ClientControl, Providers, SUPPORTED_FRAME_MS, SUPPORTED_SAMPLE_RATES_HZ, TurnMetricsMs,
};
use brisvox_transport::{
    AudioCodec, ClientEvent, ClientMessage, ClientMessageDecoder, ServerEvent, StartInfo,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Msg {
    Text(String),
    Binary(Vec<u8>),
}

fn msg() -> impl Strategy<Value = Msg> {
    let start =
        r#"{"type":"start","protocol_version":1,"codec":"mulaw","sample_rate":8000,"call_id":"p"}"#;
    prop_oneof![
        any::<String>().prop_map(Msg::Text),
        proptest::collection::vec(any::<u8>(), 0..2000).prop_map(Msg::Binary),
        Just(Msg::Text(start.to_owned())),
        "\\{\"type\":\"(start|end|say|audio)\"[ -~]{0,40}\\}".prop_map(Msg::Text),
    ]
}

fn metadata() -> impl Strategy<Value = serde_json::Map<String, serde_json::Value>> {
    proptest::collection::btree_map("[a-z]{1,8}", any::<i64>(), 0..4).prop_map(|m| {
        m.into_iter()
            .map(|(k, v)| (k, serde_json::Value::from(v)))
            .collect()
    })
}

fn start_info() -> impl Strategy<Value = StartInfo> {
    (
        prop_oneof![Just(AudioCodec::Pcm16), Just(AudioCodec::Mulaw)],
        proptest::sample::select(SUPPORTED_SAMPLE_RATES_HZ.to_vec()),
        "\\PC{1,40}",
        metadata(),
        proptest::sample::select(SUPPORTED_FRAME_MS.to_vec()),
    )
        .prop_map(
            |(codec, sample_rate_hz, call_id, metadata, frame_ms)| StartInfo {
                protocol_version: 1,
                codec,
                sample_rate_hz,
                call_id,
                metadata,
                frame_ms,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_message_sequences_never_panic(msgs in proptest::collection::vec(msg(), 0..20)) {
        let mut dec = ClientMessageDecoder::default();
        for m in &msgs {
            let res = match m {
                Msg::Text(t) => dec.decode(ClientMessage::Text(t)),
                Msg::Binary(b) => dec.decode(ClientMessage::Binary(b)),
            };
            if let Err(e) = res {
                prop_assert!(!e.code().is_empty());
                prop_assert!(!e.to_string().is_empty());
            }
            while dec.pop_frame().is_some() {}
        }
    }

    #[test]
    fn valid_start_round_trips(info in start_info()) {
        let mut dec = ClientMessageDecoder::default();
        let ev = dec.decode(ClientMessage::Text(&ClientControl::start(&info).to_json())).unwrap();
        prop_assert_eq!(ev, ClientEvent::Start(info.clone()));
        prop_assert_eq!(dec.start_info(), Some(&info));
    }

    #[test]
    fn say_and_end_round_trip(text in "\\PC{0,200}", reason in proptest::option::of("\\PC{0,100}")) {
        let mut dec = ClientMessageDecoder::default();
        dec.decode(ClientMessage::Text(&ClientControl::start(&StartInfo {
            protocol_version: 1, codec: AudioCodec::Pcm16, sample_rate_hz: 16000,
            call_id: "x".into(), metadata: Default::default(), frame_ms: 20,
        }).to_json())).unwrap();
        let say = ClientControl::Say { text: text.clone(), interrupt: false }.to_json();
        prop_assert_eq!(dec.decode(ClientMessage::Text(&say)).unwrap(), ClientEvent::Say { text, interrupt: false });
        let end = ClientControl::End { reason: reason.clone() }.to_json();
        prop_assert_eq!(dec.decode(ClientMessage::Text(&end)).unwrap(), ClientEvent::End { reason });
    }

    #[test]
    fn server_events_round_trip(
        text in "\\PC{0,80}",
        flag in any::<bool>(),
        turn in any::<u64>(),
        ms in proptest::collection::vec(proptest::option::of(0u32..100_000), 9),
    ) {
        let m = |i: usize| ms[i].map(f64::from);
        let events = vec![
            ServerEvent::Started {
                protocol_version: 1, call_id: text.clone(), codec: AudioCodec::Mulaw, sample_rate: 8000, frame_ms: 40,
                providers: Providers { stt: "mock".into(), llm: "mock".into(), tts: "mock".into() }, mock: flag,
            },
            ServerEvent::Transcript { text: text.clone(), is_final: flag },
            ServerEvent::BotSpeakingStarted,
            ServerEvent::BotSpeakingStopped { interrupted: flag },
            ServerEvent::Clear,
            ServerEvent::TurnMetrics { turn, metrics: TurnMetricsMs {
                end_of_turn_delay_ms: m(0), stt_final_delay_ms: m(1), llm_ttft_ms: m(2),
                tts_ttfb_ms: m(3), response_latency_ms: m(4), time_to_silence_ms: m(5),
                turn_end_to_llm_ms: m(6), tts_first_byte_to_transport_ms: m(7),
                interrupt_to_clear_ms: m(8), turn_verdict_delay_ms: m(0),
                waited_for: flag.then(|| text.clone()),
            }},
            ServerEvent::BotText { turn, text: text.clone() },
            ServerEvent::BotHeard { turn, heard: text.clone(), sent: text.clone(), played_ms: turn },
            ServerEvent::TurnNoText { turn, reason: text.clone(), speech_ms: 1.0, replied: flag },
            ServerEvent::Error { code: "x".into(), message: text.clone() },
            ServerEvent::End { reason: text },
        ];
        for ev in events {
            prop_assert_eq!(ServerEvent::from_json(&ev.to_json()).unwrap(), ev);
        }
    }
}
