//! Per-context state of a websocket TTS session ([`super::ws_tts`]), kept
//! apart from the I/O: which wire id a context speaks under, when it may have
//! expired at the vendor, where its audio stands (for word timing), and how
//! many contexts the vendor holds open.
//!
//! Rules, each from the vendor's documentation:
//!
//! 1. **Expiry (Cartesia).** "Contexts automatically expire 1 second after the
//!    last audio output is streamed out. Attempting to send another input on
//!    the same context ID after expiry is not supported"
//!    (<https://docs.cartesia.ai/use-the-api/tts-websocket/contexts>). A
//!    context that has spoken everything it was given and then stayed without
//!    audio for [`WsTtsTiming::idle_rotate_ms`](super::ws_tts::WsTtsTiming)
//!    continues under a fresh wire id (text after an LLM pause), or ends at
//!    once when only the flush is left (its audio is all out).
//! 2. **Open contexts (ElevenLabs).** "Each connection is limited to 5
//!    concurrent contexts"
//!    (<https://elevenlabs.io/docs/eleven-api/guides/how-to/websockets/multi-context-web-socket>).
//!    A context counts from its first text until its end arrives; a cancelled
//!    one until its end arrives or a grace period passes. A context that finds
//!    no room waits (its text queued) instead of making the vendor close the
//!    socket.

use std::time::Duration;

use tokio::time::Instant;

use crate::{ContextId, WordTiming};

/// Where a vendor's word times count from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WordsFrom {
    /// The first audio of the wire id (Cartesia `timestamps`).
    WireStart,
    /// The audio chunk just received (ElevenLabs `alignment`: "relative to the
    /// returned chunk from the model, and not the full audio response").
    ChunkStart,
}

/// One engine context and its vendor-side state.
pub(crate) struct Ctx {
    pub(crate) id: ContextId,
    /// The wire id its text goes to now.
    pub(crate) wire: String,
    /// Wire ids it spoke under before (audio may still trail in), with the
    /// sample position each started at.
    pub(crate) old_wires: Vec<(String, u64)>,
    wire_seq: u32,
    /// Refusals so far (capacity), for the retry budget.
    pub(crate) attempt: u32,
    /// Text sent (or to send) under the current wire id, for replay.
    pub(crate) texts: Vec<String>,
    pub(crate) flushed: bool,
    /// Whether the current wire id was opened at the vendor (text sent).
    pub(crate) opened: bool,
    pub(crate) first_text_at: Option<Instant>,
    pub(crate) got_audio: bool,
    pub(crate) retry_at: Option<Instant>,
    /// Its `retry_at` waits for a free slot (rule 2), not a refusal pause.
    pub(crate) waiting_slot: bool,
    pub(crate) carry: Option<u8>,
    last_audio_at: Option<Instant>,
    text_since_audio: bool,
    samples_out: u64,
    wire_origin: u64,
    chunk_start: u64,
}

impl Ctx {
    pub(crate) fn new(id: ContextId) -> Self {
        Ctx {
            id,
            wire: wire_id(id, 0),
            old_wires: Vec::new(),
            wire_seq: 0,
            attempt: 0,
            texts: Vec::new(),
            flushed: false,
            opened: false,
            first_text_at: None,
            got_audio: false,
            retry_at: None,
            waiting_slot: false,
            carry: None,
            last_audio_at: None,
            text_since_audio: false,
            samples_out: 0,
            wire_origin: 0,
            chunk_start: 0,
        }
    }

    /// Whether `wire` is this context's, now or before.
    pub(crate) fn owns(&self, wire: &str) -> bool {
        self.wire == wire || self.old_wires.iter().any(|(w, _)| w == wire)
    }

    /// Moves to a fresh wire id; the old one is kept for trailing audio when
    /// it spoke. Text already spoken is not replayed.
    pub(crate) fn next_wire(&mut self, keep_old: bool) {
        if keep_old {
            let old = std::mem::take(&mut self.wire);
            self.old_wires.push((old, self.wire_origin));
            self.texts.clear();
        }
        self.wire_seq += 1;
        self.wire = wire_id(self.id, self.wire_seq);
        self.opened = false;
        self.wire_origin = self.samples_out;
    }

    /// Whether everything given was spoken and no audio came for `idle`: the
    /// vendor may have expired the wire id (rule 1).
    pub(crate) fn idle_after_audio(&self, idle: Option<Duration>, now: Instant) -> bool {
        match (idle, self.last_audio_at) {
            (Some(idle), Some(at)) => !self.text_since_audio && at + idle <= now,
            _ => false,
        }
    }

    /// Records text sent under the current wire id.
    pub(crate) fn sent_text(&mut self) {
        self.opened = true;
        self.text_since_audio = true;
    }

    /// Records `samples` of audio received at `now`.
    pub(crate) fn got(&mut self, samples: usize, now: Instant) {
        self.got_audio = true;
        self.last_audio_at = Some(now);
        self.text_since_audio = false;
        self.chunk_start = self.samples_out;
        self.samples_out += samples as u64;
    }

    /// `words` moved from the vendor's origin to the context's first sample.
    pub(crate) fn place_words(
        &self,
        wire: &str,
        mut words: Vec<WordTiming>,
        from: WordsFrom,
        rate_hz: u32,
    ) -> Vec<WordTiming> {
        let origin = match from {
            WordsFrom::ChunkStart => self.chunk_start,
            WordsFrom::WireStart if self.wire == wire => self.wire_origin,
            WordsFrom::WireStart => self
                .old_wires
                .iter()
                .find(|(w, _)| w == wire)
                .map_or(self.wire_origin, |(_, o)| *o),
        };
        let offset = origin * 1000 / u64::from(rate_hz.max(1));
        let offset = u32::try_from(offset).unwrap_or(u32::MAX);
        for w in &mut words {
            w.start_ms = w.start_ms.saturating_add(offset);
            w.end_ms = w.end_ms.saturating_add(offset);
        }
        words
    }

    pub(crate) fn first_audio_deadline(&self, timeout: Duration) -> Option<Instant> {
        self.first_text_at
            .filter(|_| !self.got_audio)
            .map(|t| t + timeout)
    }
}

/// The wire id of context `id`, its `seq`th.
fn wire_id(id: ContextId, seq: u32) -> String {
    match seq {
        0 => format!("brisvox-{}-{}", id.epoch.0, id.seq),
        n => format!("brisvox-{}-{}-r{n}", id.epoch.0, id.seq),
    }
}

/// Cancelled wire ids the vendor may still count as open (rule 2).
#[derive(Debug, Default)]
pub(crate) struct ClosingBook {
    closing: Vec<(String, Instant)>,
}

impl ClosingBook {
    /// `wire` was cancelled; it counts until `until`.
    pub(crate) fn closed(&mut self, wire: String, until: Instant) {
        self.closing.push((wire, until));
    }

    /// The vendor ended `wire`; true if it was one of ours.
    pub(crate) fn ended(&mut self, wire: &str) -> bool {
        let before = self.closing.len();
        self.closing.retain(|(w, _)| w != wire);
        self.closing.len() != before
    }

    /// Drops entries whose grace has passed; returns how many remain.
    pub(crate) fn count(&mut self, now: Instant) -> usize {
        self.closing.retain(|(_, until)| *until > now);
        self.closing.len()
    }

    /// When the next entry's grace ends, if any.
    pub(crate) fn next_free(&self) -> Option<Instant> {
        self.closing.iter().map(|(_, until)| *until).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisvox_core::Epoch;

    #[test]
    fn a_context_idle_after_its_audio_moves_to_a_fresh_wire() {
        let t0 = Instant::now();
        let idle = Some(Duration::from_millis(500));
        let mut c = Ctx::new(ContextId::new(Epoch(3), 1));
        assert!(!c.idle_after_audio(idle, t0), "no audio yet");
        c.sent_text();
        c.got(2400, t0);
        assert!(!c.idle_after_audio(idle, t0 + Duration::from_millis(499)));
        assert!(c.idle_after_audio(idle, t0 + Duration::from_millis(500)));
        assert!(!c.idle_after_audio(None, t0 + Duration::from_secs(9)));
        c.sent_text();
        assert!(
            !c.idle_after_audio(idle, t0 + Duration::from_secs(9)),
            "text in flight"
        );
        c.next_wire(true);
        assert_eq!(c.wire, "brisvox-3-1-r1");
        assert!(c.owns("brisvox-3-1") && c.owns("brisvox-3-1-r1"));
        assert!(!c.opened && c.texts.is_empty());
    }

    #[test]
    fn words_count_from_the_wire_or_the_chunk() {
        let t0 = Instant::now();
        let mut c = Ctx::new(ContextId::new(Epoch(1), 0));
        c.got(24_000, t0); // 1 s at 24 kHz
        c.next_wire(true);
        c.got(12_000, t0); // 0.5 s more
        let w = |s| {
            vec![WordTiming {
                word: "a".into(),
                start_ms: s,
                end_ms: s + 100,
            }]
        };
        let on_new = c.place_words("brisvox-1-0-r1", w(0), WordsFrom::WireStart, 24_000);
        assert_eq!(on_new[0].start_ms, 1_000);
        let on_old = c.place_words("brisvox-1-0", w(200), WordsFrom::WireStart, 24_000);
        assert_eq!(on_old[0].start_ms, 200);
        let in_chunk = c.place_words("brisvox-1-0-r1", w(10), WordsFrom::ChunkStart, 24_000);
        assert_eq!(in_chunk[0].start_ms, 1_010);
    }

    #[test]
    fn cancelled_wires_count_until_their_end_or_grace() {
        let t0 = Instant::now();
        let mut book = ClosingBook::default();
        book.closed("a".into(), t0 + Duration::from_secs(1));
        book.closed("b".into(), t0 + Duration::from_secs(2));
        assert_eq!(book.count(t0), 2);
        assert!(book.ended("a") && !book.ended("a"));
        assert_eq!(book.next_free(), Some(t0 + Duration::from_secs(2)));
        assert_eq!(book.count(t0 + Duration::from_secs(2)), 0);
    }
}
