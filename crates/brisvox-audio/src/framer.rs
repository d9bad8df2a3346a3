//! TTS audio in, transport frames out.
//!
//! A TTS provider streams PCM16 chunks of any size at its own rate (16, 22.05,
//! 24 kHz ...). The transport wants frames of one duration (20 ms by default) at
//! its rate (8 kHz for telephony, 16 or 48 kHz for browsers). [`OutputFramer`]
//! resamples with a [`StreamResampler`] and cuts the result into
//! [`AudioFrame`]s for the pacer.
//!
//! Drive it per response: [`push`](OutputFramer::push) each chunk, take frames
//! with [`next_frame`](OutputFramer::next_frame) until it returns `None`; at the
//! end of the response [`flush`](OutputFramer::flush) drains the resampler and
//! pads the last partial frame with silence; on barge-in
//! [`reset`](OutputFramer::reset) drops everything.

use brisvox_core::AudioFrame;
use brisvox_core::frame::MAX_FRAME_SAMPLES;

use crate::resample::{ResamplerError, StreamResampler};

/// The transport frame duration unless configured otherwise.
pub const DEFAULT_FRAME_MS: u32 = 20;

/// Output the framer holds without growing its buffer, in milliseconds at the
/// transport rate. Longer chunks grow it once (an allocation).
pub const FRAMER_BUFFER_MS: u32 = 1_000;

/// Why a framer could not be built or fed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FramerError {
    /// The frame duration gives no samples or more than an [`AudioFrame`] holds.
    #[error("{frame_ms} ms at {rate_hz} Hz is {samples} samples; a frame holds 1..={max}")]
    BadFrameLength {
        /// Requested frame duration.
        frame_ms: u32,
        /// Transport rate.
        rate_hz: u32,
        /// Samples that would be per frame.
        samples: usize,
        /// [`MAX_FRAME_SAMPLES`].
        max: usize,
    },
    /// The resampler for this rate pair could not be built.
    #[error("no resampler for this rate")]
    Resampler(#[from] ResamplerError),
    /// A resampler handed to [`OutputFramer::switch_input`] outputs at
    /// another rate than the framer's.
    #[error("the resampler outputs {actual_hz} Hz; the framer's rate is {expected_hz} Hz")]
    OutputRateMismatch {
        /// The framer's output rate.
        expected_hz: u32,
        /// The resampler's.
        actual_hz: u32,
    },
}

/// Resamples TTS chunks to the transport rate and cuts them into frames.
///
/// Steady state (one TTS rate, chunks up to [`FRAMER_BUFFER_MS`]) does not
/// allocate. A chunk at a new rate builds a new resampler, which allocates and,
/// for downsampling to 8 kHz, costs up to a millisecond or two (see
/// [`StreamResampler`]); do that off the async workers.
#[derive(Debug)]
pub struct OutputFramer {
    resampler: StreamResampler,
    out_rate_hz: u32,
    frame_ms: u32,
    frame_samples: usize,
    /// Resampled samples; `pending[start..]` is not yet framed.
    pending: Vec<i16>,
    start: usize,
}

impl OutputFramer {
    /// A framer from `tts_rate_hz` to frames of `frame_ms` at `out_rate_hz`.
    pub fn new(tts_rate_hz: u32, out_rate_hz: u32, frame_ms: u32) -> Result<Self, FramerError> {
        let frame_samples = (u64::from(out_rate_hz) * u64::from(frame_ms) / 1000) as usize;
        if frame_samples == 0 || frame_samples > MAX_FRAME_SAMPLES {
            return Err(FramerError::BadFrameLength {
                frame_ms,
                rate_hz: out_rate_hz,
                samples: frame_samples,
                max: MAX_FRAME_SAMPLES,
            });
        }
        let resampler = StreamResampler::new(tts_rate_hz, out_rate_hz)?;
        let capacity = out_rate_hz as usize * FRAMER_BUFFER_MS as usize / 1000
            + resampler.max_flush_len()
            + 2 * frame_samples;
        Ok(OutputFramer {
            resampler,
            out_rate_hz,
            frame_ms,
            frame_samples,
            pending: Vec::with_capacity(capacity),
            start: 0,
        })
    }

    /// Transport rate in Hz.
    pub fn out_rate_hz(&self) -> u32 {
        self.out_rate_hz
    }

    /// Frame duration in milliseconds.
    pub fn frame_ms(&self) -> u32 {
        self.frame_ms
    }

    /// Samples per frame.
    pub fn frame_samples(&self) -> usize {
        self.frame_samples
    }

    /// Whole frames ready to take.
    pub fn ready_frames(&self) -> usize {
        (self.pending.len() - self.start) / self.frame_samples
    }

    /// The resampler in use (its delay is part of the output latency).
    pub fn resampler(&self) -> &StreamResampler {
        &self.resampler
    }

    /// The TTS rate the framer takes without building a resampler, in Hz.
    pub fn in_rate_hz(&self) -> u32 {
        self.resampler.in_rate_hz()
    }

    /// Switches to TTS audio at `next`'s input rate: drains the old
    /// resampler's tail into the frames, then uses `next` (which must output
    /// at [`out_rate_hz`](Self::out_rate_hz)). Build `next` off the async
    /// workers: that is the expensive part of a rate change.
    pub fn switch_input(&mut self, next: StreamResampler) -> Result<(), FramerError> {
        if next.out_rate_hz() != self.out_rate_hz {
            return Err(FramerError::OutputRateMismatch {
                expected_hz: self.out_rate_hz,
                actual_hz: next.out_rate_hz(),
            });
        }
        self.compact();
        self.resampler.flush(&mut self.pending);
        self.resampler = next;
        Ok(())
    }

    /// Adds a TTS chunk at `rate_hz`. A rate different from the previous
    /// chunk's drains the old resampler's tail first and builds a new one
    /// inline (see [`switch_input`](Self::switch_input) to build it elsewhere).
    pub fn push(&mut self, samples: &[i16], rate_hz: u32) -> Result<(), FramerError> {
        if rate_hz != self.resampler.in_rate_hz() {
            let next = StreamResampler::new(rate_hz, self.out_rate_hz)?;
            self.switch_input(next)?;
        }
        self.compact();
        self.resampler.process_into(samples, &mut self.pending);
        Ok(())
    }

    /// The next whole frame, if one is ready.
    pub fn next_frame(&mut self) -> Option<AudioFrame> {
        let end = self.start + self.frame_samples;
        if end > self.pending.len() {
            return None;
        }
        let frame = AudioFrame::from_samples(&self.pending[self.start..end], self.out_rate_hz)
            // Cannot fail: frame_samples is in 1..=MAX_FRAME_SAMPLES (checked in new) and the rate is positive.
            .expect("frame length checked at construction");
        self.start = end;
        Some(frame)
    }

    /// Ends a response: drains the resampler's tail and pads the last partial
    /// frame with silence, so every sample pushed leaves in a whole frame.
    /// Take the frames with [`next_frame`](Self::next_frame).
    pub fn flush(&mut self) {
        self.compact();
        self.resampler.flush(&mut self.pending);
        let partial = (self.pending.len() - self.start) % self.frame_samples;
        if partial != 0 {
            let padded = self.pending.len() + self.frame_samples - partial;
            self.pending.resize(padded, 0);
        }
    }

    /// Drops all buffered audio and resampler state (barge-in).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.start = 0;
        self.resampler.reset();
    }

    /// Moves the unframed samples to the front of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.pending.copy_within(self.start.., 0);
            self.pending.truncate(self.pending.len() - self.start);
            self.start = 0;
        }
    }
}
