//! The per-call 8 s audio ring that Smart Turn analyses are cut from.
//!
//! A call pushes every 20 ms frame of caller audio (16 kHz PCM16) into its
//! [`SmartTurnRing`]; when the engine wants a verdict it copies the current turn's
//! audio out with [`snapshot_into`](SmartTurnRing::snapshot_into) (a memcpy of at
//! most 256 KB on the caller's thread) and hands the copy to the executor. The ring
//! is allocated once, at call start; pushing and snapshotting never allocate.
//!
//! The span a snapshot covers mirrors Pipecat's `BaseSmartTurn`:
//!
//! - The analysis starts at the utterance's start minus `pre_speech_ms` (500 ms)
//!   minus the VAD's start delay. Pipecat stamps the first frame the VAD calls
//!   speech and keeps the frames from that stamp minus both delays; here
//!   [`mark_speech_start`](SmartTurnRing::mark_speech_start) is called when the VAD
//!   confirms speech, right after the frame that confirmed it was pushed, and the
//!   look-back is counted from that frame's first sample.
//! - Only the first start of a turn counts: a pause that the model judged
//!   incomplete keeps the turn going, and the next analysis again reaches back to
//!   the turn's first words (Pipecat clears its buffer only when a turn ends).
//! - [`end_turn`](SmartTurnRing::end_turn) forgets the utterance and everything
//!   before now (Pipecat's `clear`): the next turn's audio starts fresh.
//! - Without a marked start a snapshot holds everything since the last
//!   `end_turn` (Pipecat: `speech_start_time == 0` keeps the whole buffer).
//! - At most the last 8 s: the model's window.

use super::features::{SAMPLE_RATE_HZ, WINDOW_SAMPLES};

/// Samples in one 20 ms frame at 16 kHz, the engine's unit of audio.
pub const FRAME_SAMPLES: usize = 320;
/// Capacity of the ring: 8 s at 16 kHz, the model's window.
pub const RING_SAMPLES: usize = WINDOW_SAMPLES;
/// Audio kept before the utterance's start, in ms (Pipecat's `pre_speech_ms`).
pub const DEFAULT_PRE_SPEECH_MS: u32 = 500;

const SAMPLES_PER_MS: u64 = SAMPLE_RATE_HZ as u64 / 1000;

/// The last 8 s of one call's audio and where the current turn began.
#[derive(Clone)]
pub struct SmartTurnRing {
    buf: Box<[i16]>,
    /// Samples pushed since the ring was created (the position of the next sample).
    written: u64,
    /// Position of the first sample of the most recent push.
    last_push_start: u64,
    /// Snapshots never reach before this position (set by `end_turn`).
    floor: u64,
    /// Where the current turn's analysis window starts, once speech was marked.
    utterance_start: Option<u64>,
    pre_speech_ms: u32,
}

impl std::fmt::Debug for SmartTurnRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmartTurnRing")
            .field("written", &self.written)
            .field("floor", &self.floor)
            .field("utterance_start", &self.utterance_start)
            .field("pre_speech_ms", &self.pre_speech_ms)
            .finish_non_exhaustive()
    }
}

impl Default for SmartTurnRing {
    fn default() -> Self {
        Self::new()
    }
}

impl SmartTurnRing {
    /// An empty ring (allocates its 256 KB here, once) with Pipecat's 500 ms pre-speech.
    pub fn new() -> Self {
        Self::with_pre_speech_ms(DEFAULT_PRE_SPEECH_MS)
    }

    /// An empty ring keeping `pre_speech_ms` of audio before each utterance.
    pub fn with_pre_speech_ms(pre_speech_ms: u32) -> Self {
        SmartTurnRing {
            buf: vec![0; RING_SAMPLES].into_boxed_slice(),
            written: 0,
            last_push_start: 0,
            floor: 0,
            utterance_start: None,
            pre_speech_ms,
        }
    }

    /// Appends caller audio (16 kHz mono PCM16; normally one 20 ms frame).
    ///
    /// Never allocates. A push longer than the ring keeps its last 8 s.
    pub fn push(&mut self, pcm: &[i16]) {
        self.last_push_start = self.written;
        let kept = &pcm[pcm.len().saturating_sub(RING_SAMPLES)..];
        let skipped = (pcm.len() - kept.len()) as u64;
        let at = ((self.written + skipped) % RING_SAMPLES as u64) as usize;
        let first = kept.len().min(RING_SAMPLES - at);
        self.buf[at..at + first].copy_from_slice(&kept[..first]);
        self.buf[..kept.len() - first].copy_from_slice(&kept[first..]);
        self.written += pcm.len() as u64;
    }

    /// Marks the start of the caller's speech: call it when the VAD confirms speech,
    /// after pushing the frame on which it did. `vad_start_delay_ms` is how long the
    /// VAD needed to confirm (its start delay, Pipecat's `start_secs`).
    ///
    /// The analysis window then starts `pre_speech_ms + vad_start_delay_ms` before
    /// that frame. Ignored when the current turn already has a start.
    pub fn mark_speech_start(&mut self, vad_start_delay_ms: u32) {
        if self.utterance_start.is_some() {
            return;
        }
        let lookback = u64::from(self.pre_speech_ms + vad_start_delay_ms) * SAMPLES_PER_MS;
        let start = self
            .last_push_start
            .saturating_sub(lookback)
            .max(self.floor);
        self.utterance_start = Some(start);
    }

    /// Ends the turn: forgets its start and all audio pushed so far (Pipecat's
    /// `clear`, on a complete verdict or when the turn ends for another reason).
    pub fn end_turn(&mut self) {
        self.utterance_start = None;
        self.floor = self.written;
    }

    /// Whether the current turn has a marked speech start.
    pub fn has_speech_start(&self) -> bool {
        self.utterance_start.is_some()
    }

    /// Samples pushed since the ring was created.
    pub fn samples_written(&self) -> u64 {
        self.written
    }

    /// Number of samples a snapshot would hold now (at most [`RING_SAMPLES`]).
    pub fn snapshot_len(&self) -> usize {
        (self.written - self.snapshot_start()) as usize
    }

    fn snapshot_start(&self) -> u64 {
        let oldest_kept = self.written.saturating_sub(RING_SAMPLES as u64);
        self.utterance_start
            .unwrap_or(self.floor)
            .max(self.floor)
            .max(oldest_kept)
    }

    /// Copies the current turn's audio (oldest first) into `out`, replacing its
    /// contents, and returns the number of samples.
    ///
    /// Does not allocate when `out` already has [`RING_SAMPLES`] capacity (see
    /// [`snapshot_buffer`]); costs one or two memcpys of at most 256 KB.
    pub fn snapshot_into(&self, out: &mut Vec<i16>) -> usize {
        out.clear();
        let len = self.snapshot_len();
        let at = (self.snapshot_start() % RING_SAMPLES as u64) as usize;
        let first = len.min(RING_SAMPLES - at);
        out.extend_from_slice(&self.buf[at..at + first]);
        out.extend_from_slice(&self.buf[..len - first]);
        len
    }
}

/// An empty buffer with room for a full snapshot, so `snapshot_into` never grows it.
pub fn snapshot_buffer() -> Vec<i16> {
    Vec::with_capacity(RING_SAMPLES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frame `k` holds the samples k * 320 .. (k + 1) * 320 as values (mod 2^15).
    fn frame(k: usize) -> Vec<i16> {
        (0..FRAME_SAMPLES)
            .map(|i| ((k * FRAME_SAMPLES + i) % 32_768) as i16)
            .collect()
    }

    fn push_frames(ring: &mut SmartTurnRing, range: std::ops::Range<usize>) {
        for k in range {
            ring.push(&frame(k));
        }
    }

    fn snapshot(ring: &SmartTurnRing) -> Vec<i16> {
        let mut out = snapshot_buffer();
        ring.snapshot_into(&mut out);
        out
    }

    /// The samples of frames `range` as pushed.
    fn frames(range: std::ops::Range<usize>) -> Vec<i16> {
        range.flat_map(frame).collect()
    }

    #[test]
    fn without_a_speech_start_the_snapshot_holds_everything_since_the_start() {
        let mut ring = SmartTurnRing::new();
        assert_eq!(snapshot(&ring), Vec::<i16>::new());
        push_frames(&mut ring, 0..10);
        assert_eq!(snapshot(&ring), frames(0..10));
        assert_eq!(ring.snapshot_len(), 3200);
    }

    #[test]
    fn the_window_starts_pre_speech_plus_vad_delay_before_the_confirming_frame() {
        let mut ring = SmartTurnRing::new();
        push_frames(&mut ring, 0..100);
        // The VAD confirms speech on frame 100 (200 ms start delay): Pipecat keeps
        // frames from 100 - (500 + 200) / 20 = 65 on.
        ring.push(&frame(100));
        ring.mark_speech_start(200);
        push_frames(&mut ring, 101..150);
        assert_eq!(snapshot(&ring), frames(65..150));
    }

    #[test]
    fn only_the_first_start_of_a_turn_counts() {
        let mut ring = SmartTurnRing::new();
        push_frames(&mut ring, 0..60);
        ring.mark_speech_start(200);
        push_frames(&mut ring, 60..120);
        ring.mark_speech_start(200); // speech again after an incomplete pause
        assert!(ring.has_speech_start());
        assert_eq!(snapshot(&ring), frames(24..120));
    }

    #[test]
    fn ending_the_turn_drops_its_audio_and_the_next_turn_starts_fresh() {
        let mut ring = SmartTurnRing::new();
        push_frames(&mut ring, 0..60);
        ring.mark_speech_start(200);
        push_frames(&mut ring, 60..80);
        ring.end_turn();
        assert!(!ring.has_speech_start());
        assert_eq!(ring.snapshot_len(), 0);
        push_frames(&mut ring, 80..90);
        // The look-back (35 frames) would reach into the old turn: clipped to its end.
        ring.mark_speech_start(200);
        push_frames(&mut ring, 90..95);
        assert_eq!(snapshot(&ring), frames(80..95));
    }

    #[test]
    fn a_start_near_the_beginning_of_the_call_is_clipped_to_sample_zero() {
        let mut ring = SmartTurnRing::with_pre_speech_ms(500);
        push_frames(&mut ring, 0..5);
        ring.mark_speech_start(200);
        assert_eq!(snapshot(&ring), frames(0..5));
    }

    #[test]
    fn a_long_turn_keeps_the_last_8_s_across_the_wrap() {
        let mut ring = SmartTurnRing::new();
        push_frames(&mut ring, 0..10);
        ring.mark_speech_start(0);
        push_frames(&mut ring, 10..1_000); // 20 s
        let snap = snapshot(&ring);
        assert_eq!(snap.len(), RING_SAMPLES);
        assert_eq!(snap, frames(600..1_000));
    }

    #[test]
    fn pushes_of_any_size_including_longer_than_the_ring_land_in_order() {
        let all: Vec<i16> = (0..300_000).map(|i| (i % 32_768) as i16).collect();
        for chunk in [1, 7, 320, 4_096, 200_000] {
            let mut ring = SmartTurnRing::new();
            for c in all.chunks(chunk) {
                ring.push(c);
            }
            assert_eq!(
                snapshot(&ring),
                all[all.len() - RING_SAMPLES..],
                "chunk {chunk}"
            );
            assert_eq!(ring.samples_written(), all.len() as u64);
        }
    }

    #[test]
    fn a_snapshot_into_a_sized_buffer_does_not_reallocate_it() {
        let mut ring = SmartTurnRing::new();
        push_frames(&mut ring, 0..500);
        let mut out = snapshot_buffer();
        let ptr = out.as_ptr();
        for _ in 0..3 {
            assert_eq!(ring.snapshot_into(&mut out), RING_SAMPLES);
            assert_eq!(out.as_ptr(), ptr);
        }
    }

    #[test]
    fn the_pre_speech_duration_is_configurable() {
        let mut ring = SmartTurnRing::with_pre_speech_ms(0);
        push_frames(&mut ring, 0..50);
        ring.mark_speech_start(100);
        push_frames(&mut ring, 50..52);
        assert_eq!(snapshot(&ring), frames(44..52));
    }
}
