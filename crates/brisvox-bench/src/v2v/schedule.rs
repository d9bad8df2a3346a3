//! The absolute send schedule: frame `k` of the stream covers audio time
//! `[k·20, (k+1)·20)` ms and leaves at `begin + (k+1)·20 ms`, the moment its last
//! sample has been spoken. Deadlines are absolute, so a late frame does not shift
//! the ones after it (no drift).

use std::time::Duration;

/// Frame length on the wire, milliseconds.
pub(crate) const FRAME_MS: u64 = 20;

/// Samples per 20 ms frame at `rate_hz`.
pub(crate) fn frame_samples(rate_hz: u32) -> usize {
    (rate_hz as usize * FRAME_MS as usize) / 1000
}

/// Offset from `begin` at which frame `k` (0-based) is due.
pub(crate) fn deadline(k: u64) -> Duration {
    Duration::from_millis((k + 1) * FRAME_MS)
}

/// Splits PCM16 samples into 20 ms frames of little-endian bytes; the last frame
/// is padded with digital silence.
pub(crate) fn pcm16_frames(samples: &[i16], rate_hz: u32) -> Vec<Vec<u8>> {
    let n = frame_samples(rate_hz);
    samples
        .chunks(n)
        .map(|chunk| {
            let mut bytes = Vec::with_capacity(n * 2);
            for s in chunk {
                bytes.extend_from_slice(&s.to_le_bytes());
            }
            bytes.resize(n * 2, 0);
            bytes
        })
        .collect()
}

/// Lateness of a send: how long after its deadline the frame left, zero if early.
pub(crate) fn lateness(deadline_from_begin: Duration, sent_from_begin: Duration) -> Duration {
    sent_from_begin.saturating_sub(deadline_from_begin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_k_leaves_once_its_last_sample_is_spoken() {
        assert_eq!(deadline(0), Duration::from_millis(20));
        assert_eq!(deadline(1), Duration::from_millis(40));
        assert_eq!(deadline(499), Duration::from_secs(10));
    }

    #[test]
    fn deadlines_do_not_drift_after_a_late_frame() {
        // Frame 3 went out 35 ms late; frame 4 is still due at 100 ms from begin.
        let late = lateness(deadline(3), deadline(3) + Duration::from_millis(35));
        assert_eq!(late, Duration::from_millis(35));
        assert_eq!(deadline(4), Duration::from_millis(100));
        assert_eq!(
            lateness(deadline(4), Duration::from_millis(90)),
            Duration::ZERO
        );
    }

    #[test]
    fn frames_cover_the_audio_and_pad_the_tail() {
        for rate in [8000u32, 16000, 24000, 48000] {
            let n = frame_samples(rate);
            assert_eq!(n as u32 * 50, rate);
            let samples: Vec<i16> = (0..(n * 3 + 7) as i32).map(|i| i as i16).collect();
            let frames = pcm16_frames(&samples, rate);
            assert_eq!(frames.len(), 4);
            assert!(frames.iter().all(|f| f.len() == n * 2));
            assert_eq!(&frames[1][..2], &(n as i16).to_le_bytes());
            assert_eq!(&frames[3][14..], &vec![0u8; n * 2 - 14][..]);
        }
    }
}
