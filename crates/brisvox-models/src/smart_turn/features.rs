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
//! Steps 3 and 4 are Whisper's log-mel spectrogram, [`crate::mel::LogMel`],
//! shared with the Whisper recogniser. [`FeatureExtractor`] owns one and its
//! own scratch buffer, so an analysis allocates nothing after construction.

use crate::mel::LogMel;

/// Sample rate the model expects, in Hz.
pub const SAMPLE_RATE_HZ: u32 = crate::mel::SAMPLE_RATE_HZ;
/// Samples in the model's 8 s window at 16 kHz.
pub const WINDOW_SAMPLES: usize = 128_000;
/// Number of mel bands (rows of the feature matrix).
pub const N_MELS: usize = crate::mel::N_MELS;
/// Number of frames (columns of the feature matrix).
pub const N_FRAMES: usize = 800;
/// Number of f32 values in one feature matrix (`N_MELS * N_FRAMES`).
pub const FEATURES_LEN: usize = N_MELS * N_FRAMES;

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

/// Computes Smart Turn input features; reusable, allocation-free per analysis.
///
/// Not `Sync` by design of its scratch buffers: give each worker thread its own
/// (the model wrapper keeps one per session).
pub struct FeatureExtractor {
    mel: LogMel,
    audio: Vec<f32>,
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
    /// Builds the spectrogram's window, filters and FFT plan and the scratch buffers.
    ///
    /// Costs well under a millisecond; build it once per worker, not per analysis.
    pub fn new() -> Self {
        FeatureExtractor {
            mel: LogMel::for_samples(WINDOW_SAMPLES),
            audio: vec![0.0; WINDOW_SAMPLES],
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
        // 128,000 samples are 800 whole hops and `out` holds 80 x 800 values,
        // the only error cases.
        self.mel
            .compute_into(&self.audio, out)
            .expect("8 s window and buffer sized for it");
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
