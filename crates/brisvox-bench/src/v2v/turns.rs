//! Turn classification: which caller utterance got an answer, and when.
//!
//! Input: the ground-truth utterances (stream time, µs from `begin`, the instant
//! the first sample of the fixture was spoken) and the arrival times of the bot's
//! non-silent audio messages (same clock). Each utterance becomes exactly one
//! turn with one of four outcomes; none is dropped:
//!
//! - `bot_speaking`: the bot was already speaking when the utterance started (a
//!   non-silent bot message arrived within [`SPEAKING_HOLD_US`] before its start);
//! - `talked_over`: the first bot audio after the start arrived before the end of
//!   speech (the bot answered a pause inside the utterance);
//! - `answered`: the first bot audio after the end of speech arrived before the
//!   next utterance starts and within the response window; V2V = arrival - end;
//! - `no_response`: nothing within that window.

use serde::Serialize;

/// A bot message older than this at an utterance start no longer counts as "the
/// bot is speaking": 100 ms is five 20 ms frames without audio, so a paced
/// stream of bot audio (one message per 20-40 ms) is continuous within it.
pub(crate) const SPEAKING_HOLD_US: u64 = 100_000;

/// Outcome of one caller turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// Answered after the end of speech: a latency sample.
    Answered,
    /// Bot audio began after the utterance start but before its end.
    TalkedOver,
    /// The bot was still speaking when the utterance started.
    BotSpeaking,
    /// No bot audio within the window.
    NoResponse,
}

impl Outcome {
    /// The name used in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::TalkedOver => "talked_over",
            Outcome::BotSpeaking => "bot_speaking",
            Outcome::NoResponse => "no_response",
        }
    }
}

/// One utterance on the stream clock, µs from `begin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Start of speech.
    pub(crate) start_us: u64,
    /// End of speech (ground truth).
    pub(crate) end_us: u64,
}

/// The result of one turn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct TurnResult {
    /// What happened.
    pub(crate) outcome: Outcome,
    /// Arrival of the first non-silent bot audio considered, µs from `begin`.
    pub(crate) first_bot_audio_us: Option<u64>,
    /// First bot audio minus end of speech, ms (negative when talked over).
    pub(crate) v2v_ms: Option<f64>,
}

impl TurnResult {
    /// A turn answered after `v2v_ms`, or (None) not answered: what the
    /// report tests build their calls from.
    #[cfg(test)]
    pub(crate) fn answered_or_not(v2v_ms: Option<f64>) -> Self {
        Self {
            outcome: if v2v_ms.is_some() {
                Outcome::Answered
            } else {
                Outcome::NoResponse
            },
            first_bot_audio_us: None,
            v2v_ms,
        }
    }
}

/// Classifies every utterance. `bot_audio_us` must be sorted ascending.
pub(crate) fn classify(spans: &[Span], bot_audio_us: &[u64], window_us: u64) -> Vec<TurnResult> {
    spans
        .iter()
        .enumerate()
        .map(|(i, span)| {
            let next_start = spans.get(i + 1).map_or(u64::MAX, |n| n.start_us);
            let limit = next_start.min(span.end_us.saturating_add(window_us));
            classify_one(*span, limit, bot_audio_us)
        })
        .collect()
}

fn classify_one(span: Span, limit_us: u64, bot_audio_us: &[u64]) -> TurnResult {
    let before_start = bot_audio_us.partition_point(|&a| a <= span.start_us);
    let speaking =
        before_start > 0 && span.start_us - bot_audio_us[before_start - 1] < SPEAKING_HOLD_US;
    if speaking {
        return TurnResult {
            outcome: Outcome::BotSpeaking,
            first_bot_audio_us: None,
            v2v_ms: None,
        };
    }
    let first = bot_audio_us
        .get(before_start)
        .copied()
        .filter(|&a| a < limit_us);
    let v2v_ms = first.map(|a| (a as f64 - span.end_us as f64) / 1000.0);
    let outcome = match first {
        None => Outcome::NoResponse,
        Some(a) if a <= span.end_us => Outcome::TalkedOver,
        Some(_) => Outcome::Answered,
    };
    TurnResult {
        outcome,
        first_bot_audio_us: first,
        v2v_ms,
    }
}

/// Peak-amplitude threshold for "non-silent" bot audio: a PCM16 message whose
/// largest |sample| is at least this (about -36 dBFS) carries speech. Digital
/// silence, dither and a background like the fixtures' noise bed (20 ms frame
/// peaks up to 289 in `en_two_utterances`) stay below it, so a bot that echoes or
/// sends comfort noise is not taken for an answer; speech frames of the fixtures
/// peak at a median of about 3800 and the mock TTS tone at 6000.
pub(crate) const NON_SILENT_PEAK: i32 = 500;

/// Whether a PCM16 little-endian message has a sample at or above the threshold.
pub(crate) fn is_non_silent_pcm16(bytes: &[u8]) -> bool {
    bytes
        .chunks_exact(2)
        .any(|b| loud(i16::from_le_bytes([b[0], b[1]])))
}

/// Whether decoded audio has a sample at or above the threshold.
pub(crate) fn is_non_silent(samples: &[i16]) -> bool {
    samples.iter().any(|&s| loud(s))
}

fn loud(sample: i16) -> bool {
    i32::from(sample).abs() >= NON_SILENT_PEAK
}

/// Whether decoded audio whose largest absolute sample is `peak` is non-silent.
pub(crate) fn is_loud_peak(peak: u16) -> bool {
    i32::from(peak) >= NON_SILENT_PEAK
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;
    fn two() -> Vec<Span> {
        vec![
            Span {
                start_us: 500 * MS,
                end_us: 3000 * MS,
            },
            Span {
                start_us: 7000 * MS,
                end_us: 9800 * MS,
            },
        ]
    }

    #[test]
    fn replies_after_each_end_are_answered_with_their_latency() {
        let bot: Vec<u64> = [3800, 3820, 3840, 10_600, 10_620]
            .iter()
            .map(|m| m * MS)
            .collect();
        let r = classify(&two(), &bot, 6000 * MS);
        assert_eq!(r[0].outcome, Outcome::Answered);
        assert_eq!(r[0].v2v_ms, Some(800.0));
        assert_eq!(r[1].outcome, Outcome::Answered);
        assert_eq!(r[1].v2v_ms, Some(800.0));
    }

    #[test]
    fn audio_before_the_end_of_speech_is_talked_over() {
        let bot = vec![2000 * MS, 2020 * MS];
        let r = classify(&two(), &bot, 6000 * MS);
        assert_eq!(r[0].outcome, Outcome::TalkedOver);
        assert_eq!(r[0].v2v_ms, Some(-1000.0));
        assert_eq!(r[1].outcome, Outcome::NoResponse);
    }

    #[test]
    fn a_bot_still_speaking_at_the_start_is_bot_speaking() {
        // A reply to turn 1 that runs into turn 2's start.
        let mut bot: Vec<u64> = (0..200).map(|k| 3800 * MS + k * 20 * MS).collect();
        bot.retain(|&a| a <= 7000 * MS);
        let r = classify(&two(), &bot, 6000 * MS);
        assert_eq!(r[0].outcome, Outcome::Answered);
        assert_eq!(r[1].outcome, Outcome::BotSpeaking);
        // Stopped 100 ms or more before the start: not speaking any more.
        let r = classify(&two(), &[6900 * MS, 10_000 * MS], 6000 * MS);
        assert_eq!(r[1].outcome, Outcome::Answered);
    }

    #[test]
    fn late_replies_are_no_response_not_the_next_turns_answer() {
        // First reply comes only after turn 2 has started: turn 1 lost.
        let r = classify(&two(), &[7100 * MS], 6000 * MS);
        assert_eq!(r[0].outcome, Outcome::NoResponse);
        assert_eq!(r[1].outcome, Outcome::TalkedOver);
        // Beyond the window after the last turn.
        let r = classify(&two(), &[9800 * MS + 6001 * MS], 6000 * MS);
        assert_eq!(r[1].outcome, Outcome::NoResponse);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn silence_threshold_is_on_the_peak() {
        let quiet: Vec<u8> = [0i16, 289, -499, 50]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        assert!(!is_non_silent_pcm16(&quiet));
        let loud: Vec<u8> = [0i16, -500].iter().flat_map(|s| s.to_le_bytes()).collect();
        assert!(is_non_silent_pcm16(&loud));
        assert!(!is_non_silent_pcm16(&[]));
    }
}
