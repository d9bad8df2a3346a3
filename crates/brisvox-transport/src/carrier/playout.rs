//! [`Playout`]: how much of the audio sent to a carrier the caller has heard.
//!
//! A carrier buffers the audio it receives and plays it at its own pace; it
//! says nothing about progress except by echoing a mark (Twilio, Telnyx and
//! Exotel `mark`, Plivo `checkpoint` -> `playedStream`, Vonage `notify`) once
//! every byte sent before that mark has played. So the server places a mark
//! after each outbound chunk (or turn) and learns from each echo that the
//! caller has heard the audio up to it. On barge-in it sends a clear and
//! forgets the pending marks: Twilio echoes them too when it drops the audio,
//! and those echoes must not count as played.
//!
//! Driving (sans-IO, no clock): after sending audio call
//! [`Playout::on_media_sent`]; to place a mark call [`Playout::next_mark`] and
//! send [`crate::carrier::CarrierEncoder::mark`] with the returned name;
//! feed each echoed mark to [`Playout::handle_mark`]; on barge-in call
//! [`Playout::on_clear`] and send the clear.

use std::collections::VecDeque;

/// Prefix of the mark names this tracker issues.
pub const MARK_PREFIX: &str = "bv-";

/// Default bound on marks awaiting their echo. When it is reached the oldest
/// pending mark is forgotten: a later echo also proves the earlier audio played,
/// so only resolution is lost, never correctness.
pub const DEFAULT_MAX_PENDING_MARKS: usize = 256;

/// Mu-law bytes per millisecond at 8 kHz (Twilio's format).
const MULAW_8K_BYTES_PER_MS: u64 = 8;

/// What an echoed mark meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOutcome {
    /// The audio up to this mark has played.
    Played {
        /// Audio known to have played since the stream began, in ms.
        played_ms: u64,
        /// Audio sent but not yet known to have played, in ms.
        unplayed_ms: u64,
    },
    /// A mark this tracker forgot (cleared by a barge-in, or dropped at the
    /// bound) or never issued: nothing is learnt from it.
    Stale,
}

#[derive(Debug, Clone, Copy)]
struct PendingMark {
    id: u64,
    /// Bytes sent when the mark was placed.
    sent_bytes: u64,
}

/// Tracks playback on one carrier stream. See the module docs.
#[derive(Debug, Clone)]
pub struct Playout {
    bytes_per_ms: u64,
    next_id: u64,
    sent_bytes: u64,
    played_bytes: u64,
    cleared_bytes: u64,
    pending: VecDeque<PendingMark>,
    max_pending: usize,
}

/// The tracker Twilio streams used before every carrier shared it: mu-law at
/// 8 kHz.
pub type TwilioPlayout = Playout;

impl Default for Playout {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PENDING_MARKS)
    }
}

impl Playout {
    /// A tracker for mu-law at 8 kHz that keeps at most `max_pending_marks`
    /// (at least 1) pending.
    pub fn new(max_pending_marks: usize) -> Self {
        Self::with_bytes_per_ms(max_pending_marks, MULAW_8K_BYTES_PER_MS as usize)
    }

    /// A tracker for audio in `format` with the default mark bound.
    pub fn for_format(format: super::WireFormat) -> Self {
        Self::with_bytes_per_ms(DEFAULT_MAX_PENDING_MARKS, format.bytes_per_ms())
    }

    /// A tracker for audio of `bytes_per_ms` (at least 1) that keeps at most
    /// `max_pending_marks` (at least 1) pending.
    pub fn with_bytes_per_ms(max_pending_marks: usize, bytes_per_ms: usize) -> Self {
        let max_pending = max_pending_marks.max(1);
        Self {
            bytes_per_ms: bytes_per_ms.max(1) as u64,
            next_id: 1,
            sent_bytes: 0,
            played_bytes: 0,
            cleared_bytes: 0,
            pending: VecDeque::with_capacity(max_pending),
            max_pending,
        }
    }

    /// Records that `bytes` of audio were sent.
    pub fn on_media_sent(&mut self, bytes: usize) {
        self.sent_bytes += bytes as u64;
    }

    /// Places a mark after the audio sent so far; send a `mark` with this name.
    pub fn next_mark(&mut self) -> String {
        let id = self.next_id;
        self.next_id += 1;
        if self.pending.len() == self.max_pending {
            self.pending.pop_front();
        }
        self.pending.push_back(PendingMark {
            id,
            sent_bytes: self.sent_bytes,
        });
        format!("{MARK_PREFIX}{id}")
    }

    /// Handles an echoed mark.
    pub fn handle_mark(&mut self, name: &str) -> MarkOutcome {
        let Some(id) = name
            .strip_prefix(MARK_PREFIX)
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return MarkOutcome::Stale;
        };
        let Some(pos) = self.pending.iter().position(|m| m.id == id) else {
            return MarkOutcome::Stale;
        };
        let mark = self.pending[pos];
        self.pending.drain(..=pos);
        self.played_bytes = self.played_bytes.max(mark.sent_bytes);
        MarkOutcome::Played {
            played_ms: self.played_ms(),
            unplayed_ms: self.unplayed_ms(),
        }
    }

    /// Barge-in: forgets every pending mark and counts the audio not known to
    /// have played as cleared. Returns that amount in ms. Send `clear` next.
    pub fn on_clear(&mut self) -> u64 {
        let dropped = self.sent_bytes - self.played_bytes;
        self.cleared_bytes += dropped;
        self.sent_bytes = self.played_bytes;
        self.pending.clear();
        dropped / self.bytes_per_ms
    }

    /// Audio known to have played, in ms.
    pub fn played_ms(&self) -> u64 {
        self.played_bytes / self.bytes_per_ms
    }

    /// Audio sent and not yet known to have played, in ms (an upper bound on
    /// what is still queued at the carrier).
    pub fn unplayed_ms(&self) -> u64 {
        (self.sent_bytes - self.played_bytes) / self.bytes_per_ms
    }

    /// Audio dropped by `clear`s so far, in ms.
    pub fn cleared_ms(&self) -> u64 {
        self.cleared_bytes / self.bytes_per_ms
    }

    /// Marks awaiting their echo.
    pub fn pending_marks(&self) -> usize {
        self.pending.len()
    }

    /// True while sent audio is not yet known to have played.
    pub fn is_playing(&self) -> bool {
        self.sent_bytes > self.played_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_advance_what_was_played() {
        let mut p = Playout::default();
        p.on_media_sent(1600);
        let a = p.next_mark();
        p.on_media_sent(800);
        let b = p.next_mark();
        assert_eq!(p.unplayed_ms(), 300);
        assert_eq!(
            p.handle_mark(&a),
            MarkOutcome::Played {
                played_ms: 200,
                unplayed_ms: 100
            }
        );
        assert_eq!(
            p.handle_mark(&b),
            MarkOutcome::Played {
                played_ms: 300,
                unplayed_ms: 0
            }
        );
        assert!(!p.is_playing());
    }

    #[test]
    fn a_later_echo_settles_earlier_marks() {
        let mut p = Playout::default();
        p.on_media_sent(160);
        let a = p.next_mark();
        p.on_media_sent(160);
        let b = p.next_mark();
        assert!(matches!(p.handle_mark(&b), MarkOutcome::Played { .. }));
        assert_eq!(p.pending_marks(), 0);
        assert_eq!(p.handle_mark(&a), MarkOutcome::Stale);
    }

    #[test]
    fn clear_forgets_pending_marks_and_their_echoes_are_stale() {
        let mut p = Playout::default();
        p.on_media_sent(1600);
        let a = p.next_mark();
        p.on_media_sent(1600);
        let b = p.next_mark();
        assert!(matches!(p.handle_mark(&a), MarkOutcome::Played { .. }));
        assert_eq!(p.on_clear(), 200);
        assert_eq!(p.handle_mark(&b), MarkOutcome::Stale);
        assert_eq!(p.played_ms(), 200);
        assert_eq!(p.cleared_ms(), 200);
        assert_eq!(p.pending_marks(), 0);
    }

    #[test]
    fn the_bound_drops_the_oldest_mark_only() {
        let mut p = Playout::new(2);
        let names: Vec<String> = (0..3)
            .map(|_| {
                p.on_media_sent(80);
                p.next_mark()
            })
            .collect();
        assert_eq!(p.pending_marks(), 2);
        assert_eq!(p.handle_mark(&names[0]), MarkOutcome::Stale);
        assert!(matches!(
            p.handle_mark(&names[2]),
            MarkOutcome::Played { played_ms: 30, .. }
        ));
    }

    #[test]
    fn pcm16_at_16k_counts_32_bytes_per_ms() {
        let mut p = Playout::with_bytes_per_ms(8, 32);
        p.on_media_sent(640 * 10);
        let m = p.next_mark();
        assert_eq!(p.unplayed_ms(), 200);
        assert!(matches!(
            p.handle_mark(&m),
            MarkOutcome::Played { played_ms: 200, .. }
        ));
    }

    #[test]
    fn foreign_names_are_stale() {
        let mut p = Playout::default();
        assert_eq!(p.handle_mark("greeting"), MarkOutcome::Stale);
        assert_eq!(p.handle_mark("bv-x"), MarkOutcome::Stale);
    }
}
