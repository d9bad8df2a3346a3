//! A-law reaches the wire through `AudioCodec::Alaw` (the `/call` codec
//! `"alaw"` and Telnyx PCMA streams) and codes exactly like the reference
//! table: every one of the 65,536 samples and 256 codes, against the
//! independent tables in `crates/brisvox-audio/tests/fixtures` (see the README
//! there for how they were made).

use brisvox_transport::AudioCodec;

const ALAW_ENCODE: &[u8] =
    include_bytes!("../../brisvox-audio/tests/fixtures/g711_alaw_encode_all_i16.bin");
const ALAW_DECODE: &[u8] =
    include_bytes!("../../brisvox-audio/tests/fixtures/g711_alaw_decode_all_codes.bin");

#[test]
fn every_sample_encodes_like_the_reference() {
    let samples: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    let mut out = Vec::new();
    AudioCodec::Alaw.encode_to(&samples, &mut out);
    assert_eq!(out.len(), 65_536);
    assert!(
        out == ALAW_ENCODE,
        "A-law encode differs from the reference"
    );
}

#[test]
fn every_code_decodes_like_the_reference() {
    let codes: Vec<u8> = (0..=255).collect();
    let mut out = Vec::new();
    AudioCodec::Alaw.decode_to(&codes, &mut out);
    let want: Vec<i16> = ALAW_DECODE
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(out, want);
}

#[test]
fn silence_is_0xd5_and_the_codec_is_named_alaw() {
    let mut out = Vec::new();
    AudioCodec::Alaw.encode_to(&[0; 160], &mut out);
    assert!(out.iter().all(|&c| c == 0xD5));
    assert_eq!(AudioCodec::Alaw.as_str(), "alaw");
    assert_eq!(AudioCodec::Alaw.frame_bytes(8000), 160);
    assert_eq!(
        serde_json::to_string(&AudioCodec::Alaw).unwrap(),
        r#""alaw""#
    );
}
