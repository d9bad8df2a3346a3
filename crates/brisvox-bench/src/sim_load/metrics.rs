//! The arithmetic of `sim-load`, free of I/O: the overhead of a turn from its
//! marks, CPU cores on the plateau from clock samples, and the refusal rule.
//!
//! - **Overhead per turn** = (FirstAudioOut - TurnEnd) minus
//!   (LlmFirstSentence - LlmRequestSent) minus (TtsFirstByte - TtsRequest):
//!   the response's time after the end-of-turn decision minus the two provider
//!   intervals. `LlmRequestSent` is the spec's "LlmRequest" (the request handed
//!   to the provider); this engine's `LlmRequest` mark is the turn machine's
//!   decision, at the same instant as `TurnEnd`, and would hide the first hop.
//!   The overhead covers the hops TurnEnd -> LlmRequestSent, LlmFirstSentence ->
//!   TtsRequest and TtsFirstByte -> FirstAudioOut; the first and last are also
//!   reported alone ([`TurnTiming`]).
//! - **CPU cores on the plateau** = process CPU time / wall time between the
//!   first sample at or after the last call's start and the last sample at or
//!   before the first call's end ([`plateau_cores`]).
//! - **Refusal**: a run is not written when a call failed, a turn went
//!   unanswered, a barge-in happened, tasks leaked or marks were missing
//!   ([`refusals`]).

use std::time::Instant;

use brisvox_core::timeline::{TurnEvent, TurnRecord};

/// The marks of one turn that `sim-load` uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TurnMarks {
    /// The end-of-turn decision.
    pub(crate) turn_end: Option<Instant>,
    /// The request handed to the LLM provider.
    pub(crate) llm_request_sent: Option<Instant>,
    /// The first speakable chunk released by the segmenter.
    pub(crate) llm_first_sentence: Option<Instant>,
    /// The TTS context opened.
    pub(crate) tts_request: Option<Instant>,
    /// The TTS's first audio.
    pub(crate) tts_first_byte: Option<Instant>,
    /// The first frame handed to the transport.
    pub(crate) first_audio_out: Option<Instant>,
    /// The last frame handed to the transport.
    pub(crate) last_audio_out: Option<Instant>,
}

/// The engine's share of one answered turn, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct TurnTiming {
    /// The overhead per turn (module docs).
    pub(crate) overhead_ms: f64,
    /// TurnEnd -> LlmRequestSent.
    pub(crate) turn_end_to_llm_ms: f64,
    /// TtsFirstByte -> FirstAudioOut.
    pub(crate) tts_first_byte_to_transport_ms: f64,
}

impl TurnMarks {
    /// The marks of `record`.
    pub(crate) fn from_record(record: &TurnRecord) -> Self {
        use TurnEvent as E;
        TurnMarks {
            turn_end: record.at(E::TurnEnd),
            llm_request_sent: record.at(E::LlmRequestSent),
            llm_first_sentence: record.at(E::LlmFirstSentence),
            tts_request: record.at(E::TtsRequest),
            tts_first_byte: record.at(E::TtsFirstByte),
            first_audio_out: record.at(E::FirstAudioOut),
            last_audio_out: record.at(E::LastAudioOut),
        }
    }

    /// Whether the answer reached the transport from its first to its last frame.
    pub(crate) fn played_out(&self) -> bool {
        self.first_audio_out.is_some() && self.last_audio_out.is_some()
    }

    /// The timing, or `None` when a mark it needs is missing.
    pub(crate) fn timing(&self) -> Option<TurnTiming> {
        let turn_end = self.turn_end?;
        let sent = self.llm_request_sent?;
        let first_audio = self.first_audio_out?;
        let tts_first_byte = self.tts_first_byte?;
        let post = ms_between(turn_end, first_audio);
        let llm = ms_between(sent, self.llm_first_sentence?);
        let tts = ms_between(self.tts_request?, tts_first_byte);
        Some(TurnTiming {
            overhead_ms: post - llm - tts,
            turn_end_to_llm_ms: ms_between(turn_end, sent),
            tts_first_byte_to_transport_ms: ms_between(tts_first_byte, first_audio),
        })
    }
}

/// `to - from` in milliseconds, negative when `to` is earlier.
pub(crate) fn ms_between(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

/// Process CPU time at a moment of the step, both in seconds from the step's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CpuAt {
    /// Wall time, seconds since the step started.
    pub(crate) wall_s: f64,
    /// Process CPU time (all threads), seconds.
    pub(crate) cpu_s: f64,
}

/// Shortest plateau, seconds, over which CPU cores are reported.
pub(crate) const MIN_PLATEAU_S: f64 = 0.5;

/// CPU cores busy between `from_s` (every call started) and `to_s` (the first
/// call ended): CPU time over wall time between the first sample at or after
/// `from_s` and the last at or before `to_s` (`samples` in time order).
/// `None` when those samples span less than [`MIN_PLATEAU_S`].
pub(crate) fn plateau_cores(samples: &[CpuAt], from_s: f64, to_s: f64) -> Option<f64> {
    let first = samples.iter().find(|s| s.wall_s >= from_s)?;
    let last = samples.iter().rev().find(|s| s.wall_s <= to_s)?;
    let wall = last.wall_s - first.wall_s;
    (wall >= MIN_PLATEAU_S).then(|| (last.cpu_s - first.cpu_s) / wall)
}

/// What went wrong in one step, summed over its calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Tally {
    /// Calls run.
    pub(crate) calls: u64,
    /// Calls that failed (did not start, ended otherwise than by the hang-up,
    /// provider or response failures, extra turns, panicked).
    pub(crate) calls_failed: u64,
    /// Utterances in all scripts.
    pub(crate) turns_expected: u64,
    /// Turns whose answer played out, uninterrupted.
    pub(crate) turns_answered: u64,
    /// Barge-ins.
    pub(crate) barge_ins: u64,
    /// Answered turns missing a mark the overhead needs.
    pub(crate) marks_missing: u64,
    /// Tasks still alive after the settle time, over the count before the step.
    pub(crate) tasks_leaked: u64,
}

/// Why the results of a step must not be written; empty when it is clean.
pub(crate) fn refusals(sessions: usize, t: &Tally) -> Vec<String> {
    let mut why = Vec::new();
    let mut check = |bad: bool, text: String| {
        if bad {
            why.push(format!("{sessions} calls: {text}"));
        }
    };
    check(
        t.calls_failed > 0,
        format!("{} calls failed", t.calls_failed),
    );
    check(
        t.turns_answered < t.turns_expected,
        format!(
            "{} of {} turns went unanswered",
            t.turns_expected - t.turns_answered,
            t.turns_expected
        ),
    );
    check(t.barge_ins > 0, format!("{} barge-ins", t.barge_ins));
    check(
        t.tasks_leaked > 0,
        format!("{} tasks leaked", t.tasks_leaked),
    );
    check(
        t.marks_missing > 0,
        format!("{} answered turns miss timeline marks", t.marks_missing),
    );
    why
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use brisvox_core::Epoch;
    use brisvox_core::timeline::TimelineRecorder;

    use super::*;

    fn marks(base: Instant, at_ms: [u64; 7]) -> TurnMarks {
        let t = |ms| Some(base + Duration::from_millis(ms));
        TurnMarks {
            turn_end: t(at_ms[0]),
            llm_request_sent: t(at_ms[1]),
            llm_first_sentence: t(at_ms[2]),
            tts_request: t(at_ms[3]),
            tts_first_byte: t(at_ms[4]),
            first_audio_out: t(at_ms[5]),
            last_audio_out: t(at_ms[6]),
        }
    }

    #[test]
    fn overhead_is_the_response_minus_both_provider_intervals() {
        // Turn end 1000, sent 1002 (hop 2), first sentence 1400 (LLM 398),
        // TTS request 1401 (hop 1), first byte 1551 (TTS 150), out 1555 (hop 4).
        let m = marks(Instant::now(), [1000, 1002, 1400, 1401, 1551, 1555, 3000]);
        let t = m.timing().unwrap();
        assert!((t.overhead_ms - 7.0).abs() < 1e-9, "{t:?}");
        assert!((t.turn_end_to_llm_ms - 2.0).abs() < 1e-9);
        assert!((t.tts_first_byte_to_transport_ms - 4.0).abs() < 1e-9);
        assert!(m.played_out());
    }

    #[test]
    fn a_missing_mark_gives_no_timing() {
        let full = marks(Instant::now(), [0, 1, 2, 3, 4, 5, 6]);
        for strip in 0..6 {
            let mut m = full;
            match strip {
                0 => m.turn_end = None,
                1 => m.llm_request_sent = None,
                2 => m.llm_first_sentence = None,
                3 => m.tts_request = None,
                4 => m.tts_first_byte = None,
                _ => m.first_audio_out = None,
            }
            assert_eq!(m.timing(), None, "mark {strip} stripped");
        }
        let mut no_end = full;
        no_end.last_audio_out = None;
        assert!(!no_end.played_out());
    }

    #[test]
    fn marks_come_from_a_recorded_turn() {
        use TurnEvent as E;
        let base = Instant::now();
        let mut r = TimelineRecorder::new();
        let at = |ms| base + Duration::from_millis(ms);
        for (event, ms) in [
            (E::UserSpeechStart, 0),
            (E::TurnEnd, 1000),
            (E::LlmRequest, 1000),
            (E::LlmRequestSent, 1001),
            (E::LlmFirstSentence, 1300),
            (E::TtsRequest, 1300),
            (E::TtsFirstByte, 1450),
            (E::FirstAudioOut, 1452),
            (E::LastAudioOut, 2000),
        ] {
            r.mark(Epoch(1), event, at(ms));
        }
        let m = TurnMarks::from_record(r.open_turn().unwrap());
        let t = m.timing().unwrap();
        assert!((t.overhead_ms - 3.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn a_reversed_interval_is_negative() {
        let base = Instant::now();
        let later = base + Duration::from_millis(5);
        assert!((ms_between(later, base) + 5.0).abs() < 1e-9);
    }

    fn cpu(wall_s: f64, cpu_s: f64) -> CpuAt {
        CpuAt { wall_s, cpu_s }
    }

    #[test]
    fn plateau_cores_use_only_samples_inside_the_window() {
        // Ramp (0-1 s) burns 2 cores, the plateau 0.5, the tail 3.
        let s = [
            cpu(0.0, 0.0),
            cpu(1.0, 2.0),
            cpu(2.0, 2.5),
            cpu(3.0, 3.0),
            cpu(4.0, 6.0),
        ];
        assert_eq!(plateau_cores(&s, 0.9, 3.5), Some(0.5));
        assert_eq!(plateau_cores(&s, 1.0, 3.0), Some(0.5));
        assert_eq!(plateau_cores(&s, 1.1, 3.0), Some(0.5));
        // Too short, empty or inverted windows give nothing.
        assert_eq!(plateau_cores(&s, 2.5, 3.2), None);
        assert_eq!(plateau_cores(&s, 3.5, 1.0), None);
        assert_eq!(plateau_cores(&[], 0.0, 1.0), None);
    }

    fn clean() -> Tally {
        Tally {
            calls: 4,
            turns_expected: 12,
            turns_answered: 12,
            ..Tally::default()
        }
    }

    #[test]
    fn a_clean_step_has_no_refusal() {
        assert!(refusals(4, &clean()).is_empty());
    }

    #[test]
    fn every_fault_is_a_refusal() {
        let faults: [fn(&mut Tally); 5] = [
            |t| t.calls_failed = 1,
            |t| t.turns_answered = 11,
            |t| t.barge_ins = 1,
            |t| t.tasks_leaked = 2,
            |t| t.marks_missing = 1,
        ];
        for (i, fault) in faults.iter().enumerate() {
            let mut t = clean();
            fault(&mut t);
            let why = refusals(4, &t);
            assert_eq!(why.len(), 1, "fault {i}: {why:?}");
        }
        let mut t = clean();
        t.turns_answered = 10;
        assert_eq!(
            refusals(4, &t),
            vec!["4 calls: 2 of 12 turns went unanswered".to_owned()]
        );
    }
}
