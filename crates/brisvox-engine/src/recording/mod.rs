//! Call recording: a stereo WAV (caller left, bot right) and a JSON
//! transcript with per-turn times, written at the call's end.
//!
//! [`CallRecorder`] is the sans-IO core. It is fed what the call's edge sees,
//! each with its time: the caller's frames as they arrive, the bot's frames as
//! the route writes them to the transport, the clears (barge-in), the caller's
//! final transcripts and the bot's turns. The bot's track is the audio as it
//! was actually played: a clear at `t` cuts every bot sample placed at or
//! after `t`, so what the caller did not hear is not in the recording.
//! [`CallRecorder::finish`] renders the [`Recording`]; [`write`] puts it in a
//! directory (plain blocking file I/O: run it off the async workers).
//!
//! Placement: a frame goes at its time's offset from the recording's start
//! (16 kHz samples), or right after the track's previous frame if that ends
//! later (frames that arrive in a burst stay contiguous). The recording holds
//! at most `max_duration_ms`; what would go past it is dropped and the
//! recording marked `truncated`.
//!
//! Driving: one recorder per call, owned by one task (the server's recorder
//! actor); `handle_*` in any order of time; `finish` once.

mod write;

pub use write::{RecordingError, RecordingFiles, write, write_into};

use std::time::Instant;

use brisvox_audio::wav::{WavSpec, write_wav};
use serde::Serialize;

/// The recording's sample rate (the engine's internal rate), in Hz.
pub const RECORDING_RATE_HZ: u32 = 16_000;

/// Default cap on a recording's length: 15 minutes (about 58 MB of WAV).
pub const DEFAULT_MAX_DURATION_MS: u64 = 15 * 60 * 1000;

/// What a recorder keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordingLimits {
    /// Longest recording, in ms; audio past it is dropped.
    pub max_duration_ms: u64,
}

impl Default for RecordingLimits {
    fn default() -> Self {
        Self {
            max_duration_ms: DEFAULT_MAX_DURATION_MS,
        }
    }
}

/// Who spoke a transcript entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller.
    User,
    /// The agent.
    Bot,
}

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TranscriptEntry {
    /// Who spoke.
    pub role: Role,
    /// What was said (the caller's final transcript, or the bot's text when
    /// known; empty when the bot's text was not given).
    pub text: String,
    /// The bot's turn number (the engine's epoch); absent for the caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Start, in ms from the recording's start (the caller: when the final
    /// transcript arrived; the bot: its first frame).
    pub start_ms: u64,
    /// End, in ms from the recording's start (the bot: its last frame played
    /// or the interruption; the caller: as `start_ms`).
    pub end_ms: u64,
    /// The bot was cut off (barge-in or an interrupting `say`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// The transcript file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transcript {
    /// The call's id.
    pub call_id: String,
    /// When the recording started, in ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// The recording's length, in ms.
    pub duration_ms: u64,
    /// Sample rate of the WAV, in Hz.
    pub sample_rate_hz: u32,
    /// Channel layout of the WAV.
    pub channels: [&'static str; 2],
    /// Audio past `max_duration_ms` was dropped.
    pub truncated: bool,
    /// Entries in order of start.
    pub entries: Vec<TranscriptEntry>,
}

/// A finished recording, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Stereo 16 kHz PCM16 WAV: caller left, bot right.
    pub wav: Vec<u8>,
    /// The transcript.
    pub transcript: Transcript,
}

/// One channel of the recording.
#[derive(Debug, Default)]
struct Track {
    samples: Vec<i16>,
}

impl Track {
    /// Places `frame` at `pos` (or after the last sample, if later), within
    /// `cap` samples; false when anything was dropped at the cap.
    fn place(&mut self, pos: usize, frame: &[i16], cap: usize) -> bool {
        let start = pos.max(self.samples.len()).min(cap);
        self.samples.resize(start, 0);
        let room = cap - start;
        let n = frame.len().min(room);
        self.samples.extend_from_slice(&frame[..n]);
        n == frame.len()
    }

    /// Drops every sample at or after `pos`.
    fn cut(&mut self, pos: usize) {
        self.samples.truncate(pos);
    }
}

/// Records one call. See the module docs.
#[derive(Debug)]
pub struct CallRecorder {
    call_id: String,
    started: Instant,
    started_unix_ms: u64,
    cap_samples: usize,
    caller: Track,
    bot: Track,
    truncated: bool,
    entries: Vec<TranscriptEntry>,
    /// Index in `entries` of the bot turn now playing.
    open_bot: Option<usize>,
}

impl CallRecorder {
    /// A recorder for `call_id` whose time zero is `started` (the engine's
    /// clock) and `started_unix_ms` (the wall clock, for the transcript).
    pub fn new(
        call_id: &str,
        started: Instant,
        started_unix_ms: u64,
        limits: RecordingLimits,
    ) -> Self {
        let cap = limits
            .max_duration_ms
            .saturating_mul(u64::from(RECORDING_RATE_HZ))
            / 1000;
        Self {
            call_id: call_id.to_owned(),
            started,
            started_unix_ms,
            cap_samples: usize::try_from(cap).unwrap_or(usize::MAX),
            caller: Track::default(),
            bot: Track::default(),
            truncated: false,
            entries: Vec::new(),
            open_bot: None,
        }
    }

    fn pos(&self, at: Instant) -> usize {
        let us = at.saturating_duration_since(self.started).as_micros();
        usize::try_from(us * u128::from(RECORDING_RATE_HZ) / 1_000_000).unwrap_or(usize::MAX)
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }

    /// A caller frame (16 kHz PCM16) that arrived at `at`.
    pub fn handle_caller_audio(&mut self, at: Instant, samples: &[i16]) {
        let pos = self.pos(at);
        self.truncated |= !self.caller.place(pos, samples, self.cap_samples);
    }

    /// A bot frame (16 kHz PCM16) handed to the transport at `at`.
    pub fn handle_bot_audio(&mut self, at: Instant, samples: &[i16]) {
        let pos = self.pos(at);
        self.truncated |= !self.bot.place(pos, samples, self.cap_samples);
    }

    /// The transport dropped its queued bot audio at `at` (barge-in): bot
    /// audio at or after `at` was never heard.
    pub fn handle_bot_cleared(&mut self, at: Instant) {
        let pos = self.pos(at);
        self.bot.cut(pos);
        let ms = self.ms(at);
        if let Some(entry) = self.open_bot.take().and_then(|i| self.entries.get_mut(i)) {
            entry.end_ms = ms.max(entry.start_ms);
            entry.interrupted = true;
        }
    }

    /// The caller's final transcript `text`, at `at`.
    pub fn handle_user_text(&mut self, at: Instant, text: &str) {
        let ms = self.ms(at);
        self.entries.push(TranscriptEntry {
            role: Role::User,
            text: text.to_owned(),
            turn: None,
            start_ms: ms,
            end_ms: ms,
            interrupted: false,
        });
    }

    /// The bot started speaking turn `turn` at `at`.
    pub fn handle_bot_started(&mut self, at: Instant, turn: u64) {
        let ms = self.ms(at);
        self.open_bot = Some(self.entries.len());
        self.entries.push(TranscriptEntry {
            role: Role::Bot,
            text: String::new(),
            turn: Some(turn),
            start_ms: ms,
            end_ms: ms,
            interrupted: false,
        });
    }

    /// The bot's text for turn `turn` (appended to what it already has).
    pub fn handle_bot_text(&mut self, turn: u64, text: &str) {
        if let Some(entry) = self.entries.iter_mut().rev().find(|e| e.turn == Some(turn)) {
            entry.text.push_str(text);
        }
    }

    /// The bot's turn `turn` ended at `at` (played out, or after a clear).
    pub fn handle_bot_stopped(&mut self, at: Instant, turn: u64) {
        let ms = self.ms(at);
        if let Some(i) = self
            .open_bot
            .filter(|&i| self.entries[i].turn == Some(turn))
        {
            self.entries[i].end_ms = ms.max(self.entries[i].start_ms);
            self.open_bot = None;
        }
    }

    /// Renders the recording; `ended` is the call's end.
    pub fn finish(mut self, ended: Instant) -> Recording {
        let end = self.pos(ended).min(self.cap_samples);
        let len = end
            .max(self.caller.samples.len())
            .max(self.bot.samples.len());
        self.caller.samples.resize(len, 0);
        self.bot.samples.resize(len, 0);
        let mut interleaved = Vec::with_capacity(len * 2);
        for (l, r) in self.caller.samples.iter().zip(&self.bot.samples) {
            interleaved.push(*l);
            interleaved.push(*r);
        }
        let spec = WavSpec {
            channels: 2,
            sample_rate_hz: RECORDING_RATE_HZ,
        };
        // Cannot fail: two channels, a non-zero rate, whole sample frames.
        let wav = write_wav(spec, &interleaved).expect("a stereo 16 kHz WAV always encodes");
        self.entries.sort_by_key(|e| e.start_ms);
        Recording {
            wav,
            transcript: Transcript {
                call_id: self.call_id,
                started_unix_ms: self.started_unix_ms,
                duration_ms: len as u64 * 1000 / u64::from(RECORDING_RATE_HZ),
                sample_rate_hz: RECORDING_RATE_HZ,
                channels: ["caller", "bot"],
                truncated: self.truncated,
                entries: self.entries,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn bursts_stay_contiguous_and_gaps_are_silence() {
        let mut t = Track::default();
        assert!(t.place(0, &[1; 320], 10_000));
        assert!(t.place(0, &[2; 320], 10_000));
        assert_eq!(t.samples.len(), 640);
        assert!(t.place(1000, &[3; 320], 10_000));
        assert_eq!(t.samples.len(), 1320);
        assert_eq!(t.samples[700], 0);
        assert!(!t.place(0, &[4; 320], 1500));
        assert_eq!(t.samples.len(), 1500);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a test's time zero
    fn an_interruption_cuts_the_bot_and_marks_its_turn() {
        let t0 = Instant::now();
        let mut r = CallRecorder::new("c", t0, 0, RecordingLimits::default());
        r.handle_bot_started(ms(t0, 100), 1);
        for i in 0..10 {
            r.handle_bot_audio(ms(t0, 100 + 20 * i), &[500; 320]);
        }
        r.handle_bot_cleared(ms(t0, 200));
        r.handle_bot_stopped(ms(t0, 210), 1);
        let rec = r.finish(ms(t0, 400));
        let bot = &rec.transcript.entries[0];
        assert!(bot.interrupted);
        assert_eq!((bot.start_ms, bot.end_ms), (100, 200));
        assert_eq!(rec.transcript.duration_ms, 400);
    }
}
