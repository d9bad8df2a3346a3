//! Streaming PCM16 resampling between the call's rates, on rubato.
//!
//! One [`StreamResampler`] per session and direction (for example 8 kHz caller
//! audio to the engine's 16 kHz, or 24 kHz TTS audio to an 8 kHz telephony
//! transport). Feed it PCM16 in pieces of any size with
//! [`process_into`](StreamResampler::process_into); at the end of an utterance
//! [`flush`](StreamResampler::flush) drains the partial block and the filter
//! tail; on barge-in [`reset`](StreamResampler::reset) drops everything.
//!
//! # Filters
//!
//! - **FFT** (rubato `Fft`, exact rational ratio) for every pair except
//!   downsampling to 8 kHz. Its block is 160 samples at the *lower* of the two
//!   rates, rounded up to the pair's exact rational step; shorter blocks cut the
//!   passband (telephony needs it flat to 3.4 kHz). The filter delay is half a
//!   block: 10 ms when the lower rate is 8 kHz, 5 ms at 16 kHz, 3.3 ms at
//!   24 kHz, 6.7 ms for 22.05 kHz against 24/48 kHz, 10 ms for 22.05 kHz against 16 kHz.
//! - **Windowed sinc** (rubato `Async::new_sinc`: BlackmanHarris2 window,
//!   cubic interpolation, 128 oversampling phases, automatic cutoff) for
//!   downsampling to 8 kHz, where the FFT cannot be flat to 3.4 kHz with less
//!   than 10 ms of delay. The length per source rate ([`sinc_len_for`]) is the
//!   shortest that meets the bar (|gain| <= 0.2 dB at 3.4 kHz, >= -2 dB at
//!   3.6 kHz, >= 55 dB rejection of a 4.4 kHz tone), except at 48 kHz, where a
//!   longer filter gives a margin. Delay: half the filter at the input rate less
//!   one output sample (4.5 ms from 24 kHz, 5.9 ms from 16 kHz, 5.2 ms from 48 kHz).
//! - **Identity** when both rates are equal: samples pass through unchanged.
//!
//! Output is produced per whole block: input aligned to the block adds no
//! buffering, otherwise up to one block waits for the next call.

use std::time::Duration;

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{
    Async, Fft, FixedAsync, FixedSync, Resampler, SincInterpolationParameters,
    SincInterpolationType, WindowFunction,
};

use crate::pcm::{f32_to_i16, i16_to_f32};

/// Samples per block at the lower rate of an FFT pair (20 ms at 8 kHz).
pub const FFT_BLOCK_AT_LOWER_RATE: usize = 160;

/// Rate below which downsampling uses the windowed sinc (the telephony rate).
pub const SINC_OUTPUT_RATE_HZ: u32 = 8_000;

/// Oversampling phases of the sinc table.
pub const SINC_OVERSAMPLING: usize = 128;

/// Why a resampler could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResamplerError {
    /// A rate of zero.
    #[error("sample rates must be positive (in {in_rate_hz} Hz, out {out_rate_hz} Hz)")]
    ZeroRate {
        /// Input rate.
        in_rate_hz: u32,
        /// Output rate.
        out_rate_hz: u32,
    },
    /// rubato refused the configuration.
    #[error("rubato cannot resample {in_rate_hz} Hz to {out_rate_hz} Hz")]
    Construction {
        /// Input rate.
        in_rate_hz: u32,
        /// Output rate.
        out_rate_hz: u32,
        /// rubato's reason.
        #[source]
        source: rubato::ResamplerConstructionError,
    },
}

/// Which filter a [`StreamResampler`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResamplerKind {
    /// Same rate in and out.
    Identity,
    /// rubato's FFT resampler.
    Fft,
    /// rubato's windowed-sinc resampler with this filter length.
    Sinc {
        /// Taps of the sinc filter.
        sinc_len: usize,
    },
}

/// The sinc length used when downsampling from `in_rate_hz` to 8 kHz.
///
/// The shortest length (in steps of 16) meeting the bar for each source rate,
/// from `tests/sinc_design.rs::probe_sinc_length_sweep` (f32, 1 s tones):
///
/// | source | length | 3.4 kHz | 3.6 kHz | 4.4 kHz alias | next shorter fails with |
/// |---|---|---|---|---|---|
/// | 16 kHz | 192 | -0.05 dB | -1.70 dB | -139 dB | 176: -2.54 dB at 3.6 kHz |
/// | 22.05 kHz | 208 | -0.15 dB | -1.89 dB | -112 dB | 192: -2.52 dB at 3.6 kHz |
/// | 24 kHz | 224 | -0.12 dB | -1.60 dB | -102 dB | 208: -2.11 dB at 3.6 kHz |
/// | 44.1 kHz | 352 | -0.08 dB | -0.92 dB | -57.6 dB | 336: -54.5 dB alias |
/// | 48 kHz | 512 | -0.00 dB | -0.17 dB | -82.3 dB | 384 meets it at -55.6 dB: no margin |
///
/// Other source rates take the length of the next listed rate above them;
/// above 48 kHz the length scales with the rate (untuned).
pub fn sinc_len_for(in_rate_hz: u32) -> usize {
    match in_rate_hz {
        0..=16_000 => 192,
        16_001..=22_050 => 208,
        22_051..=24_000 => 224,
        24_001..=44_100 => 352,
        48_001.. => (512 * in_rate_hz as usize)
            .div_ceil(48_000)
            .next_multiple_of(8),
        _ => 512,
    }
}

enum Engine {
    Identity,
    Fft(Box<Fft<f32>>),
    Sinc(Box<Async<f32>>),
}

impl Engine {
    fn resampler(&mut self) -> Option<&mut dyn Resampler<f32>> {
        match self {
            Engine::Identity => None,
            Engine::Fft(r) => Some(r.as_mut()),
            Engine::Sinc(r) => Some(r.as_mut()),
        }
    }
}

/// A streaming PCM16 resampler for one direction of one session.
///
/// # Cost
///
/// Construction allocates the filter and all buffers, and is the only step that
/// allocates. Measured (`bench/results/resampler.md`, release, a shared 2-core
/// AMD EPYC): FFT pairs construct in 15-62 µs; the sinc pairs (downsampling to
/// 8 kHz) in 1.1 ms (16 kHz), 1.7 ms (24 kHz) and 4.7 ms (48 kHz), because each
/// instance computes its own 128-phase table of 128 x `sinc_len` x 4 bytes
/// (98-262 KB; 107-280 KB retained in all, against 19-51 KB for FFT pairs,
/// `tests/resample_memory.rs`). Build sinc resamplers off the async workers
/// (for example in `spawn_blocking` at call setup): a millisecond is a stall
/// for a tokio worker. Processing one 20 ms frame takes 1.4-6.4 µs (FFT) or
/// about 8.6 µs (sinc) on the same machine and runs inline.
pub struct StreamResampler {
    engine: Engine,
    kind: ResamplerKind,
    in_rate_hz: u32,
    out_rate_hz: u32,
    /// Input samples per block.
    block_in: usize,
    /// Input waiting for a whole block.
    pending: Vec<f32>,
    /// Output scratch for one block.
    block_out: Vec<f32>,
    /// Delay of the filter in output samples (may be fractional for sinc).
    delay_out_samples: f64,
    /// Input samples taken since the last flush or reset.
    taken_in: u64,
    /// Output samples produced since the last flush or reset.
    given_out: u64,
}

impl std::fmt::Debug for StreamResampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResampler")
            .field("kind", &self.kind)
            .field("in_rate_hz", &self.in_rate_hz)
            .field("out_rate_hz", &self.out_rate_hz)
            .field("block_in", &self.block_in)
            .finish_non_exhaustive()
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn fft_engine(in_hz: u32, out_hz: u32) -> Result<Fft<f32>, rubato::ResamplerConstructionError> {
    let g = gcd(in_hz, out_hz) as usize;
    let lower = in_hz.min(out_hz) as usize;
    // Whole rational steps so that one block at the lower rate is >= 160 samples.
    let steps = FFT_BLOCK_AT_LOWER_RATE.div_ceil(lower / g);
    let block_in = steps * (in_hz as usize / g);
    Fft::new_custom(
        in_hz as usize,
        out_hz as usize,
        block_in,
        1,
        1,
        WindowFunction::BlackmanHarris2,
        FixedSync::Both,
    )
}

fn sinc_engine(in_hz: u32, out_hz: u32) -> Result<Async<f32>, rubato::ResamplerConstructionError> {
    let params =
        SincInterpolationParameters::new(sinc_len_for(in_hz), WindowFunction::BlackmanHarris2)
            .oversampling_factor(SINC_OVERSAMPLING)
            .interpolation(SincInterpolationType::Cubic);
    // One block is 20 ms of input, the same as 160 samples at 8 kHz.
    let block_in = FFT_BLOCK_AT_LOWER_RATE * in_hz as usize / out_hz as usize;
    Async::new_sinc(
        f64::from(out_hz) / f64::from(in_hz),
        1.0,
        &params,
        block_in,
        1,
        FixedAsync::Input,
    )
}

impl StreamResampler {
    /// A resampler from `in_rate_hz` to `out_rate_hz` (mono). See the type docs
    /// for the construction cost: call this off the async workers for sinc pairs.
    pub fn new(in_rate_hz: u32, out_rate_hz: u32) -> Result<Self, ResamplerError> {
        if in_rate_hz == 0 || out_rate_hz == 0 {
            return Err(ResamplerError::ZeroRate {
                in_rate_hz,
                out_rate_hz,
            });
        }
        let wrap = |source| ResamplerError::Construction {
            in_rate_hz,
            out_rate_hz,
            source,
        };
        let (engine, kind) = if in_rate_hz == out_rate_hz {
            (Engine::Identity, ResamplerKind::Identity)
        } else if out_rate_hz == SINC_OUTPUT_RATE_HZ && in_rate_hz > out_rate_hz {
            let sinc_len = sinc_len_for(in_rate_hz);
            let engine = sinc_engine(in_rate_hz, out_rate_hz).map_err(wrap)?;
            (
                Engine::Sinc(Box::new(engine)),
                ResamplerKind::Sinc { sinc_len },
            )
        } else {
            let engine = fft_engine(in_rate_hz, out_rate_hz).map_err(wrap)?;
            (Engine::Fft(Box::new(engine)), ResamplerKind::Fft)
        };
        Ok(Self::with_engine(engine, kind, in_rate_hz, out_rate_hz))
    }

    fn with_engine(
        mut engine: Engine,
        kind: ResamplerKind,
        in_rate_hz: u32,
        out_rate_hz: u32,
    ) -> Self {
        let delay_out_samples = match (&engine, kind) {
            // Half the filter at the input rate, less one output sample: rubato's
            // first output is one output step past its start index (the click
            // test in tests/resample.rs pins this to a quarter sample).
            (_, ResamplerKind::Sinc { sinc_len }) => {
                sinc_len as f64 / 2.0 * f64::from(out_rate_hz) / f64::from(in_rate_hz) - 1.0
            }
            // Half an FFT block; rubato's output_delay() rounds odd blocks down.
            (Engine::Fft(fft), _) => fft.fft_size_out() as f64 / 2.0,
            _ => 0.0,
        };
        let (block_in, block_out_max) = engine
            .resampler()
            .map_or((0, 0), |r| (r.input_frames_max(), r.output_frames_max()));
        StreamResampler {
            engine,
            kind,
            in_rate_hz,
            out_rate_hz,
            block_in,
            pending: Vec::with_capacity(block_in),
            block_out: vec![0.0; block_out_max],
            delay_out_samples,
            taken_in: 0,
            given_out: 0,
        }
    }

    /// Input rate in Hz.
    pub fn in_rate_hz(&self) -> u32 {
        self.in_rate_hz
    }

    /// Output rate in Hz.
    pub fn out_rate_hz(&self) -> u32 {
        self.out_rate_hz
    }

    /// The filter in use.
    pub fn kind(&self) -> ResamplerKind {
        self.kind
    }

    /// The filter's delay: a click at input time `t` appears at output time `t + delay()`.
    pub fn delay(&self) -> Duration {
        Duration::from_secs_f64(self.delay_out_samples / f64::from(self.out_rate_hz))
    }

    /// Input samples per block: output is produced per whole block (0 for identity).
    pub fn block_len_in(&self) -> usize {
        self.block_in
    }

    /// Input samples buffered until their block is complete.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// The most output samples one call with `input_len` samples can append:
    /// reserve this in `out` and [`process_into`](Self::process_into) never allocates.
    pub fn max_output_len(&self, input_len: usize) -> usize {
        if self.block_in == 0 {
            return input_len;
        }
        (self.pending.len() + input_len).div_ceil(self.block_in) * self.block_out.len()
    }

    /// The most samples [`flush`](Self::flush) can append.
    pub fn max_flush_len(&self) -> usize {
        let tail_blocks =
            (self.delay_out_samples as usize).div_ceil(self.block_out.len().max(1)) + 2;
        tail_blocks * self.block_out.len()
    }

    /// Resamples `input`, appending every whole block's output to `out`.
    ///
    /// Does not allocate when `out` has room for
    /// [`max_output_len(input.len())`](Self::max_output_len) more samples.
    pub fn process_into(&mut self, input: &[i16], out: &mut Vec<i16>) {
        if matches!(self.engine, Engine::Identity) {
            out.extend_from_slice(input);
            return;
        }
        self.taken_in += input.len() as u64;
        let mut rest = input;
        while !rest.is_empty() {
            let room = self.block_in - self.pending.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.pending.extend(now.iter().map(|&s| i16_to_f32(s)));
            rest = later;
            if self.pending.len() == self.block_in {
                self.run_block(out);
            }
        }
    }

    /// Drains the end of an utterance: the partial block and the filter tail,
    /// padded with silence, appended to `out`. Afterwards the output of this
    /// utterance holds `delay()` of leading filter delay plus exactly
    /// `ceil(input * out_rate / in_rate)` samples, and the resampler starts
    /// afresh for the next one.
    pub fn flush(&mut self, out: &mut Vec<i16>) {
        if matches!(self.engine, Engine::Identity) || self.taken_in == 0 {
            self.reset();
            return;
        }
        let wanted = self.delay_out_samples.round() as u64
            + (self.taken_in * u64::from(self.out_rate_hz)).div_ceil(u64::from(self.in_rate_hz));
        let start = out.len();
        while self.given_out < wanted {
            self.pending.resize(self.block_in, 0.0);
            self.run_block(out);
        }
        let excess = (self.given_out - wanted) as usize;
        out.truncate(out.len() - excess.min(out.len() - start));
        self.reset();
    }

    /// Drops buffered input and filter state (barge-in): the next sample starts a new stream.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.taken_in = 0;
        self.given_out = 0;
        if let Some(r) = self.engine.resampler() {
            r.reset();
        }
    }

    /// Runs the full block in `pending`.
    fn run_block(&mut self, out: &mut Vec<i16>) {
        let Some(r) = self.engine.resampler() else {
            return;
        };
        let input = InterleavedSlice::new(&self.pending[..], 1, self.block_in)
            // Cannot fail: `pending` holds exactly one block of one channel.
            .expect("one mono block");
        let frames_out = self.block_out.len();
        let mut output = InterleavedSlice::new_mut(&mut self.block_out[..], 1, frames_out)
            // Cannot fail: `block_out` was sized to output_frames_max for one channel.
            .expect("one mono output block");
        let (_, produced) = r
            .process_into_buffer(&input, &mut output, None)
            // Cannot fail: channel count and buffer sizes match what rubato asked for at construction.
            .expect("buffers sized by the resampler");
        out.extend(self.block_out[..produced].iter().map(|&s| f32_to_i16(s)));
        self.given_out += produced as u64;
        self.pending.clear();
    }
}
