//! One simulated call of `sim-load`: a scripted caller, mock providers of its
//! own and the engine's full pipeline ([`run_call`]) in between.
//!
//! - The caller ([`caller_samples`]) says `turns` utterances: each a steady
//!   300 Hz tone of `speech_ms` (about -18 dBFS, speech for the energy VAD and
//!   the mock STT), followed by `gap_ms` of digital silence, long enough for the
//!   answer to play out; after the last gap it hangs up.
//! - The providers ([`providers`]) are the seeded mocks of `brisvox-providers`
//!   with log-normal latencies (medians: STT final 150 ms, LLM first token
//!   350 ms, TTS first byte 150 ms; sigma 0.3 of the log), one set per call,
//!   seeded from the run's seed and the call's index, so each call draws the same
//!   delays in every run whatever the interleaving.
//! - Models: the energy VAD and a fixed "complete" verdict (no model files), as
//!   the engine's own simulator; the VAD's stop hangover is 300 ms.
//! - The transport sink ([`NullSink`]) takes every paced frame at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_core::{AudioFrame, Epoch};
use brisvox_engine::sim::SimCaller;
use brisvox_engine::{CallEdge, CallEnd, CallReport, EngineConfig, Models, Providers, run_call};
use brisvox_engine::{CallSink, TransportClosed};
use brisvox_providers::mock::{
    Latency, MockLlm, MockLlmConfig, MockStt, MockSttConfig, MockTts, MockTtsConfig,
};

use super::metrics::{TurnMarks, TurnTiming};

/// Median STT final delay after finalize, ms.
pub(crate) const STT_FINAL_MEDIAN_MS: f64 = 150.0;
/// Median LLM first-token delay, ms.
pub(crate) const LLM_FIRST_TOKEN_MEDIAN_MS: f64 = 350.0;
/// Median TTS first-byte delay, ms.
pub(crate) const TTS_FIRST_BYTE_MEDIAN_MS: f64 = 150.0;
/// Spread (standard deviation of the natural log) of every mock delay.
pub(crate) const LATENCY_SIGMA: f64 = 0.3;
/// Gap between two LLM tokens (one word each), ms.
pub(crate) const LLM_TOKEN_INTERVAL_MS: u64 = 30;
/// What the caller says (the mock STT's transcript of every utterance).
pub(crate) const TRANSCRIPT: &str = "What time does the office open tomorrow?";
/// What the bot answers (27 characters: 1.6 s of mock TTS audio).
pub(crate) const ANSWER: &str = "Sure, I can help with that.";
/// The VAD's stop hangover in the simulator, ms.
pub(crate) const MIN_SILENCE_MS: u64 = 300;
/// Silence before the first utterance, ms.
const LEAD_IN_MS: u64 = 300;
/// Peak of the caller's tone (PCM16): RMS about -18 dBFS.
const TONE_PEAK: f64 = 6000.0;
/// Frequency of the caller's tone, Hz.
const TONE_HZ: f64 = 300.0;

/// The caller's script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Script {
    /// Utterances per call.
    pub(crate) turns: usize,
    /// Length of each utterance, ms.
    pub(crate) speech_ms: u64,
    /// Silence after each utterance, ms.
    pub(crate) gap_ms: u64,
}

impl Script {
    /// How long the caller stays on the line, ms.
    pub(crate) fn duration_ms(&self) -> u64 {
        LEAD_IN_MS + self.turns as u64 * (self.speech_ms + self.gap_ms)
    }
}

/// The caller's audio (16 kHz mono PCM16): lead-in silence, then `turns` times
/// a tone of `speech_ms` and `gap_ms` of silence.
pub(crate) fn caller_samples(script: Script) -> Vec<i16> {
    let per_ms = 16usize;
    let mut samples = vec![0i16; LEAD_IN_MS as usize * per_ms];
    for _ in 0..script.turns {
        let tone = (0..script.speech_ms as usize * per_ms).map(|i| {
            let t = i as f64 / 16_000.0;
            (TONE_PEAK * (std::f64::consts::TAU * TONE_HZ * t).sin()) as i16
        });
        samples.extend(tone);
        samples.extend(std::iter::repeat_n(0, script.gap_ms as usize * per_ms));
    }
    samples
}

/// The engine settings of every simulated call: the defaults with the
/// simulator's 300 ms stop hangover.
pub(crate) fn engine_config() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.vad.min_silence = Duration::from_millis(MIN_SILENCE_MS);
    config
}

/// The mock providers of call `index` of a run seeded with `seed`.
pub(crate) fn providers(seed: u64, index: u64) -> Providers {
    let seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index);
    let lognormal = |median_ms| Latency::LogNormal {
        median_ms,
        sigma: LATENCY_SIGMA,
    };
    let stt = MockStt::new(MockSttConfig {
        seed,
        final_latency: lognormal(STT_FINAL_MEDIAN_MS),
        default_transcript: TRANSCRIPT.to_owned(),
        ..MockSttConfig::default()
    });
    let llm = MockLlm::new(MockLlmConfig {
        seed,
        first_token: lognormal(LLM_FIRST_TOKEN_MEDIAN_MS),
        token_interval: Latency::Fixed(LLM_TOKEN_INTERVAL_MS),
        words_per_token: 1,
        default_answer: ANSWER.to_owned(),
    });
    let tts = MockTts::new(MockTtsConfig {
        seed,
        first_byte: lognormal(TTS_FIRST_BYTE_MEDIAN_MS),
        ..MockTtsConfig::default()
    });
    Providers {
        tools: None,
        stt: Arc::new(stt),
        llm: Arc::new(llm),
        tts: Arc::new(tts),
    }
}

/// A transport sink that takes every frame at once and keeps nothing.
#[derive(Debug, Default)]
pub(crate) struct NullSink;

impl CallSink for NullSink {
    /// # Cancel safety
    ///
    /// Cancel safe: it completes at once.
    async fn send_audio(
        &mut self,
        _epoch: Epoch,
        _frame: AudioFrame,
    ) -> Result<(), TransportClosed> {
        Ok(())
    }

    async fn clear(&mut self, _floor: Epoch) {}
}

/// What one call did, reduced to what `sim-load` reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallOutcome {
    /// When the call was started.
    pub(crate) start: Option<Instant>,
    /// When `run_call` returned.
    pub(crate) end: Option<Instant>,
    /// Why the call counts as failed, if it does.
    pub(crate) failure: Option<String>,
    /// Utterances in the script.
    pub(crate) turns_expected: u64,
    /// Turns whose answer played out to its last frame, uninterrupted.
    pub(crate) turns_answered: u64,
    /// Barge-ins (the caller talked over the bot).
    pub(crate) barge_ins: u64,
    /// Answered turns missing one of the marks the overhead needs.
    pub(crate) marks_missing: u64,
    /// Caller frames the STT session could not take.
    pub(crate) stt_frames_dropped: u64,
    /// The timings of every answered turn with all its marks.
    pub(crate) timings: Vec<TurnTiming>,
}

/// Runs call `index`: the scripted caller against the engine with its mocks.
pub(crate) async fn run_one(
    index: u64,
    seed: u64,
    script: Script,
    audio: Arc<[i16]>,
) -> CallOutcome {
    let start = Instant::now();
    let result = run_call(
        engine_config(),
        CallEdge::new(SimCaller::new(audio), NullSink),
        providers(seed, index),
        Models::energy_and_complete(),
    )
    .await;
    let end = Instant::now();
    let mut outcome = match result {
        Ok(report) => outcome_of(&report, script.turns as u64),
        Err(e) => CallOutcome {
            failure: Some(format!("the call did not start: {e}")),
            turns_expected: script.turns as u64,
            ..CallOutcome::default()
        },
    };
    outcome.start = Some(start);
    outcome.end = Some(end);
    outcome
}

/// Reduces a call's report: answered turns, barge-ins, missing marks, timings,
/// and a failure when the call did not end by the caller's hang-up, a provider
/// failed, a response failed or there were more turns than utterances.
pub(crate) fn outcome_of(report: &CallReport, turns_expected: u64) -> CallOutcome {
    let mut outcome = CallOutcome {
        turns_expected,
        barge_ins: report.turn_counters.barge_ins,
        stt_frames_dropped: report.stt_frames_dropped,
        ..CallOutcome::default()
    };
    for record in &report.turns {
        let marks = TurnMarks::from_record(record);
        if !marks.played_out() || record.was_interrupted() {
            continue;
        }
        outcome.turns_answered += 1;
        match marks.timing() {
            Some(t) => outcome.timings.push(t),
            None => outcome.marks_missing += 1,
        }
    }
    outcome.failure = call_failure(report, turns_expected);
    outcome
}

fn call_failure(report: &CallReport, turns_expected: u64) -> Option<String> {
    if report.end != CallEnd::Hangup {
        return Some(format!(
            "the call ended by {:?}, not the hang-up",
            report.end
        ));
    }
    if !report.provider_failures.is_empty() {
        return Some(format!("provider failures: {:?}", report.provider_failures));
    }
    if report.failed_responses > 0 {
        return Some(format!("{} failed responses", report.failed_responses));
    }
    if report.turn_counters.turns > turns_expected || report.turns_dropped > 0 {
        return Some(format!(
            "{} turns ({} records dropped) for {turns_expected} utterances",
            report.turn_counters.turns, report.turns_dropped
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use brisvox_core::Epoch;
    use brisvox_core::timeline::{TimelineRecorder, TurnEvent, TurnRecord};
    use brisvox_engine::turn::TurnCounters;

    use super::*;

    #[test]
    fn the_script_is_lead_in_then_speech_and_gap_per_turn() {
        let script = Script {
            turns: 3,
            speech_ms: 500,
            gap_ms: 1000,
        };
        let samples = caller_samples(script);
        assert_eq!(samples.len() as u64, script.duration_ms() * 16);
        let loud = |from_ms: u64, to_ms: u64| {
            samples[(from_ms * 16) as usize..(to_ms * 16) as usize]
                .iter()
                .any(|&s| s.abs() > 1000)
        };
        assert!(!loud(0, 300));
        assert!(loud(300, 800));
        assert!(!loud(800, 1800));
        assert!(loud(1800, 2300));
        assert!(!loud(3800, 4800));
    }

    /// A report of one call with `records` as its finished turns.
    fn report(records: Vec<TurnRecord>, end: CallEnd) -> CallReport {
        CallReport {
            llm_usage: Default::default(),
            tools: Default::default(),
            speculation: Default::default(),
            turn_counters: TurnCounters {
                turns: records.len() as u64,
                barge_ins: records.iter().filter(|r| r.was_interrupted()).count() as u64,
                ..TurnCounters::default()
            },
            turns: records,
            turns_dropped: 0,
            timeline: Default::default(),
            failed_responses: 0,
            provider_failures: Vec::new(),
            pacer: Default::default(),
            early_analysis: Default::default(),
            frames_in: 0,
            stt_frames_dropped: 0,
            vad_windows_lost: 0,
            vad_windows_retried: 0,
            normalize_failures: 0,
            frames_out: 0,
            end,
            context: Default::default(),
        }
    }

    /// Turn `epoch` answered from `at_ms`; interrupted when `barge_in`.
    fn turn(r: &mut TimelineRecorder, base: Instant, epoch: u64, at_ms: u64, barge_in: bool) {
        use TurnEvent as E;
        let at = |ms: u64| base + Duration::from_millis(at_ms + ms);
        let mut events = vec![
            (E::UserSpeechStart, 0),
            (E::TurnEnd, 1000),
            (E::LlmRequest, 1000),
            (E::LlmRequestSent, 1001),
            (E::LlmFirstSentence, 1300),
            (E::TtsRequest, 1300),
            (E::TtsFirstByte, 1450),
            (E::FirstAudioOut, 1452),
        ];
        events.push(if barge_in {
            (E::Interrupted, 1600)
        } else {
            (E::LastAudioOut, 2000)
        });
        for (event, ms) in events {
            r.mark(Epoch(epoch), event, at(ms));
        }
    }

    #[test]
    fn an_interrupted_answer_is_not_answered_and_the_barge_in_is_counted() {
        let base = Instant::now();
        let mut r = TimelineRecorder::new();
        turn(&mut r, base, 1, 0, false);
        turn(&mut r, base, 2, 3000, true);
        turn(&mut r, base, 3, 6000, false);
        r.finish();
        let records: Vec<TurnRecord> = r.drain_finished().collect();
        let outcome = outcome_of(&report(records, CallEnd::Hangup), 3);
        assert_eq!(outcome.turns_answered, 2);
        assert_eq!(outcome.barge_ins, 1);
        assert_eq!(outcome.timings.len(), 2);
        assert_eq!(outcome.marks_missing, 0);
        assert_eq!(outcome.failure, None);
    }

    #[test]
    fn a_call_not_ended_by_the_caller_or_with_extra_turns_failed() {
        let ended = report(Vec::new(), CallEnd::TransportClosed);
        assert!(outcome_of(&ended, 3).failure.is_some());
        let mut extra = report(Vec::new(), CallEnd::Hangup);
        extra.turn_counters.turns = 4;
        assert!(outcome_of(&extra, 3).failure.is_some());
        let mut failed = report(Vec::new(), CallEnd::Hangup);
        failed.failed_responses = 1;
        assert!(outcome_of(&failed, 3).failure.is_some());
    }
}
