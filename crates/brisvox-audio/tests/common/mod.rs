//! Signal helpers shared by the resampler tests.
#![allow(dead_code)] // Each test binary uses a different subset.

use brisvox_audio::StreamResampler;

/// A sine of `amplitude` (full scale 1.0) at `freq_hz`, `len` samples at `rate_hz`.
pub(crate) fn tone(freq_hz: f64, amplitude: f64, rate_hz: u32, len: usize) -> Vec<i16> {
    (0..len)
        .map(|n| {
            let x = amplitude
                * (2.0 * std::f64::consts::PI * freq_hz * n as f64 / f64::from(rate_hz)).sin();
            (x * 32767.0).round() as i16
        })
        .collect()
}

/// Streams `input` through `r` in chunks of `chunk` samples, then flushes.
pub(crate) fn run_chunked(r: &mut StreamResampler, input: &[i16], chunk: usize) -> Vec<i16> {
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        r.process_into(piece, &mut out);
    }
    r.flush(&mut out);
    out
}

/// RMS of `x` relative to full scale.
pub(crate) fn rms(x: &[f64]) -> f64 {
    (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt()
}

/// Gain in dB of `output` against the input `amplitude`, measured on the
/// steady middle (skipping `skip_s` seconds at each end).
pub(crate) fn steady_gain_db(output: &[f64], rate_hz: u32, amplitude: f64, skip_s: f64) -> f64 {
    let skip = (skip_s * f64::from(rate_hz)) as usize;
    let mid = &output[skip..output.len() - skip];
    20.0 * (rms(mid) * std::f64::consts::SQRT_2 / amplitude).log10()
}

/// PCM16 to f64 at full scale 1.0.
pub(crate) fn to_f64(x: &[i16]) -> Vec<f64> {
    x.iter().map(|&s| f64::from(s) / 32767.0).collect()
}
