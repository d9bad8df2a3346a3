//! The TurnDriver: owns the call's [`TurnMachine`], feeds it the VAD, STT and
//! output events, executes its actions and arms its one timer.
//!
//! Driving rule (the machine's): after every input, drain `poll_action` until it
//! is empty, then sleep until `poll_timeout` (a due deadline is handled at once,
//! never slept on) or the next input.
//!
//! Actions: marks go to the shared timeline (a `TurnEnd` also ends the turn in
//! the Smart Turn ring); `FinalizeStt` goes to the STT stage (never waited on);
//! `RequestVerdict` runs the [`VerdictSource`] (a fixed verdict is answered at
//! once; a Smart Turn analysis runs on its pool, and on an inline pool its
//! result is taken as soon as it is submitted); responses go to the LLM stage;
//! `CancelResponse` and `Interrupt` raise the epoch floor, which every stage
//! watches (the output stage clears the transport); `EndCall` ends the driver.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use brisvox_core::Epoch;
use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_models::pool::{JobHandle, PoolError, Priority};
use brisvox_models::smart_turn::{
    RING_SAMPLES, SmartTurnError, SmartTurnRing, Verdict as ModelVerdict,
};
use tokio::sync::{mpsc, watch};

use super::llm::LlmInput;
use super::{SharedTimeline, now, sleep_until};
use crate::events::{EngineEvent, EventSink};
use crate::models::VerdictSource;
use crate::report::{CallEnd, REPORT_TURN_RECORDS};
use crate::turn::{Action, StopId, TurnCounters, TurnMachine, Verdict};

/// What the other stages tell the driver.
#[derive(Debug)]
pub(crate) enum DriverInput {
    /// The VAD confirmed speech that started at `at` (audio time).
    SpeechStart { at: Instant, decided: Instant },
    /// The VAD confirmed a stop; speech ended at `speech_end` (backdated).
    SpeechEnd {
        speech_end: Instant,
        decided: Instant,
    },
    /// An interim transcript.
    Interim(String),
    /// A final transcript.
    Final { text: String, from_finalize: bool },
    /// The STT session is gone for good.
    SttLost,
    /// The first frame of `epoch`'s response reached the transport.
    AudioStarted(Epoch),
    /// `epoch`'s response has played out (or produced nothing, or failed).
    ResponseFinished(Epoch),
    /// The caller hung up.
    Hangup,
    /// The transport refused audio.
    TransportClosed,
}

/// What the driver returns when the call ends.
#[derive(Debug)]
pub(crate) struct DriverOutcome {
    pub(crate) counters: TurnCounters,
    pub(crate) end: CallEnd,
    pub(crate) records: Vec<TurnRecord>,
    pub(crate) records_dropped: u64,
}

/// A Smart Turn job's result and the snapshot buffer it hands back.
type AnalysisResult = (Result<ModelVerdict, SmartTurnError>, Vec<i16>);

/// The TurnDriver actor.
pub(crate) struct TurnDriver {
    machine: TurnMachine,
    inbox: mpsc::Receiver<DriverInput>,
    timeline: SharedTimeline,
    floor: watch::Sender<Epoch>,
    llm: mpsc::Sender<LlmInput>,
    finalize: mpsc::Sender<()>,
    verdicts: VerdictSource,
    ring: Option<Arc<Mutex<SmartTurnRing>>>,
    events: EventSink,
    /// The analysis in flight on a threaded pool.
    analysis: Option<(StopId, JobHandle<AnalysisResult>)>,
    snapshot: Option<Vec<i16>>,
    records: Vec<TurnRecord>,
    records_dropped: u64,
    end: Option<CallEnd>,
}

/// What the driver is built from.
pub(crate) struct DriverParts {
    pub(crate) machine: TurnMachine,
    pub(crate) inbox: mpsc::Receiver<DriverInput>,
    pub(crate) timeline: SharedTimeline,
    pub(crate) floor: watch::Sender<Epoch>,
    pub(crate) llm: mpsc::Sender<LlmInput>,
    /// Finalize requests to the STT stage (never waited on).
    pub(crate) finalize: mpsc::Sender<()>,
    pub(crate) verdicts: VerdictSource,
    pub(crate) ring: Option<Arc<Mutex<SmartTurnRing>>>,
    /// Where the call's events go.
    pub(crate) events: EventSink,
}

impl TurnDriver {
    /// Builds the actor.
    pub(crate) fn new(parts: DriverParts) -> Self {
        let snapshot = parts
            .ring
            .as_ref()
            .map(|_| Vec::with_capacity(RING_SAMPLES));
        TurnDriver {
            machine: parts.machine,
            inbox: parts.inbox,
            timeline: parts.timeline,
            floor: parts.floor,
            llm: parts.llm,
            finalize: parts.finalize,
            verdicts: parts.verdicts,
            ring: parts.ring,
            events: parts.events,
            analysis: None,
            snapshot,
            records: Vec::new(),
            records_dropped: 0,
            end: None,
        }
    }

    /// Runs the call's turns until it ends; returns the turn records.
    pub(crate) async fn run(mut self) -> DriverOutcome {
        loop {
            self.run_actions().await;
            if self.end.is_some() {
                break;
            }
            let deadline = self.machine.poll_timeout();
            if deadline.is_some_and(|d| d <= now()) {
                self.machine.handle_timeout(now());
                continue;
            }
            tokio::select! {
                biased;
                result = analysis(&mut self.analysis), if self.analysis.is_some() => {
                    self.on_analysis(result);
                }
                input = self.inbox.recv() => match input {
                    Some(input) => self.on_input(input),
                    None => self.end = Some(CallEnd::Hangup),
                },
                () = sleep_until(deadline) => self.machine.handle_timeout(now()),
            }
        }
        self.finish()
    }

    fn finish(mut self) -> DriverOutcome {
        self.machine.handle_hangup(now());
        self.timeline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish();
        self.collect_records();
        DriverOutcome {
            counters: self.machine.counters(),
            // Cannot be None: the loop only ends with an end set.
            end: self.end.unwrap_or(CallEnd::Hangup),
            records: self.records,
            records_dropped: self.records_dropped,
        }
    }

    fn on_input(&mut self, input: DriverInput) {
        let m = &mut self.machine;
        match input {
            DriverInput::SpeechStart { at, decided } => m.handle_speech_start(decided, at),
            DriverInput::SpeechEnd {
                speech_end,
                decided,
            } => m.handle_speech_end(decided, speech_end),
            DriverInput::Interim(text) => {
                m.handle_interim(now(), &text);
                self.events.emit(EngineEvent::Transcript {
                    text,
                    is_final: false,
                });
            }
            DriverInput::Final {
                text,
                from_finalize,
            } => {
                m.handle_final(now(), &text, from_finalize);
                self.events.emit(EngineEvent::Transcript {
                    text,
                    is_final: true,
                });
            }
            DriverInput::AudioStarted(epoch) => {
                m.handle_response_audio_started(now(), epoch);
                self.events.emit(EngineEvent::BotSpeakingStarted { epoch });
            }
            DriverInput::ResponseFinished(epoch) => {
                m.handle_response_finished(now(), epoch);
                self.events.emit(EngineEvent::BotSpeakingStopped { epoch });
            }
            DriverInput::SttLost => self.end = Some(CallEnd::SttLost),
            DriverInput::Hangup => self.end = Some(CallEnd::Hangup),
            DriverInput::TransportClosed => self.end = Some(CallEnd::TransportClosed),
        }
    }

    /// Executes every pending action of the machine.
    async fn run_actions(&mut self) {
        while let Some(action) = self.machine.poll_action() {
            match action {
                Action::Mark(epoch, event, at) => self.on_mark(epoch, event, at),
                // A full queue means a stalled session: the final timeout covers it.
                Action::FinalizeStt => {
                    let _ = self.finalize.try_send(());
                }
                Action::RequestVerdict { stop, .. } => self.request_verdict(stop),
                Action::StartResponse { epoch, user_text } => {
                    self.send_llm(LlmInput::Start { epoch, user_text }).await;
                }
                Action::Speak { epoch, text, .. } => {
                    self.send_llm(LlmInput::Speak { epoch, text }).await;
                }
                Action::CancelResponse { new, .. } => {
                    self.floor.send_replace(new);
                }
                Action::Interrupt {
                    old,
                    new,
                    speech_start,
                } => {
                    self.timeline
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .interrupt(old, new, now(), speech_start);
                    self.floor.send_replace(new);
                    self.events.emit(EngineEvent::Interrupted { old, new });
                }
                Action::EndCall(reason) => self.end = Some(CallEnd::Machine(reason)),
            }
        }
    }

    fn on_mark(&mut self, epoch: Epoch, event: TurnEvent, at: Instant) {
        super::mark(&self.timeline, epoch, event, at);
        if event == TurnEvent::TurnEnd
            && let Some(ring) = &self.ring
        {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .end_turn();
        }
        // Older turns are finished by now, and their late AudioOutStopped
        // patches (made right after a barge-in's clear) are in.
        if event == TurnEvent::TurnEnd {
            self.collect_records();
        }
    }

    /// Moves finished turn records from the timeline into the report.
    fn collect_records(&mut self) {
        let mut timeline = self.timeline.lock().unwrap_or_else(PoisonError::into_inner);
        for record in timeline.drain_finished() {
            self.events.emit(EngineEvent::TurnFinished {
                record: Box::new(record.clone()),
            });
            if self.records.len() == REPORT_TURN_RECORDS {
                self.records.remove(0);
                self.records_dropped += 1;
            }
            self.records.push(record);
        }
    }

    async fn send_llm(&mut self, input: LlmInput) {
        if self.llm.send(input).await.is_err() {
            self.end.get_or_insert(CallEnd::Hangup);
        }
    }

    fn request_verdict(&mut self, stop: StopId) {
        let (model, pool) = match &self.verdicts {
            VerdictSource::Fixed(verdict) => {
                self.machine.handle_verdict(now(), stop, *verdict);
                return;
            }
            VerdictSource::SmartTurn { model, pool } => (Arc::clone(model), pool.clone()),
        };
        let mut snapshot = self
            .snapshot
            .take()
            .unwrap_or_else(|| Vec::with_capacity(RING_SAMPLES));
        if let Some(ring) = &self.ring {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .snapshot_into(&mut snapshot);
        }
        let job = move || {
            let verdict = model.analyze(&snapshot);
            (verdict, snapshot)
        };
        match pool.submit(Priority::Normal, None, job) {
            Ok(mut handle) => match handle.try_take() {
                Some(result) => self.on_analysis_of(stop, result),
                None => self.analysis = Some((stop, handle)),
            },
            Err(_) => self.machine.handle_verdict(now(), stop, Verdict::Failed),
        }
    }

    fn on_analysis(&mut self, result: Result<AnalysisResult, PoolError>) {
        if let Some((stop, _)) = self.analysis.take() {
            self.on_analysis_of(stop, result);
        }
    }

    fn on_analysis_of(&mut self, stop: StopId, result: Result<AnalysisResult, PoolError>) {
        let verdict = match result {
            Ok((verdict, buffer)) => {
                self.snapshot = Some(buffer);
                match verdict {
                    Ok(v) if v.complete => Verdict::Complete {
                        probability: v.probability,
                    },
                    Ok(v) => Verdict::Incomplete {
                        probability: v.probability,
                    },
                    Err(_) => Verdict::Failed,
                }
            }
            Err(_) => Verdict::Failed,
        };
        self.machine.handle_verdict(now(), stop, verdict);
    }
}

/// The result of the analysis in flight.
///
/// # Cancel safety
///
/// Cancel safe: the handle stays in place until it resolves.
async fn analysis(
    pending: &mut Option<(StopId, JobHandle<AnalysisResult>)>,
) -> Result<AnalysisResult, PoolError> {
    match pending {
        Some((_, handle)) => handle.await,
        None => std::future::pending().await,
    }
}
