//! What a call did: turns, responses, barge-ins, per-turn timelines, provider
//! failures by kind, the output pacer's counters and how the call ended.

use std::sync::{Mutex, PoisonError};

use brisvox_audio::PacerMetrics;
use brisvox_core::timeline::{TimelineCounters, TurnRecord};
use brisvox_providers::ErrorKind;

use crate::controls::CallContext;
use crate::turn::{EndReason, TurnCounters};

/// Most turn records a report keeps (the oldest are dropped and counted).
pub const REPORT_TURN_RECORDS: usize = 1024;

/// Which provider failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderStage {
    /// Speech-to-text.
    Stt,
    /// The LLM, before its first token.
    LlmBeforeFirstToken,
    /// The LLM, after its first token.
    LlmAfterFirstToken,
    /// Text-to-speech.
    Tts,
}

/// One kind of provider failure and how often it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureCount {
    /// Where it happened.
    pub stage: ProviderStage,
    /// What kind of error it was.
    pub kind: ErrorKind,
    /// How many times.
    pub count: u64,
}

/// Provider failures of one call, shared by the stages (a short lock per
/// failure, never on the media path).
#[derive(Debug, Default)]
pub(crate) struct FailureBook {
    counts: Mutex<Vec<FailureCount>>,
}

impl FailureBook {
    /// Counts one failure.
    pub(crate) fn count(&self, stage: ProviderStage, kind: ErrorKind) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        match counts
            .iter_mut()
            .find(|c| c.stage == stage && c.kind == kind)
        {
            Some(c) => c.count += 1,
            None => counts.push(FailureCount {
                stage,
                kind,
                count: 1,
            }),
        }
    }

    /// The counts so far.
    pub(crate) fn snapshot(&self) -> Vec<FailureCount> {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What the early analyses of a call did (all zero when it is off).
/// `started == reused + wasted + failed` at the end of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EarlyAnalysisCounters {
    /// Analyses started at a falling hint.
    pub started: u64,
    /// Of those, the ones whose verdict (or running analysis) answered the stop.
    pub reused: u64,
    /// Discarded: a newer hint, a speech start, the turn's end, the hang-up,
    /// or a stop the reuse rule refused.
    pub wasted: u64,
    /// Finished without a verdict before the stop took them.
    pub failed: u64,
    /// Hints that started nothing: the turn's budget was spent.
    pub capped: u64,
}

/// How the call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallEnd {
    /// The caller hung up (the transport source ended).
    Hangup,
    /// The turn machine ended it (idle guard or maximum duration).
    Machine(EndReason),
    /// The STT session was lost and could not be reconnected.
    SttLost,
    /// The transport sink refused audio (the caller's side is gone).
    TransportClosed,
    /// A [`Control::Hangup`](crate::edge::Control::Hangup) ended it (the
    /// agent, the application or the server asked).
    Requested,
    /// A [`Control::Transfer`](crate::edge::Control::Transfer) ended it: the
    /// route hands the phone call over to `to`.
    Transferred {
        /// Where to, as the control gave it.
        to: String,
    },
}

/// What speculative LLM runs did in a call (all zero when speculation is
/// off; `crate::turn::speculation` and the LLM stage's `speculative` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpeculationCounters {
    /// Runs started.
    pub started: u64,
    /// Runs whose output became the turn's answer.
    pub committed: u64,
    /// Runs dropped because the turn ended with other words, or a newer
    /// candidate replaced them.
    pub discarded: u64,
    /// Runs dropped because the caller spoke again.
    pub withdrawn: u64,
    /// Output tokens of the runs not committed (see the module docs).
    pub wasted_output_tokens: u64,
    /// Input tokens the provider reported for the runs not committed.
    pub wasted_input_tokens: u64,
}

/// The summary of one call, returned by [`run_call`](crate::run_call).
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The turn machine's counters (turns, responses, barge-ins, verdicts ...).
    pub turn_counters: TurnCounters,
    /// Every finished turn's timeline, oldest first (at most [`REPORT_TURN_RECORDS`]).
    pub turns: Vec<TurnRecord>,
    /// Turn records dropped because the report was full.
    pub turns_dropped: u64,
    /// Marks the timeline could not attribute (late, ignored).
    pub timeline: TimelineCounters,
    /// Responses that ended by a provider failure (LLM or TTS), after or before
    /// any audio.
    pub failed_responses: u64,
    /// Provider failures by stage and kind.
    pub provider_failures: Vec<FailureCount>,
    /// The output pacer's counters.
    pub pacer: PacerMetrics,
    /// The early analyses (Smart Turn at the falling hint).
    pub early_analysis: EarlyAnalysisCounters,
    /// Caller frames read from the transport.
    pub frames_in: u64,
    /// Caller frames the STT session could not take (its queue was full or it was gone).
    pub stt_frames_dropped: u64,
    /// VAD windows without a probability (dropped after being held past the
    /// hold's bound, failed, or lost on a full outcome queue).
    pub vad_windows_lost: u64,
    /// VAD windows the VAD service refused at first (its queue was full) and
    /// took on a retry: overload turned into delay.
    pub vad_windows_retried: u64,
    /// TTS chunks whose normalisation off the worker failed or timed out; the
    /// written text was spoken instead.
    pub normalize_failures: u64,
    /// Frames handed to the transport sink.
    pub frames_out: u64,
    /// Tokens the LLM provider reported, summed over the call's completions.
    pub llm_usage: crate::tools::LlmUsage,
    /// The call's tool calls.
    pub tools: crate::tools::ToolCounters,
    /// Speculative LLM runs.
    pub speculation: SpeculationCounters,
    /// How the call ended.
    pub end: CallEnd,
    /// Who called, with the call's metadata as it stood at the end.
    pub context: CallContext,
}

impl CallReport {
    /// How many failures of `stage` were counted, over all kinds.
    pub fn failures_of(&self, stage: ProviderStage) -> u64 {
        self.provider_failures
            .iter()
            .filter(|c| c.stage == stage)
            .map(|c| c.count)
            .sum()
    }
}
