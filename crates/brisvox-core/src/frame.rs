//! The audio frame: a short run of mono PCM16 samples with its rate explicit.
//!
//! Inside a call audio is 16 kHz mono PCM16 in 20 ms frames; at the edges
//! (transport, TTS output) frames may have other rates and durations (10, 20 or
//! 40 ms at 8 to 48 kHz). A frame stores its samples inline, so creating, moving
//! and dropping one never allocates: the media path stays allocation-free.

use std::time::Duration;

/// The largest frame: 40 ms at 48 kHz.
pub const MAX_FRAME_SAMPLES: usize = 1920;

/// The engine's internal sample rate.
pub const INTERNAL_RATE_HZ: u32 = 16_000;

/// The engine's internal frame duration in milliseconds.
pub const FRAME_MS: u32 = 20;

/// Samples in one internal frame (20 ms at 16 kHz).
pub const INTERNAL_FRAME_SAMPLES: usize = (INTERNAL_RATE_HZ * FRAME_MS / 1000) as usize;

/// Why a frame could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// More samples than a frame holds.
    #[error("frame of {actual} samples exceeds the maximum of {max}")]
    TooLong {
        /// Samples offered.
        actual: usize,
        /// [`MAX_FRAME_SAMPLES`].
        max: usize,
    },
    /// A sample rate of zero.
    #[error("sample rate must be positive")]
    ZeroRate,
}

/// Mono PCM16 samples at a known rate, stored inline.
#[derive(Clone)]
pub struct AudioFrame {
    samples: [i16; MAX_FRAME_SAMPLES],
    len: u16,
    sample_rate_hz: u32,
}

/// How long `samples` samples at `sample_rate_hz` (not zero) play, in whole
/// nanoseconds rounded down: what [`AudioFrame::duration`] gives, for audio
/// held in other containers.
pub fn duration_of(samples: usize, sample_rate_hz: u32) -> Duration {
    Duration::from_nanos(samples as u64 * 1_000_000_000 / u64::from(sample_rate_hz))
}

impl AudioFrame {
    /// A frame holding a copy of `samples` at `sample_rate_hz`.
    pub fn from_samples(samples: &[i16], sample_rate_hz: u32) -> Result<Self, FrameError> {
        if sample_rate_hz == 0 {
            return Err(FrameError::ZeroRate);
        }
        if samples.len() > MAX_FRAME_SAMPLES {
            return Err(FrameError::TooLong {
                actual: samples.len(),
                max: MAX_FRAME_SAMPLES,
            });
        }
        let mut frame = AudioFrame {
            samples: [0; MAX_FRAME_SAMPLES],
            // Cannot truncate: checked against MAX_FRAME_SAMPLES (< u16::MAX) above.
            len: samples.len() as u16,
            sample_rate_hz,
        };
        frame.samples[..samples.len()].copy_from_slice(samples);
        Ok(frame)
    }

    /// A frame of digital silence lasting `duration_ms` at `sample_rate_hz`.
    pub fn silence(duration_ms: u32, sample_rate_hz: u32) -> Result<Self, FrameError> {
        let n = (u64::from(sample_rate_hz) * u64::from(duration_ms) / 1000) as usize;
        if n > MAX_FRAME_SAMPLES {
            return Err(FrameError::TooLong {
                actual: n,
                max: MAX_FRAME_SAMPLES,
            });
        }
        Self::from_samples(&[0; MAX_FRAME_SAMPLES][..n], sample_rate_hz)
    }

    /// The samples.
    pub fn samples(&self) -> &[i16] {
        &self.samples[..usize::from(self.len)]
    }

    /// The samples, mutable (for in-place gain or mixing).
    pub fn samples_mut(&mut self) -> &mut [i16] {
        &mut self.samples[..usize::from(self.len)]
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the frame holds no samples.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sample rate in Hz.
    pub fn sample_rate_hz(&self) -> u32 {
        self.sample_rate_hz
    }

    /// How long the frame plays, from its sample count and rate (nanosecond exact).
    pub fn duration(&self) -> Duration {
        duration_of(usize::from(self.len), self.sample_rate_hz)
    }

    /// Whether every sample is zero (the benchmark client's "non-silent" test uses a threshold instead).
    pub fn is_digital_silence(&self) -> bool {
        self.samples().iter().all(|&s| s == 0)
    }
}

impl std::fmt::Debug for AudioFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioFrame")
            .field("len", &self.len)
            .field("sample_rate_hz", &self.sample_rate_hz)
            .finish_non_exhaustive()
    }
}

impl PartialEq for AudioFrame {
    fn eq(&self, other: &Self) -> bool {
        self.sample_rate_hz == other.sample_rate_hz && self.samples() == other.samples()
    }
}

/// A caller frame as the engine takes it in: 20 ms of 16 kHz mono PCM16
/// ([`INTERNAL_FRAME_SAMPLES`] samples), stored inline in 640 bytes, a sixth
/// of an [`AudioFrame`]. Each caller frame is moved several times between a
/// route's queue and the engine's AudioIn stage, 50 times a second per call;
/// at an `AudioFrame`'s 3.8 KB those copies were a tenth of the server's CPU
/// at 600 calls (bench/results/framework-profile-2026-12-03.md).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CallerFrame {
    samples: [i16; INTERNAL_FRAME_SAMPLES],
}

impl CallerFrame {
    /// A frame of `samples`: fewer than [`INTERNAL_FRAME_SAMPLES`] are padded
    /// with silence, more are cut.
    pub fn new(samples: &[i16]) -> Self {
        let mut frame = CallerFrame {
            samples: [0; INTERNAL_FRAME_SAMPLES],
        };
        let n = samples.len().min(INTERNAL_FRAME_SAMPLES);
        frame.samples[..n].copy_from_slice(&samples[..n]);
        frame
    }

    /// The samples (always [`INTERNAL_FRAME_SAMPLES`]).
    pub fn samples(&self) -> &[i16] {
        &self.samples
    }

    /// Number of samples: [`INTERNAL_FRAME_SAMPLES`].
    pub fn len(&self) -> usize {
        INTERNAL_FRAME_SAMPLES
    }

    /// Never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Sample rate in Hz: [`INTERNAL_RATE_HZ`].
    pub fn sample_rate_hz(&self) -> u32 {
        INTERNAL_RATE_HZ
    }

    /// How long the frame plays: [`FRAME_MS`].
    pub fn duration(&self) -> Duration {
        Duration::from_millis(u64::from(FRAME_MS))
    }
}

impl std::fmt::Debug for CallerFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerFrame").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_frame_is_20ms_at_16khz_padded_or_cut() {
        let short = CallerFrame::new(&[7; 100]);
        assert_eq!(
            (short.len(), short.samples()[99], short.samples()[100]),
            (320, 7, 0)
        );
        let long = CallerFrame::new(&[3; 400]);
        assert!(long.samples().iter().all(|&s| s == 3));
        assert_eq!(long.duration(), Duration::from_millis(20));
        let as_frame = AudioFrame::from_samples(long.samples(), long.sample_rate_hz()).unwrap();
        assert_eq!(
            (
                as_frame.samples(),
                as_frame.sample_rate_hz(),
                as_frame.duration()
            ),
            (long.samples(), long.sample_rate_hz(), long.duration())
        );
        assert!(std::mem::size_of::<CallerFrame>() * 6 <= std::mem::size_of::<AudioFrame>());
    }

    #[test]
    fn duration_follows_samples_and_rate() {
        for (rate, ms) in [
            (8_000, 20),
            (16_000, 10),
            (24_000, 20),
            (48_000, 40),
            (22_050, 20),
        ] {
            let f = AudioFrame::silence(ms, rate).unwrap();
            let expected = Duration::from_nanos(f.len() as u64 * 1_000_000_000 / u64::from(rate));
            assert_eq!(f.duration(), expected);
        }
        let f = AudioFrame::silence(20, 16_000).unwrap();
        assert_eq!(f.len(), INTERNAL_FRAME_SAMPLES);
        assert_eq!(f.duration(), Duration::from_millis(20));
    }

    #[test]
    fn a_frame_longer_than_the_maximum_is_refused() {
        let err = AudioFrame::from_samples(&[0; MAX_FRAME_SAMPLES + 1], 48_000).unwrap_err();
        assert_eq!(
            err,
            FrameError::TooLong {
                actual: MAX_FRAME_SAMPLES + 1,
                max: MAX_FRAME_SAMPLES
            }
        );
        assert_eq!(
            AudioFrame::silence(20, 0).unwrap_err(),
            FrameError::ZeroRate
        );
        assert!(AudioFrame::silence(50, 48_000).is_err());
    }

    #[test]
    fn samples_round_trip_and_equality_ignores_the_unused_tail() {
        let a = AudioFrame::from_samples(&[1, -2, 3], 8_000).unwrap();
        assert_eq!(a.samples(), &[1, -2, 3]);
        assert!(!a.is_digital_silence());
        let mut b = a.clone();
        b.samples_mut()[0] = 1;
        assert_eq!(a, b);
    }
}
