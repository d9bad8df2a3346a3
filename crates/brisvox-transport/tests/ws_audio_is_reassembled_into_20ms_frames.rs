//! Binary audio of any message size comes out as whole 20 ms frames, in order,
//! for every codec and sample rate.

use brisvox_transport::brisvox_ws::{ClientControl, SUPPORTED_SAMPLE_RATES_HZ};
use brisvox_transport::{AudioCodec, ClientEvent, ClientMessage, ClientMessageDecoder, StartInfo};

fn start(codec: AudioCodec, rate: u32) -> String {
    ClientControl::start(&StartInfo {
        protocol_version: 1,
        codec,
        sample_rate_hz: rate,
        call_id: "sweep".into(),
        metadata: Default::default(),
        frame_ms: 20,
    })
    .to_json()
}

#[test]
fn every_codec_rate_and_message_size() {
    for codec in [AudioCodec::Pcm16, AudioCodec::Mulaw] {
        for rate in SUPPORTED_SAMPLE_RATES_HZ {
            let frame = codec.frame_bytes(rate);
            assert_eq!(frame, rate as usize / 50 * codec.bytes_per_sample());
            let audio: Vec<u8> = (0..frame * 7).map(|i| (i * 31 % 251) as u8).collect();
            for msg_len in [1, 3, frame / 2, frame - 1, frame, frame + 1, frame * 3] {
                let mut dec = ClientMessageDecoder::default();
                dec.decode(ClientMessage::Text(&start(codec, rate)))
                    .unwrap();
                let mut out = Vec::new();
                for chunk in audio.chunks(msg_len) {
                    let ev = dec.decode(ClientMessage::Binary(chunk)).unwrap();
                    let ClientEvent::Audio { frames_ready } = ev else {
                        panic!("{ev:?}")
                    };
                    let mut popped = 0;
                    while let Some(f) = dec.pop_frame() {
                        assert_eq!(f.len(), frame);
                        out.extend_from_slice(f);
                        popped += 1;
                    }
                    assert_eq!(popped, frames_ready);
                }
                assert_eq!(
                    out, audio,
                    "{codec:?} {rate} Hz, messages of {msg_len} bytes"
                );
            }
        }
    }
}
