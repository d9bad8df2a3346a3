//! Whisper-style log-mel features for Smart Turn v3.2, computed in Rust.
//!
//! The reference is the numpy copy of Whisper's feature extractor that Pipecat
//! vendors (`pipecat/audio/turn/smart_turn/_whisper_features.py` in
//! `pipecat-ai==1.14.0`) together with the way Pipecat prepares the audio before
//! calling it (`LocalSmartTurnAnalyzerV3._predict_endpoint`). Per analysis:
//!
//! 1. int16 PCM at 16 kHz / 32768 as f32; keep the last 8 s (128,000 samples) or
//!    zero-pad **at the start** up to 8 s;
//! 2. normalise over the whole 8 s, padding included, `(x - mean) / sqrt(var + 1e-7)`,
//!    in f32 with numpy's pairwise summation (so the result is bit-identical: the
//!    int8 model quantises its input and a one-ulp difference can move a value to
//!    the next quantisation step);
//! 3. STFT in f64: reflect padding of 200 samples, n_fft 400, hop 160, periodic
//!    Hann window, power spectrum (801 frames x 201 bins);
//! 4. 80 Slaney-scale mel filters from 0 to 8 kHz with Slaney area normalisation,
//!    `log10(max(1e-10, mel))`, drop the last frame (800 left), clamp to `max - 8`,
//!    `(x + 4) / 4`, f32 in mel-major order `[80][800]`.
//!
//! [`FeatureExtractor`] precomputes the window, the mel filters (stored sparsely:
//! each filter touches a few FFT bins) and the FFT plan once, and owns every
//! scratch buffer, so an analysis allocates nothing after construction.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

/// Sample rate the model expects, in Hz.
pub const SAMPLE_RATE_HZ: u32 = 16_000;
/// Samples in the model's 8 s window at 16 kHz.
pub const WINDOW_SAMPLES: usize = 128_000;
/// Number of mel bands (rows of the feature matrix).
pub const N_MELS: usize = 80;
/// Number of frames (columns of the feature matrix).
pub const N_FRAMES: usize = 800;
/// Number of f32 values in one feature matrix (`N_MELS * N_FRAMES`).
pub const FEATURES_LEN: usize = N_MELS * N_FRAMES;

const N_FFT: usize = 400;
const HOP: usize = 160;
const N_BINS: usize = N_FFT / 2 + 1;
const PAD: usize = N_FFT / 2;
const PADDED_LEN: usize = WINDOW_SAMPLES + 2 * PAD;
const STFT_FRAMES: usize = (PADDED_LEN - N_FFT) / HOP + 1; // 801
const MEL_FLOOR: f64 = 1e-10;
const NORM_EPS: f32 = 1e-7;
/// numpy's pairwise summation: blocks of at most 128 values summed with 8 accumulators.
const PAIRWISE_BLOCK: usize = 128;

/// Why features could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// The output buffer does not hold exactly one feature matrix.
    #[error("feature buffer holds {actual} values, expected {expected}")]
    WrongOutputLength {
        /// `FEATURES_LEN`.
        expected: usize,
        /// The length that was passed.
        actual: usize,
    },
}

/// One triangular mel filter, restricted to the FFT bins where it is non-zero.
#[derive(Debug, Clone)]
struct MelFilter {
    first_bin: usize,
    weights: Vec<f64>,
}

/// Computes Smart Turn input features; reusable, allocation-free per analysis.
///
/// Not `Sync` by design of its scratch buffers: give each worker thread its own
/// (the model wrapper keeps one per session).
pub struct FeatureExtractor {
    window: Vec<f64>,
    filters: Vec<MelFilter>,
    fft: Arc<dyn RealToComplex<f64>>,
    audio: Vec<f32>,
    padded: Vec<f64>,
    frame: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    fft_scratch: Vec<Complex<f64>>,
    power: Vec<f64>,
    log_mel: Vec<f64>,
}

impl std::fmt::Debug for FeatureExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeatureExtractor").finish_non_exhaustive()
    }
}

impl Default for FeatureExtractor {
    fn default() -> Self {
        Self::new()
    }
}

impl FeatureExtractor {
    /// Builds the window, the mel filterbank, the FFT plan and the scratch buffers.
    ///
    /// Costs well under a millisecond; build it once per worker, not per analysis.
    pub fn new() -> Self {
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(N_FFT);
        let fft_scratch = fft.make_scratch_vec();
        FeatureExtractor {
            window: periodic_hann(N_FFT),
            filters: slaney_mel_filters(),
            fft,
            audio: vec![0.0; WINDOW_SAMPLES],
            padded: vec![0.0; PADDED_LEN],
            frame: vec![0.0; N_FFT],
            spectrum: vec![Complex::new(0.0, 0.0); N_BINS],
            fft_scratch,
            power: vec![0.0; N_BINS],
            log_mel: vec![0.0; N_MELS * STFT_FRAMES],
        }
    }

    /// Computes the features of `pcm` (16 kHz mono int16, any length) into `out`.
    ///
    /// Only the last 8 s of `pcm` are used; shorter audio is zero-padded at the
    /// start, as Pipecat does. `out` must hold [`FEATURES_LEN`] values and receives
    /// the `[80][800]` matrix (mel band major), the model's `input_features[0]`.
    pub fn compute_into(&mut self, pcm: &[i16], out: &mut [f32]) -> Result<(), FeatureError> {
        if out.len() != FEATURES_LEN {
            return Err(FeatureError::WrongOutputLength {
                expected: FEATURES_LEN,
                actual: out.len(),
            });
        }
        self.load_and_normalise(pcm);
        self.reflect_pad();
        self.log_mel_spectrogram();
        self.finish_into(out);
        Ok(())
    }

    /// Convenience variant of [`compute_into`](Self::compute_into) that allocates the output.
    pub fn compute(&mut self, pcm: &[i16]) -> Vec<f32> {
        let mut out = vec![0.0; FEATURES_LEN];
        // The buffer has exactly FEATURES_LEN values, the only error case.
        self.compute_into(pcm, &mut out)
            .expect("buffer is FEATURES_LEN long");
        out
    }

    /// Step 1 and 2: last 8 s (zero-padded at the start), then f32 normalisation.
    fn load_and_normalise(&mut self, pcm: &[i16]) {
        let used = &pcm[pcm.len().saturating_sub(WINDOW_SAMPLES)..];
        let pad = WINDOW_SAMPLES - used.len();
        self.audio[..pad].fill(0.0);
        for (dst, &s) in self.audio[pad..].iter_mut().zip(used) {
            *dst = f32::from(s) / 32768.0;
        }
        // numpy: mean = sum / n and var = sum((x - mean)^2) / n, all in f32.
        let n = WINDOW_SAMPLES as f32;
        let mean = pairwise_sum_f32(&self.audio) / n;
        // The centred squares are summed in f32 by the same pairwise scheme; the
        // `padded` scratch (f64) is not used for it to keep the f32 rounding.
        let var = pairwise_sum_sq_dev_f32(&self.audio, mean) / n;
        let std = (var + NORM_EPS).sqrt();
        for x in &mut self.audio {
            *x = (*x - mean) / std;
        }
    }

    /// Step 3a: the normalised audio in f64 with 200 samples of reflection each side.
    fn reflect_pad(&mut self) {
        let n = WINDOW_SAMPLES;
        for (dst, &x) in self.padded[PAD..PAD + n].iter_mut().zip(&self.audio) {
            *dst = f64::from(x);
        }
        for i in 0..PAD {
            // numpy "reflect": the edge sample is not repeated.
            self.padded[i] = f64::from(self.audio[PAD - i]);
            self.padded[PAD + n + i] = f64::from(self.audio[n - 2 - i]);
        }
    }

    /// Step 3b and 4 (up to log10): one FFT per frame, power, mel, floor, log10.
    fn log_mel_spectrogram(&mut self) {
        for f in 0..STFT_FRAMES {
            let start = f * HOP;
            let src = &self.padded[start..start + N_FFT];
            for ((dst, &x), &w) in self.frame.iter_mut().zip(src).zip(&self.window) {
                *dst = x * w;
            }
            // Lengths are fixed at construction to the plan's sizes, the only error case.
            self.fft
                .process_with_scratch(&mut self.frame, &mut self.spectrum, &mut self.fft_scratch)
                .expect("buffers sized for the plan");
            for (p, c) in self.power.iter_mut().zip(&self.spectrum) {
                // numpy squares hypot(re, im); re^2 + im^2 differs from that only in
                // the last bits of an f64, far below the f32 output's resolution
                // (the goldens stay bit-identical), at a fraction of hypot's cost.
                *p = c.re * c.re + c.im * c.im;
            }
            for (m, filter) in self.filters.iter().enumerate() {
                let bins = &self.power[filter.first_bin..filter.first_bin + filter.weights.len()];
                let mel: f64 = filter.weights.iter().zip(bins).map(|(w, p)| w * p).sum();
                self.log_mel[m * STFT_FRAMES + f] = mel.max(MEL_FLOOR).log10();
            }
        }
    }

    /// Step 4 (rest): drop the last frame, clamp to max - 8, scale, f32.
    fn finish_into(&self, out: &mut [f32]) {
        let mut max = f64::NEG_INFINITY;
        for row in self.log_mel.chunks_exact(STFT_FRAMES) {
            for &v in &row[..N_FRAMES] {
                max = max.max(v);
            }
        }
        let floor = max - 8.0;
        for (dst_row, row) in out
            .chunks_exact_mut(N_FRAMES)
            .zip(self.log_mel.chunks_exact(STFT_FRAMES))
        {
            for (dst, &v) in dst_row.iter_mut().zip(&row[..N_FRAMES]) {
                *dst = ((v.max(floor) + 4.0) / 4.0) as f32;
            }
        }
    }
}

/// numpy's `np.hanning(n + 1)[:-1]`: the periodic Hann window of length `n`.
fn periodic_hann(n: usize) -> Vec<f64> {
    let m = n + 1; // np.hanning(M) with M = n + 1
    (0..n)
        .map(|k| {
            // np.hanning: n = arange(1 - M, M, 2); 0.5 + 0.5 * cos(pi * n / (M - 1))
            let x = (1.0 - m as f64) + 2.0 * k as f64;
            0.5 + 0.5 * (std::f64::consts::PI * x / (m - 1) as f64).cos()
        })
        .collect()
}

fn hz_to_mel_slaney(hz: f64) -> f64 {
    if hz >= 1000.0 {
        15.0 + (hz / 1000.0).ln() * (27.0 / 6.4f64.ln())
    } else {
        3.0 * hz / 200.0
    }
}

fn mel_to_hz_slaney(mel: f64) -> f64 {
    if mel >= 15.0 {
        1000.0 * ((6.4f64.ln() / 27.0) * (mel - 15.0)).exp()
    } else {
        200.0 * mel / 3.0
    }
}

/// numpy's `linspace(start, stop, num)`: `i * step + start`, the last value exactly `stop`.
fn linspace(start: f64, stop: f64, num: usize) -> Vec<f64> {
    let step = (stop - start) / (num - 1) as f64;
    let mut v: Vec<f64> = (0..num).map(|i| i as f64 * step + start).collect();
    v[num - 1] = stop;
    v
}

/// The 80 Slaney mel filters over the 201 FFT bins, 0-8000 Hz, area-normalised.
fn slaney_mel_filters() -> Vec<MelFilter> {
    let mel_max = hz_to_mel_slaney(f64::from(SAMPLE_RATE_HZ) / 2.0);
    let filter_hz: Vec<f64> = linspace(hz_to_mel_slaney(0.0), mel_max, N_MELS + 2)
        .into_iter()
        .map(mel_to_hz_slaney)
        .collect();
    let fft_hz = linspace(0.0, f64::from(SAMPLE_RATE_HZ / 2), N_BINS);
    (0..N_MELS)
        .map(|m| {
            let enorm = 2.0 / (filter_hz[m + 2] - filter_hz[m]);
            let weight = |bin: usize| {
                let down = -(filter_hz[m] - fft_hz[bin]) / (filter_hz[m + 1] - filter_hz[m]);
                let up = (filter_hz[m + 2] - fft_hz[bin]) / (filter_hz[m + 2] - filter_hz[m + 1]);
                0f64.max(down.min(up)) * enorm
            };
            let nonzero: Vec<usize> = (0..N_BINS).filter(|&b| weight(b) != 0.0).collect();
            let (first, last) = match (nonzero.first(), nonzero.last()) {
                (Some(&f), Some(&l)) => (f, l),
                _ => (0, 0),
            };
            MelFilter {
                first_bin: first,
                weights: (first..=last).map(weight).collect(),
            }
        })
        .collect()
}

/// numpy's float32 `add.reduce` over a contiguous array: pairwise, 8 accumulators.
fn pairwise_sum_f32(a: &[f32]) -> f32 {
    pairwise_by(a, &|x| x)
}

/// `sum((x - mean)^2)` with numpy's f32 rounding of each step and its pairwise order.
fn pairwise_sum_sq_dev_f32(a: &[f32], mean: f32) -> f32 {
    pairwise_by(a, &|x| {
        let d = x - mean;
        d * d
    })
}

fn pairwise_by(a: &[f32], map: &dyn Fn(f32) -> f32) -> f32 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0f32;
        for &x in a {
            res += map(x);
        }
        res
    } else if n <= PAIRWISE_BLOCK {
        let mut r = [0.0f32; 8];
        for (acc, &x) in r.iter_mut().zip(&a[..8]) {
            *acc = map(x);
        }
        let whole = n - n % 8;
        for block in a[8..whole].chunks_exact(8) {
            for (acc, &x) in r.iter_mut().zip(block) {
                *acc += map(x);
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            res += map(x);
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_by(&a[..n2], map) + pairwise_by(&a[n2..], map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_periodic_hann_window_starts_at_zero_and_peaks_in_the_middle() {
        let w = periodic_hann(N_FFT);
        assert_eq!(w.len(), 400);
        assert!(w[0].abs() < 1e-15);
        assert!((w[200] - 1.0).abs() < 1e-15);
        assert!((w[100] - w[300]).abs() < 1e-12);
    }

    #[test]
    fn mel_filters_cover_0_to_8000_hz_with_slaney_area_normalisation() {
        let filters = slaney_mel_filters();
        assert_eq!(filters.len(), N_MELS);
        for (m, f) in filters.iter().enumerate() {
            assert!(!f.weights.is_empty(), "filter {m} is empty");
            assert!(f.first_bin + f.weights.len() <= N_BINS);
        }
        // Slaney normalisation: each triangle has area ~1 / 40 Hz per bin... in bin
        // units the sum of weights times the bin width (40 Hz) is ~1 for wide filters.
        let last = &filters[N_MELS - 1];
        let area: f64 = last.weights.iter().sum::<f64>() * 40.0;
        assert!((area - 1.0).abs() < 0.05, "area {area}");
        assert_eq!(filters[0].first_bin, 1, "filter 0 starts above DC");
    }

    #[test]
    fn pairwise_sum_matches_a_plain_sum_closely_and_handles_short_inputs() {
        let a: Vec<f32> = (0..1000).map(|i| (i % 7) as f32 * 0.25).collect();
        let exact: f64 = a.iter().map(|&x| f64::from(x)).sum();
        assert!((f64::from(pairwise_sum_f32(&a)) - exact).abs() < 1e-3);
        assert_eq!(pairwise_sum_f32(&[1.0, 2.0, 3.0]), 6.0);
        assert_eq!(pairwise_sum_f32(&[]), 0.0);
    }

    #[test]
    fn silence_gives_a_constant_matrix_and_the_output_length_is_checked() {
        let mut fe = FeatureExtractor::new();
        let out = fe.compute(&[0i16; 3200]);
        assert_eq!(out.len(), FEATURES_LEN);
        // All-zero audio: every mel value is at the floor, log10 = -10, clamp does
        // nothing (max - 8 = -18), (x + 4) / 4 = -1.5.
        assert!(out.iter().all(|&v| v == -1.5), "{:?}", &out[..4]);
        let mut short = vec![0.0; 10];
        assert_eq!(
            fe.compute_into(&[0; 10], &mut short),
            Err(FeatureError::WrongOutputLength {
                expected: FEATURES_LEN,
                actual: 10
            })
        );
    }

    #[test]
    fn features_are_clamped_to_8_below_the_maximum_and_depend_only_on_the_last_8_s() {
        let tone: Vec<i16> = (0..200_000)
            .map(|i| ((i as f64 * 0.07).sin() * 8000.0) as i16)
            .collect();
        let mut fe = FeatureExtractor::new();
        let a = fe.compute(&tone);
        let b = fe.compute(&tone[tone.len() - WINDOW_SAMPLES..]);
        assert_eq!(a, b, "only the last 128,000 samples count");
        let max = a.iter().cloned().fold(f32::MIN, f32::max);
        let min = a.iter().cloned().fold(f32::MAX, f32::min);
        assert!(
            (max - min - 2.0).abs() < 1e-5,
            "range {min}..{max} is 8 in log10 / 4"
        );
    }
}
