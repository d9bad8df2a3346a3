//! G.711 companding: mu-law (North America, Japan) and A-law (elsewhere).
//!
//! Telephony transports (Twilio Media Streams, SIP trunks) carry 8 kHz audio as
//! one G.711 byte per sample. Encoding follows the ITU-T G.711 segment tables
//! (the classic `g711.c` formulation: mu-law on the top 14 bits with a bias of
//! 33, A-law on the top 13 bits); decoding is a lookup in a 256-entry table built
//! at compile time. The slice functions write into buffers the caller owns, so
//! the media path does not allocate.

/// Why a slice conversion could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum G711Error {
    /// The output slice is shorter than the input.
    #[error("output holds {actual} samples, {needed} needed")]
    OutputTooShort {
        /// Samples that had to be written (the input length).
        needed: usize,
        /// Length of the output slice.
        actual: usize,
    },
}

/// The two G.711 companding laws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum G711Law {
    /// mu-law (PCMU, RTP payload type 0).
    MuLaw,
    /// A-law (PCMA, RTP payload type 8).
    ALaw,
}

impl G711Law {
    /// Encodes one sample.
    pub fn encode(self, sample: i16) -> u8 {
        match self {
            G711Law::MuLaw => ulaw_encode(sample),
            G711Law::ALaw => alaw_encode(sample),
        }
    }

    /// Decodes one code byte.
    pub fn decode(self, code: u8) -> i16 {
        match self {
            G711Law::MuLaw => ulaw_decode(code),
            G711Law::ALaw => alaw_decode(code),
        }
    }

    /// Encodes `pcm` into the first `pcm.len()` bytes of `out`; returns that count.
    pub fn encode_into(self, pcm: &[i16], out: &mut [u8]) -> Result<usize, G711Error> {
        let out = checked_prefix(out, pcm.len())?;
        match self {
            G711Law::MuLaw => out
                .iter_mut()
                .zip(pcm)
                .for_each(|(o, &s)| *o = ulaw_encode(s)),
            G711Law::ALaw => out
                .iter_mut()
                .zip(pcm)
                .for_each(|(o, &s)| *o = alaw_encode(s)),
        }
        Ok(pcm.len())
    }

    /// Decodes `codes` into the first `codes.len()` samples of `out`; returns that count.
    pub fn decode_into(self, codes: &[u8], out: &mut [i16]) -> Result<usize, G711Error> {
        let table = match self {
            G711Law::MuLaw => &ULAW_DECODE,
            G711Law::ALaw => &ALAW_DECODE,
        };
        let out = checked_prefix(out, codes.len())?;
        out.iter_mut()
            .zip(codes)
            .for_each(|(o, &c)| *o = table[usize::from(c)]);
        Ok(codes.len())
    }
}

fn checked_prefix<T>(out: &mut [T], needed: usize) -> Result<&mut [T], G711Error> {
    let actual = out.len();
    out.get_mut(..needed)
        .ok_or(G711Error::OutputTooShort { needed, actual })
}

/// Upper bounds of the mu-law segments on the biased 14-bit magnitude.
const ULAW_SEGMENT_END: [i32; 8] = [0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF];
/// Upper bounds of the A-law segments on the 13-bit magnitude.
const ALAW_SEGMENT_END: [i32; 8] = [0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF];
/// mu-law bias on the 16-bit scale (33 on the 14-bit scale).
const ULAW_BIAS: i32 = 0x84;
/// Largest 14-bit magnitude before the bias is added.
const ULAW_CLIP: i32 = 8159;

const fn segment_of(value: i32, ends: &[i32; 8]) -> usize {
    let mut seg = 0;
    while seg < 8 && value > ends[seg] {
        seg += 1;
    }
    seg
}

/// Encodes one sample as mu-law (0 encodes to 0xFF).
pub const fn ulaw_encode(sample: i16) -> u8 {
    let mut value = (sample as i32) >> 2;
    let mask: u8 = if value < 0 {
        value = -value;
        0x7F
    } else {
        0xFF
    };
    if value > ULAW_CLIP {
        value = ULAW_CLIP;
    }
    value += ULAW_BIAS >> 2;
    let seg = segment_of(value, &ULAW_SEGMENT_END);
    if seg >= 8 {
        // Past the last segment (only the clipped top, 8159 + 33 = 0x2000).
        return 0x7F ^ mask;
    }
    let code = ((seg as i32) << 4) | ((value >> (seg + 1)) & 0x0F);
    (code as u8) ^ mask
}

/// Encodes one sample as A-law (0 encodes to 0xD5).
pub const fn alaw_encode(sample: i16) -> u8 {
    let mut value = (sample as i32) >> 3;
    let mask: u8 = if value >= 0 {
        0xD5
    } else {
        value = -value - 1;
        0x55
    };
    let seg = segment_of(value, &ALAW_SEGMENT_END);
    if seg >= 8 {
        return 0x7F ^ mask;
    }
    let quant = if seg < 2 { value >> 1 } else { value >> seg };
    let code = ((seg as i32) << 4) | (quant & 0x0F);
    (code as u8) ^ mask
}

const fn ulaw_decode_formula(code: u8) -> i16 {
    let u = !code;
    let mut t = (((u & 0x0F) as i32) << 3) + ULAW_BIAS;
    t <<= ((u & 0x70) >> 4) as i32;
    let v = if u & 0x80 != 0 {
        ULAW_BIAS - t
    } else {
        t - ULAW_BIAS
    };
    v as i16
}

const fn alaw_decode_formula(code: u8) -> i16 {
    let a = code ^ 0x55;
    let mut t = ((a & 0x0F) as i32) << 4;
    let seg = ((a & 0x70) >> 4) as i32;
    match seg {
        0 => t += 8,
        1 => t += 0x108,
        _ => {
            t += 0x108;
            t <<= seg - 1;
        }
    }
    (if a & 0x80 != 0 { t } else { -t }) as i16
}

const fn build_table(law: G711Law) -> [i16; 256] {
    let mut table = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = match law {
            G711Law::MuLaw => ulaw_decode_formula(i as u8),
            G711Law::ALaw => alaw_decode_formula(i as u8),
        };
        i += 1;
    }
    table
}

/// mu-law decode table, indexed by code byte.
static ULAW_DECODE: [i16; 256] = build_table(G711Law::MuLaw);
/// A-law decode table, indexed by code byte.
static ALAW_DECODE: [i16; 256] = build_table(G711Law::ALaw);

/// Decodes one mu-law byte (0x80 gives 32124, 0x00 gives -32124, 0xFF gives 0).
pub fn ulaw_decode(code: u8) -> i16 {
    ULAW_DECODE[usize::from(code)]
}

/// Decodes one A-law byte (0xD5 gives 8, 0xAA gives 32256).
pub fn alaw_decode(code: u8) -> i16 {
    ALAW_DECODE[usize::from(code)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_code_pairs_match_the_g711_tables() {
        // (sample, mu-law code, A-law code) from the G.711 segment tables.
        let pairs: &[(i16, u8, u8)] = &[
            (0, 0xFF, 0xD5),
            (-1, 0x7E, 0x55),
            (8, 0xFE, 0xD5),
            (100, 0xF2, 0xD3),
            (-100, 0x72, 0x53),
            (32767, 0x80, 0xAA),
            (-32768, 0x00, 0x2A),
            (1000, 0xCE, 0xFA),
            (-1000, 0x4E, 0x7A),
        ];
        for &(s, mu, a) in pairs {
            assert_eq!(ulaw_encode(s), mu, "mu-law of {s}");
            assert_eq!(alaw_encode(s), a, "A-law of {s}");
        }
        // (code, mu-law sample, A-law sample).
        let decoded: &[(u8, i16, i16)] = &[
            (0x80, 32124, 5504),
            (0x00, -32124, -5504),
            (0xFF, 0, 848),
            (0x7F, 0, -848),
            (0xD5, 716, 8),
            (0x55, -716, -8),
            (0xAA, 5372, 32256),
            (0x2A, -5372, -32256),
        ];
        for &(c, mu, a) in decoded {
            assert_eq!(ulaw_decode(c), mu, "mu-law decode of {c:#04x}");
            assert_eq!(alaw_decode(c), a, "A-law decode of {c:#04x}");
        }
    }

    #[test]
    fn slice_conversion_refuses_a_short_output() {
        let mut out = [0u8; 2];
        assert_eq!(
            G711Law::MuLaw.encode_into(&[1, 2, 3], &mut out),
            Err(G711Error::OutputTooShort {
                needed: 3,
                actual: 2
            })
        );
        let mut pcm = [0i16; 4];
        assert_eq!(G711Law::ALaw.decode_into(&[0xD5, 0x55], &mut pcm), Ok(2));
        assert_eq!(pcm, [8, -8, 0, 0]);
    }
}
