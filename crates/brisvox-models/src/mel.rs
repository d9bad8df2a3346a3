//! Whisper's log-mel spectrogram, shared by Smart Turn (8 s windows, normalised
//! audio) and the Whisper speech recogniser (variable windows, raw audio).
//!
//! The reference is OpenAI Whisper's feature extractor (and the numpy copy that
//! Pipecat vendors for Smart Turn): STFT in f64 with reflect padding of 200
//! samples, n_fft 400, hop 160, periodic Hann window, power spectrum; 80
//! Slaney-scale mel filters from 0 to 8 kHz with Slaney area normalisation;
//! `log10(max(1e-10, mel))`, drop the last frame, clamp to `max - 8`,
//! `(x + 4) / 4`, f32 in mel-major order `[80][frames]`.
//!
//! [`LogMel`] precomputes the window, the mel filters (stored sparsely: each
//! filter touches a few FFT bins) and the FFT plan once, and owns every scratch
//! buffer, so a spectrogram of a length already seen allocates nothing.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

/// Sample rate of the audio, in Hz.
pub const SAMPLE_RATE_HZ: u32 = 16_000;
/// Number of mel bands (rows of the spectrogram).
pub const N_MELS: usize = 80;
/// Samples between frames (10 ms): audio of `n * HOP` samples gives `n` frames.
pub const HOP: usize = 160;

const N_FFT: usize = 400;
const N_BINS: usize = N_FFT / 2 + 1;
const PAD: usize = N_FFT / 2;
const MEL_FLOOR: f64 = 1e-10;

/// Why a spectrogram could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MelError {
    /// The audio is not a whole, non-zero number of hops.
    #[error("audio of {samples} samples is not a positive multiple of {HOP}")]
    BadLength {
        /// The length that was passed.
        samples: usize,
    },
    /// The output buffer does not hold `N_MELS` rows of the audio's frames.
    #[error("spectrogram buffer holds {actual} values, expected {expected}")]
    WrongOutputLength {
        /// `N_MELS * frames`.
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

/// Computes Whisper log-mel spectrograms; reusable, allocation-free for a
/// length already seen. Give each worker thread its own.
pub struct LogMel {
    window: Vec<f64>,
    filters: Vec<MelFilter>,
    fft: Arc<dyn RealToComplex<f64>>,
    padded: Vec<f64>,
    frame: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    fft_scratch: Vec<Complex<f64>>,
    power: Vec<f64>,
    log_mel: Vec<f64>,
}

impl std::fmt::Debug for LogMel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogMel").finish_non_exhaustive()
    }
}

impl Default for LogMel {
    fn default() -> Self {
        Self::new()
    }
}

impl LogMel {
    /// Builds the window, the mel filterbank, the FFT plan and the scratch
    /// buffers (well under a millisecond).
    pub fn new() -> Self {
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(N_FFT);
        let fft_scratch = fft.make_scratch_vec();
        LogMel {
            window: periodic_hann(N_FFT),
            filters: slaney_mel_filters(),
            fft,
            padded: Vec::new(),
            frame: vec![0.0; N_FFT],
            spectrum: vec![Complex::new(0.0, 0.0); N_BINS],
            fft_scratch,
            power: vec![0.0; N_BINS],
            log_mel: Vec::new(),
        }
    }

    /// [`LogMel::new`] with its buffers sized for audio of `samples` samples,
    /// so a spectrogram of that length allocates nothing, not even the first.
    pub fn for_samples(samples: usize) -> Self {
        let mut mel = Self::new();
        mel.padded = vec![0.0; samples + 2 * PAD];
        mel.log_mel = vec![0.0; N_MELS * (samples / HOP + 1)];
        mel
    }

    /// The spectrogram of `audio` (16 kHz, `n * HOP` samples, already scaled,
    /// padded or normalised as the model wants) into `out`, which must hold
    /// `N_MELS * n` values: `[80][n]`, mel band major.
    pub fn compute_into(&mut self, audio: &[f32], out: &mut [f32]) -> Result<(), MelError> {
        if audio.is_empty() || !audio.len().is_multiple_of(HOP) {
            return Err(MelError::BadLength {
                samples: audio.len(),
            });
        }
        let frames = audio.len() / HOP;
        if out.len() != N_MELS * frames {
            return Err(MelError::WrongOutputLength {
                expected: N_MELS * frames,
                actual: out.len(),
            });
        }
        self.reflect_pad(audio);
        // One more STFT frame than kept: Whisper drops the last one.
        self.log_mel_spectrogram(frames + 1);
        self.finish_into(frames, out);
        Ok(())
    }

    /// The audio in f64 with 200 samples of reflection each side.
    fn reflect_pad(&mut self, audio: &[f32]) {
        let n = audio.len();
        self.padded.resize(n + 2 * PAD, 0.0);
        for (dst, &x) in self.padded[PAD..PAD + n].iter_mut().zip(audio) {
            *dst = f64::from(x);
        }
        for i in 0..PAD {
            // numpy "reflect": the edge sample is not repeated.
            self.padded[i] = f64::from(audio[(PAD - i).min(n - 1)]);
            self.padded[PAD + n + i] = f64::from(audio[n.saturating_sub(2 + i)]);
        }
    }

    /// One FFT per frame, power, mel, floor, log10 (`[80][stft_frames]`).
    fn log_mel_spectrogram(&mut self, stft_frames: usize) {
        self.log_mel.resize(N_MELS * stft_frames, 0.0);
        for f in 0..stft_frames {
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
                self.log_mel[m * stft_frames + f] = mel.max(MEL_FLOOR).log10();
            }
        }
    }

    /// Drop the last frame, clamp to max - 8, scale, f32.
    fn finish_into(&self, frames: usize, out: &mut [f32]) {
        let stft_frames = frames + 1;
        let mut max = f64::NEG_INFINITY;
        for row in self.log_mel.chunks_exact(stft_frames) {
            for &v in &row[..frames] {
                max = max.max(v);
            }
        }
        let floor = max - 8.0;
        for (dst_row, row) in out
            .chunks_exact_mut(frames)
            .zip(self.log_mel.chunks_exact(stft_frames))
        {
            for (dst, &v) in dst_row.iter_mut().zip(&row[..frames]) {
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
        // In bin units (40 Hz per bin) a wide filter's weights sum to ~1 / 40.
        let last = &filters[N_MELS - 1];
        let area: f64 = last.weights.iter().sum::<f64>() * 40.0;
        assert!((area - 1.0).abs() < 0.05, "area {area}");
        assert_eq!(filters[0].first_bin, 1, "filter 0 starts above DC");
    }

    #[test]
    fn lengths_that_are_not_whole_hops_or_buffers_of_the_wrong_size_are_refused() {
        let mut mel = LogMel::new();
        let mut out = vec![0.0; N_MELS * 2];
        assert_eq!(
            mel.compute_into(&[0.0; 100], &mut out),
            Err(MelError::BadLength { samples: 100 })
        );
        assert_eq!(
            mel.compute_into(&[], &mut out),
            Err(MelError::BadLength { samples: 0 })
        );
        assert_eq!(
            mel.compute_into(&[0.0; 3 * HOP], &mut out),
            Err(MelError::WrongOutputLength {
                expected: N_MELS * 3,
                actual: N_MELS * 2
            })
        );
        mel.compute_into(&[0.0; 2 * HOP], &mut out).unwrap();
        assert!(out.iter().all(|&v| v == -1.5), "silence is at the floor");
    }

    #[test]
    fn a_longer_window_reuses_the_buffers_and_gives_the_same_leading_frames_for_a_steady_tone() {
        let tone: Vec<f32> = (0..32 * HOP)
            .map(|i| (i as f32 * 0.07).sin() * 0.3)
            .collect();
        let mut mel = LogMel::new();
        let mut long = vec![0.0; N_MELS * 32];
        mel.compute_into(&tone, &mut long).unwrap();
        let mut short = vec![0.0; N_MELS * 16];
        mel.compute_into(&tone[..16 * HOP], &mut short).unwrap();
        // Away from the edges the frames see the same samples; the clamp's
        // maximum is the tone's in both.
        for m in 0..N_MELS {
            for f in 2..14 {
                let (a, b) = (long[m * 32 + f], short[m * 16 + f]);
                assert!((a - b).abs() < 1e-4, "mel {m} frame {f}: {a} vs {b}");
            }
        }
    }
}
