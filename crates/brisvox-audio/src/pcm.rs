//! PCM16 helpers: little-endian bytes, float conversion and signal levels.
//!
//! Wire formats carry PCM16 as little-endian byte pairs; the resampler works in
//! `f32` with full scale at 1.0. Levels are measured on the RMS of a block:
//! [`rms`] gives it relative to full scale, [`dbfs`] in decibels, where a
//! full-scale square wave is 0 dBFS and a full-scale sine about -3.01 dBFS.

/// Why a byte or sample conversion could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PcmError {
    /// PCM16 bytes must come in pairs.
    #[error("PCM16 needs an even number of bytes, got {len}")]
    OddByteCount {
        /// Bytes offered.
        len: usize,
    },
    /// The output slice cannot hold the result.
    #[error("output holds {actual} elements, {needed} needed")]
    OutputTooShort {
        /// Elements that had to be written.
        needed: usize,
        /// Length of the output slice.
        actual: usize,
    },
}

/// Scale between PCM16 and `f32` full scale.
const FULL_SCALE: f32 = 32768.0;

/// Level reported for a block of digital silence by [`dbfs`].
pub const SILENCE_DBFS: f32 = f32::NEG_INFINITY;

fn prefix<T>(out: &mut [T], needed: usize) -> Result<&mut [T], PcmError> {
    let actual = out.len();
    out.get_mut(..needed)
        .ok_or(PcmError::OutputTooShort { needed, actual })
}

/// Reads little-endian PCM16 `bytes` into `out`; returns the number of samples written.
pub fn samples_from_le_bytes_into(bytes: &[u8], out: &mut [i16]) -> Result<usize, PcmError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(PcmError::OddByteCount { len: bytes.len() });
    }
    let n = bytes.len() / 2;
    let out = prefix(out, n)?;
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = i16::from_le_bytes([pair[0], pair[1]]);
    }
    Ok(n)
}

/// Writes `samples` as little-endian bytes into `out`; returns the number of bytes written.
pub fn samples_to_le_bytes_into(samples: &[i16], out: &mut [u8]) -> Result<usize, PcmError> {
    let n = samples.len() * 2;
    let out = prefix(out, n)?;
    for (pair, s) in out.chunks_exact_mut(2).zip(samples) {
        pair.copy_from_slice(&s.to_le_bytes());
    }
    Ok(n)
}

/// One PCM16 sample as `f32` in [-1.0, 1.0).
pub fn i16_to_f32(sample: i16) -> f32 {
    f32::from(sample) / FULL_SCALE
}

/// One `f32` sample (full scale 1.0) as PCM16, rounded to nearest and clamped.
/// NaN maps to 0.
pub fn f32_to_i16(sample: f32) -> i16 {
    let scaled = (sample * FULL_SCALE).round();
    if scaled.is_nan() {
        0
    } else {
        // Cannot overflow: clamped into the i16 range first.
        scaled.clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16
    }
}

/// Converts `samples` into `out` as `f32`; returns the count written.
pub fn i16_to_f32_into(samples: &[i16], out: &mut [f32]) -> Result<usize, PcmError> {
    let out = prefix(out, samples.len())?;
    out.iter_mut()
        .zip(samples)
        .for_each(|(o, &s)| *o = i16_to_f32(s));
    Ok(samples.len())
}

/// Converts `samples` into `out` as PCM16 (rounded, clamped); returns the count written.
pub fn f32_to_i16_into(samples: &[f32], out: &mut [i16]) -> Result<usize, PcmError> {
    let out = prefix(out, samples.len())?;
    out.iter_mut()
        .zip(samples)
        .for_each(|(o, &s)| *o = f32_to_i16(s));
    Ok(samples.len())
}

/// Root mean square of `samples` relative to full scale (0.0 for an empty block).
pub fn rms(samples: &[i16]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    ((sum / samples.len() as f64).sqrt() / f64::from(FULL_SCALE)) as f32
}

/// RMS level of `samples` in dBFS; [`SILENCE_DBFS`] for silence or an empty block.
pub fn dbfs(samples: &[i16]) -> f32 {
    let level = rms(samples);
    if level == 0.0 {
        SILENCE_DBFS
    } else {
        20.0 * level.log10()
    }
}

/// How many leading samples of `samples` are quiet: those before the first
/// sample whose magnitude reaches `threshold`, less `keep` (the quiet just
/// before the sound is kept, so a soft onset is not cut). 0 when no sample
/// reaches `threshold`: a block that is all quiet is left whole.
pub fn leading_quiet_len(samples: &[i16], threshold: u16, keep: usize) -> usize {
    samples
        .iter()
        .position(|&s| s.unsigned_abs() >= threshold)
        .map_or(0, |first| first.saturating_sub(keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quiet_before_the_first_loud_sample_is_counted_less_what_is_kept() {
        let mut s = vec![0i16; 100];
        s.extend([-20, 20, 40, -400, 3]);
        assert_eq!(leading_quiet_len(&s, 33, 0), 102, "the first |s| >= 33");
        assert_eq!(leading_quiet_len(&s, 33, 10), 92);
        assert_eq!(leading_quiet_len(&s, 33, 500), 0, "keep more than there is");
        assert_eq!(leading_quiet_len(&s, 400, 0), 103, "-400 reaches 400");
        assert_eq!(leading_quiet_len(&s, 401, 0), 0, "nothing loud: left whole");
        assert_eq!(leading_quiet_len(&[], 1, 0), 0);
        assert_eq!(leading_quiet_len(&[i16::MIN], 1, 0), 0);
    }

    #[test]
    fn little_endian_bytes_round_trip() {
        let samples = [0i16, 1, -1, i16::MAX, i16::MIN, 0x1234];
        let mut bytes = [0u8; 12];
        assert_eq!(samples_to_le_bytes_into(&samples, &mut bytes), Ok(12));
        assert_eq!(&bytes[10..], &[0x34, 0x12]);
        assert_eq!(&bytes[2..6], &[1, 0, 0xFF, 0xFF]);
        let mut back = [0i16; 6];
        assert_eq!(samples_from_le_bytes_into(&bytes, &mut back), Ok(6));
        assert_eq!(back, samples);
    }

    #[test]
    fn odd_bytes_and_short_outputs_are_refused() {
        let mut out = [0i16; 1];
        assert_eq!(
            samples_from_le_bytes_into(&[1, 2, 3], &mut out),
            Err(PcmError::OddByteCount { len: 3 })
        );
        assert_eq!(
            samples_from_le_bytes_into(&[1, 2, 3, 4], &mut out),
            Err(PcmError::OutputTooShort {
                needed: 2,
                actual: 1
            })
        );
        let mut bytes = [0u8; 3];
        assert!(samples_to_le_bytes_into(&[1, 2], &mut bytes).is_err());
    }

    #[test]
    fn float_conversion_round_trips_every_sample_and_clamps() {
        for s in i16::MIN..=i16::MAX {
            assert_eq!(f32_to_i16(i16_to_f32(s)), s);
        }
        assert_eq!(f32_to_i16(1.5), i16::MAX);
        assert_eq!(f32_to_i16(-1.5), i16::MIN);
        assert_eq!(f32_to_i16(f32::NAN), 0);
        assert_eq!(i16_to_f32(i16::MIN), -1.0);
        let mut f = [0f32; 2];
        assert_eq!(i16_to_f32_into(&[16384, -16384], &mut f), Ok(2));
        assert_eq!(f, [0.5, -0.5]);
        let mut s = [0i16; 2];
        assert_eq!(f32_to_i16_into(&f, &mut s), Ok(2));
        assert_eq!(s, [16384, -16384]);
    }

    #[test]
    fn levels_of_square_sine_and_silence() {
        let square: Vec<i16> = (0..1600)
            .map(|i| if i % 2 == 0 { 16384 } else { -16384 })
            .collect();
        assert!((rms(&square) - 0.5).abs() < 1e-6);
        assert!((dbfs(&square) - (-6.0206)).abs() < 1e-3);
        let sine: Vec<i16> = (0..16000)
            .map(|i| {
                (32767.0 * (2.0 * std::f64::consts::PI * 1000.0 * i as f64 / 16000.0).sin()) as i16
            })
            .collect();
        assert!((dbfs(&sine) - (-3.0103)).abs() < 0.01);
        assert_eq!(dbfs(&[0; 160]), SILENCE_DBFS);
        assert_eq!(dbfs(&[]), SILENCE_DBFS);
        assert_eq!(rms(&[]), 0.0);
    }
}
