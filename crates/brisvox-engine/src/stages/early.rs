//! Early analysis: Smart Turn started at the VAD's falling hint, its verdict
//! reused at the confirmed stop of the same fall.
//!
//! The turn driver owns one [`EarlyAnalysis`] when
//! [`EngineConfig::early_analysis`](crate::EngineConfig::early_analysis) is set
//! (and the verdicts come from Smart Turn). At a hint it asks
//! [`may_start`](EarlyAnalysis::may_start) (the per-turn budget), snapshots the
//! ring, starts the analysis and hands it over with
//! [`started`](EarlyAnalysis::started). At the stop,
//! [`take_for_stop`](EarlyAnalysis::take_for_stop) gives the early verdict (or
//! the analysis still running) when the reuse rule holds:
//!
//! - same fall: the stop carries the hint's speech end;
//! - at most `max_tail` of audio went into the ring since the snapshot;
//! - no newer hint and no speech start since (both discard the job).
//!
//! Counters: every started job ends as reused (its verdict, or the running
//! analysis, answered the stop), wasted (discarded: newer hint, speech start,
//! turn end, hang-up, or a stop the rule refused) or failed (the early
//! analysis gave no verdict; the stop then runs the normal analysis), so
//! `started == reused + wasted + failed` once none is in flight. Hints over
//! the budget are counted as capped and start nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use brisvox_models::smart_turn::{PendingVerdict, SmartTurnError, Verdict as ModelVerdict};

use crate::config::EarlyAnalysisConfig;
use crate::report::EarlyAnalysisCounters;

/// Samples per millisecond at the ring's 16 kHz.
const SAMPLES_PER_MS: u64 = 16;

/// An early analysis's result, or the analysis still running.
pub(crate) enum EarlyResult {
    /// The verdict (or the failure) is in.
    Ready(Result<ModelVerdict, SmartTurnError>),
    /// Still running on the pool.
    Running(PendingVerdict),
}

struct EarlyJob {
    /// The speech end the stop of this fall will carry.
    speech_end: Instant,
    /// The ring's `samples_written` at the snapshot.
    samples_at: u64,
    result: EarlyResult,
}

/// The early analysis of one call.
pub(crate) struct EarlyAnalysis {
    config: EarlyAnalysisConfig,
    job: Option<EarlyJob>,
    this_turn: u32,
    counters: EarlyAnalysisCounters,
}

impl EarlyAnalysis {
    pub(crate) fn new(config: EarlyAnalysisConfig) -> Self {
        EarlyAnalysis {
            config,
            job: None,
            this_turn: 0,
            counters: EarlyAnalysisCounters::default(),
        }
    }

    /// A hint arrived: discards an older job (wasted) and says whether the
    /// turn's budget allows a new one (if not, the hint is counted as capped).
    pub(crate) fn may_start(&mut self) -> bool {
        self.discard();
        if self.this_turn >= self.config.max_per_turn {
            self.counters.capped += 1;
            return false;
        }
        true
    }

    /// The analysis started for the hint of the fall ending at `speech_end`,
    /// snapshotted when the ring held `samples_at` samples.
    pub(crate) fn started(
        &mut self,
        speech_end: Instant,
        samples_at: u64,
        mut pending: PendingVerdict,
    ) {
        self.counters.started += 1;
        self.this_turn += 1;
        // A refusal, or an inline pool's verdict, is ready now.
        let result = match Pin::new(&mut pending).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => EarlyResult::Ready(result),
            Poll::Pending => EarlyResult::Running(pending),
        };
        self.job = Some(EarlyJob {
            speech_end,
            samples_at,
            result,
        });
    }

    /// Speech started, or the call ends: a job in hand is wasted.
    pub(crate) fn discard(&mut self) {
        if self.job.take().is_some() {
            self.counters.wasted += 1;
        }
    }

    /// The user turn ended: a job in hand is wasted, the budget is renewed.
    pub(crate) fn new_turn(&mut self) {
        self.discard();
        self.this_turn = 0;
    }

    /// The stop of the fall ending at `stop_speech_end` asks for a verdict
    /// with the ring at `samples_now`: the early result when the reuse rule
    /// holds and the analysis has not failed; `None` means "run the normal
    /// analysis" (the job, if any, is counted wasted or failed).
    pub(crate) fn take_for_stop(
        &mut self,
        stop_speech_end: Option<Instant>,
        samples_now: u64,
    ) -> Option<EarlyResult> {
        let job = self.job.take()?;
        let tail_samples = samples_now.saturating_sub(job.samples_at);
        let max_tail_samples = self.config.max_tail.as_millis() as u64 * SAMPLES_PER_MS;
        if stop_speech_end != Some(job.speech_end) || tail_samples > max_tail_samples {
            self.counters.wasted += 1;
            return None;
        }
        match job.result {
            EarlyResult::Ready(Err(_)) => {
                self.counters.failed += 1;
                None
            }
            result => {
                self.counters.reused += 1;
                Some(result)
            }
        }
    }

    /// The analysis in flight, if any (the driver awaits it).
    pub(crate) fn running(&mut self) -> Option<&mut PendingVerdict> {
        match &mut self.job {
            Some(EarlyJob {
                result: EarlyResult::Running(pending),
                ..
            }) => Some(pending),
            _ => None,
        }
    }

    /// The analysis in flight finished.
    pub(crate) fn on_ready(&mut self, result: Result<ModelVerdict, SmartTurnError>) {
        if let Some(job) = &mut self.job {
            job.result = EarlyResult::Ready(result);
        }
    }

    pub(crate) fn counters(&self) -> EarlyAnalysisCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const VERDICT: ModelVerdict = ModelVerdict {
        probability: 0.9,
        complete: true,
        features_us: 0,
        model_us: 0,
    };

    /// An early analysis with a job whose result is already `result`.
    fn with_job(
        speech_end: Instant,
        result: Result<ModelVerdict, SmartTurnError>,
    ) -> EarlyAnalysis {
        let mut early = EarlyAnalysis::new(EarlyAnalysisConfig::default());
        assert!(early.may_start());
        early.counters.started += 1;
        early.this_turn += 1;
        early.job = Some(EarlyJob {
            speech_end,
            samples_at: 16_000,
            result: EarlyResult::Ready(result),
        });
        early
    }

    #[test]
    fn the_stop_of_the_same_fall_reuses_the_verdict() {
        let t = tokio::time::Instant::now().into_std();
        let mut early = with_job(t, Ok(VERDICT));
        // 300 ms of audio since the snapshot: still within max_tail.
        let reused = early.take_for_stop(Some(t), 16_000 + 300 * 16);
        assert!(matches!(reused, Some(EarlyResult::Ready(Ok(v))) if v == VERDICT));
        assert_eq!(early.counters().reused, 1);
    }

    #[test]
    fn another_fall_or_a_long_tail_is_wasted() {
        let t = tokio::time::Instant::now().into_std();
        let mut early = with_job(t, Ok(VERDICT));
        let later = t + Duration::from_millis(32);
        assert!(early.take_for_stop(Some(later), 16_000).is_none());
        let mut early_long = with_job(t, Ok(VERDICT));
        assert!(
            early_long
                .take_for_stop(Some(t), 16_000 + 301 * 16)
                .is_none()
        );
        for e in [early, early_long] {
            let c = e.counters();
            assert_eq!((c.started, c.reused, c.wasted), (1, 0, 1));
        }
    }

    #[test]
    fn a_failed_early_analysis_is_counted_and_not_reused() {
        let t = tokio::time::Instant::now().into_std();
        let mut early = with_job(t, Err(SmartTurnError::Saturated));
        assert!(early.take_for_stop(Some(t), 16_000).is_none());
        let c = early.counters();
        assert_eq!((c.started, c.failed, c.reused, c.wasted), (1, 1, 0, 0));
    }

    #[test]
    fn a_speech_start_or_a_newer_hint_discards_the_job() {
        let t = tokio::time::Instant::now().into_std();
        let mut early = with_job(t, Ok(VERDICT));
        early.discard();
        assert!(early.take_for_stop(Some(t), 16_000).is_none());
        let mut newer = with_job(t, Ok(VERDICT));
        assert!(newer.may_start(), "a newer hint replaces the job");
        for e in [early, newer] {
            assert_eq!(e.counters().wasted, 1);
        }
    }

    #[test]
    fn the_budget_caps_hints_and_is_renewed_at_the_turn_end() {
        let mut early = EarlyAnalysis::new(EarlyAnalysisConfig {
            max_per_turn: 1,
            ..EarlyAnalysisConfig::default()
        });
        early.this_turn = 1;
        assert!(!early.may_start());
        assert_eq!(early.counters().capped, 1);
        early.new_turn();
        assert!(early.may_start());
    }
}
