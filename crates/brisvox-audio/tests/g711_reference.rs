//! G.711 against an independent reference (CPython's `audioop`, see
//! `tests/fixtures/README.md`) and the laws' structural properties.

use brisvox_audio::g711::{G711Law, alaw_decode, alaw_encode, ulaw_decode, ulaw_encode};

const ULAW_ENCODE: &[u8] = include_bytes!("fixtures/g711_ulaw_encode_all_i16.bin");
const ALAW_ENCODE: &[u8] = include_bytes!("fixtures/g711_alaw_encode_all_i16.bin");
const ULAW_DECODE: &[u8] = include_bytes!("fixtures/g711_ulaw_decode_all_codes.bin");
const ALAW_DECODE: &[u8] = include_bytes!("fixtures/g711_alaw_decode_all_codes.bin");

fn all_samples() -> impl Iterator<Item = i16> {
    i16::MIN..=i16::MAX
}

fn reference_decode(table: &[u8], code: u8) -> i16 {
    let i = usize::from(code) * 2;
    i16::from_le_bytes([table[i], table[i + 1]])
}

#[test]
fn every_sample_encodes_like_the_reference() {
    for (i, s) in all_samples().enumerate() {
        assert_eq!(ulaw_encode(s), ULAW_ENCODE[i], "mu-law of {s}");
        assert_eq!(alaw_encode(s), ALAW_ENCODE[i], "A-law of {s}");
    }
}

#[test]
fn every_code_decodes_like_the_reference() {
    for c in 0..=255u8 {
        assert_eq!(
            ulaw_decode(c),
            reference_decode(ULAW_DECODE, c),
            "mu {c:#04x}"
        );
        assert_eq!(
            alaw_decode(c),
            reference_decode(ALAW_DECODE, c),
            "A {c:#04x}"
        );
    }
}

/// Decoded level as a function of the code with the sign and inversion undone
/// must be strictly monotonic within each sign half.
#[test]
fn decode_tables_are_monotonic_within_each_sign() {
    // mu-law: 0x00..=0x7F runs from -32124 up to 0, 0x80..=0xFF from 32124 down to 0.
    for c in 0..0x7Fu8 {
        assert!(
            ulaw_decode(c) < ulaw_decode(c + 1),
            "mu-law negative half at {c:#04x}"
        );
        assert!(
            ulaw_decode(c | 0x80) > ulaw_decode((c + 1) | 0x80),
            "mu-law positive half at {c:#04x}"
        );
    }
    // A-law: the even bits are inverted (xor 0x55); undo that and the magnitude rises.
    for m in 0..0x7Fu8 {
        let pos = |m: u8| alaw_decode((m | 0x80) ^ 0x55);
        let neg = |m: u8| alaw_decode(m ^ 0x55);
        assert!(pos(m) < pos(m + 1), "A-law positive half at {m:#04x}");
        assert!(neg(m) > neg(m + 1), "A-law negative half at {m:#04x}");
        assert!(pos(m) > 0 && neg(m) < 0);
    }
}

#[test]
fn decoding_then_encoding_returns_the_same_level() {
    for c in 0..=255u8 {
        let mu = ulaw_decode(c);
        assert_eq!(ulaw_decode(ulaw_encode(mu)), mu, "mu {c:#04x}");
        let a = alaw_decode(c);
        assert_eq!(alaw_encode(a), c, "A {c:#04x}");
    }
    // Only mu-law's two zero codes collapse into one.
    assert_eq!(ulaw_encode(ulaw_decode(0x7F)), 0xFF);
}

#[test]
fn encoding_is_monotonic_and_the_error_is_within_half_a_segment_step() {
    let mut prev_mu = i32::MIN;
    let mut prev_a = i32::MIN;
    for s in all_samples() {
        let mu = i32::from(ulaw_decode(ulaw_encode(s)));
        let a = i32::from(alaw_decode(alaw_encode(s)));
        assert!(mu >= prev_mu && a >= prev_a, "non-monotonic at {s}");
        prev_mu = mu;
        prev_a = a;
        // A segment's step is at most 1/16 of the smallest (biased) magnitude in
        // it, and the decoder returns the step's middle: error <= magnitude / 32,
        // plus the bits dropped before encoding. mu-law clips above 32124.
        let mag = i32::from(s).abs();
        let clip = (mag - 32_124).max(0);
        let mu_bound = (mag + 132) / 32 + 8 + clip;
        let a_bound = mag / 32 + 16;
        assert!(
            (mu - i32::from(s)).abs() <= mu_bound,
            "mu-law error at {s}: {mu}"
        );
        assert!(
            (a - i32::from(s)).abs() <= a_bound,
            "A-law error at {s}: {a}"
        );
    }
}

#[test]
fn slice_apis_match_the_per_sample_functions() {
    let pcm: Vec<i16> = (0..4000)
        .map(|i| ((i * 37) % 65536 - 32768) as i16)
        .collect();
    for law in [G711Law::MuLaw, G711Law::ALaw] {
        let mut codes = vec![0u8; pcm.len() + 3];
        assert_eq!(law.encode_into(&pcm, &mut codes), Ok(pcm.len()));
        let mut back = vec![0i16; pcm.len()];
        assert_eq!(
            law.decode_into(&codes[..pcm.len()], &mut back),
            Ok(pcm.len())
        );
        for (i, &s) in pcm.iter().enumerate() {
            assert_eq!(codes[i], law.encode(s));
            assert_eq!(back[i], law.decode(law.encode(s)));
        }
    }
}
