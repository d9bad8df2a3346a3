//! Cutting a stream's PCM16 frames into Silero windows. Sans-IO, allocation-free.
//!
//! Calls carry 20 ms frames (320 samples at 16 kHz, 160 at 8 kHz); Silero takes
//! 32 ms windows (512 / 256 samples) of f32 in [-1, 1). A [`WindowAssembler`]
//! collects frames of any length and hands out each window as soon as it is whole,
//! numbered from 0 (the `seq` the [`VadService`](super::service::VadService) and
//! [`VadDetector::handle_seq`](super::detector::VadDetector::handle_seq) use), so
//! window `seq` covers samples `seq * n .. (seq + 1) * n` of the stream.

use super::silero::SileroRate;

/// Longest window (16 kHz).
const MAX_WINDOW: usize = 512;

/// Collects PCM16 samples into whole Silero windows of f32.
#[derive(Debug, Clone)]
pub struct WindowAssembler {
    window: usize,
    buf: [f32; MAX_WINDOW],
    filled: usize,
    next_seq: u64,
}

impl WindowAssembler {
    /// An empty assembler for windows at `rate`.
    pub fn new(rate: SileroRate) -> Self {
        WindowAssembler {
            window: rate.window_samples(),
            buf: [0.0; MAX_WINDOW],
            filled: 0,
            next_seq: 0,
        }
    }

    /// Adds samples; calls `on_window(seq, window)` for every window completed by
    /// them, in order. Samples of an unfinished window are kept for the next push.
    pub fn push(&mut self, pcm: &[i16], mut on_window: impl FnMut(u64, &[f32])) {
        for chunk in pcm.chunks(self.window) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let take = rest.len().min(self.window - self.filled);
                for (dst, &s) in self.buf[self.filled..self.filled + take]
                    .iter_mut()
                    .zip(&rest[..take])
                {
                    *dst = f32::from(s) / 32768.0;
                }
                self.filled += take;
                rest = &rest[take..];
                if self.filled == self.window {
                    on_window(self.next_seq, &self.buf[..self.window]);
                    self.next_seq += 1;
                    self.filled = 0;
                }
            }
        }
    }

    /// Samples waiting for the next window.
    pub fn pending_samples(&self) -> usize {
        self.filled
    }

    /// The `seq` the next completed window will carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Drops a partial window and restarts numbering at 0 (a new stream).
    pub fn reset(&mut self) {
        self.filled = 0;
        self.next_seq = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| (i as i32 * 7 % 65_536 - 32_768) as i16)
            .collect()
    }

    #[test]
    fn frames_of_any_size_give_the_same_windows_in_order() {
        for rate in [SileroRate::Hz8000, SileroRate::Hz16000] {
            let n = rate.window_samples();
            let pcm = ramp(n * 7 + 100);
            for frame in [1, 160, 320, 511, 512, 513, 2000] {
                let mut a = WindowAssembler::new(rate);
                let mut got: Vec<(u64, Vec<f32>)> = Vec::new();
                for f in pcm.chunks(frame) {
                    a.push(f, |seq, w| got.push((seq, w.to_vec())));
                }
                assert_eq!(got.len(), 7, "{rate:?} frame {frame}");
                for (k, (seq, w)) in got.iter().enumerate() {
                    assert_eq!(*seq, k as u64);
                    let expected: Vec<f32> = pcm[k * n..(k + 1) * n]
                        .iter()
                        .map(|&s| f32::from(s) / 32768.0)
                        .collect();
                    assert_eq!(w, &expected);
                }
                assert_eq!(a.pending_samples(), 100);
                assert_eq!(a.next_seq(), 7);
            }
        }
    }

    #[test]
    fn twenty_ms_frames_complete_a_window_every_32_ms() {
        // 16 kHz, 320-sample frames: windows end after frames 2, 4, 5, 7, 8, 10
        // (every 1.6 frames; 5 windows = 8 frames = 160 ms exactly).
        let mut a = WindowAssembler::new(SileroRate::Hz16000);
        let mut completed_after = Vec::new();
        for frame in 1..=10 {
            a.push(&[0; 320], |_, _| completed_after.push(frame));
        }
        assert_eq!(completed_after, vec![2, 4, 5, 7, 8, 10]);
        a.reset();
        assert_eq!((a.pending_samples(), a.next_seq()), (0, 0));
    }
}
