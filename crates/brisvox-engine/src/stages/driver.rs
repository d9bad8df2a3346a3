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
//! once; a Smart Turn analysis goes through a [`SmartTurnService`], whose
//! snapshot buffers are reused and whose refused and late analyses are failed
//! verdicts, counted; on an inline pool its result is taken as soon as it is
//! submitted); responses go to the LLM stage;
//!
//! Analyses that cannot change the outcome are not run: one for a stop the
//! machine no longer awaits (the caller went on, the turn ended by another
//! rule) is dropped, which cancels it while it waits for the executor; and
//! with an analysis hold ([`EngineConfig::analysis_hold`](crate::EngineConfig::analysis_hold))
//! the stop's audio is snapshotted at once but sent only when the verdict can
//! end the turn ([`TurnMachine::verdict_usable`]: the STT finals are in) or
//! the hold ends, so a caller who goes on before the final costs none.
//!
//! `CancelResponse`, `CutResponse` and `Interrupt` raise the epoch floor, which
//! every stage watches (the output stage clears the transport); `EndCall` ends
//! the driver.
//!
//! Controls from the call's edge arrive as [`DriverInput::Control`] with their
//! time: `say` and `respond` go to the machine ([`TurnMachine::handle_say`],
//! [`TurnMachine::handle_respond`]), a DTMF digit
//! becomes an event, metadata is merged into the call's [`CallContext`] (which
//! the driver owns and returns in the report), a hang-up request ends the call
//! ([`CallEnd::Requested`]), a transfer ends it naming where to
//! ([`CallEnd::Transferred`]); a control the route could not read, or one the
//! machine refuses, becomes [`EngineEvent::ControlRejected`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use brisvox_core::Epoch;
use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_models::smart_turn::{
    PendingVerdict, SmartTurnError, SmartTurnRing, SmartTurnService, Verdict as ModelVerdict,
};
use tokio::sync::{mpsc, watch};

use super::early::{EarlyAnalysis, EarlyResult};
use super::inbox::{DriverInput, LlmInput};
use super::{SharedTimeline, now, sleep_until};
use crate::config::EarlyAnalysisConfig;
use crate::edge::{CallContext, Control};
use crate::events::{EngineEvent, EventBus};
use crate::models::VerdictSource;
use crate::report::EarlyAnalysisCounters;
use crate::report::{CallEnd, REPORT_TURN_RECORDS};
use crate::turn::{Action, StopId, TurnCounters, TurnMachine, Verdict};

/// What the driver returns when the call ends.
#[derive(Debug)]
pub(crate) struct DriverOutcome {
    pub(crate) counters: TurnCounters,
    pub(crate) end: CallEnd,
    pub(crate) records: Vec<TurnRecord>,
    pub(crate) records_dropped: u64,
    pub(crate) early_analysis: EarlyAnalysisCounters,
    pub(crate) context: CallContext,
}

/// Where the driver's verdicts come from.
enum Verdicts {
    /// Every stop gets this verdict at once.
    Fixed(Verdict),
    /// Smart Turn analyses through the service.
    Service(SmartTurnService),
}

impl Verdicts {
    fn new(source: VerdictSource) -> Self {
        match source {
            VerdictSource::Fixed(verdict) => Verdicts::Fixed(verdict),
            // A service of the call's own around the given pool.
            VerdictSource::SmartTurn { model, pool } => {
                Verdicts::Service(SmartTurnService::with_pool(model, pool))
            }
            VerdictSource::Service(service) => Verdicts::Service(service),
        }
    }
}

/// The TurnDriver actor.
pub(crate) struct TurnDriver {
    machine: TurnMachine,
    inbox: mpsc::Receiver<DriverInput>,
    timeline: SharedTimeline,
    floor: watch::Sender<Epoch>,
    llm: mpsc::Sender<LlmInput>,
    finalize: mpsc::Sender<()>,
    verdicts: Verdicts,
    ring: Option<Arc<Mutex<SmartTurnRing>>>,
    events: EventBus,
    context: CallContext,
    /// The analysis in flight on a threaded pool.
    analysis: Option<(StopId, PendingVerdict)>,
    /// How long a stop's analysis may wait for the stop's final.
    analysis_hold: std::time::Duration,
    /// The stop's snapshot held until its verdict can be used (or the hold ends).
    held: Option<Held>,
    /// Early analysis at falling hints (with Smart Turn, when configured).
    early: Option<EarlyAnalysis>,
    /// The speech end of the last confirmed stop.
    last_stop: Option<Instant>,
    records: Vec<TurnRecord>,
    records_dropped: u64,
    end: Option<CallEnd>,
    /// When the input that ended the call happened.
    ended_at: Option<Instant>,
    /// The newest turn whose [`EngineEvent::TurnMetrics`] went out.
    metrics_sent: u64,
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
    pub(crate) events: EventBus,
    /// Who is calling.
    pub(crate) context: CallContext,
    /// Early analysis settings; `None` is off.
    pub(crate) early_analysis: Option<EarlyAnalysisConfig>,
    /// How long a stop's analysis may wait for the stop's final (zero: none).
    pub(crate) analysis_hold: std::time::Duration,
}

/// A stop's audio, snapshotted at the stop, whose analysis waits.
struct Held {
    stop: StopId,
    snapshot: Vec<i16>,
    /// When the hold ends and the analysis is sent anyway.
    until: Instant,
}

impl TurnDriver {
    /// Builds the actor.
    pub(crate) fn new(parts: DriverParts) -> Self {
        TurnDriver {
            machine: parts.machine,
            inbox: parts.inbox,
            timeline: parts.timeline,
            floor: parts.floor,
            llm: parts.llm,
            finalize: parts.finalize,
            early: match parts.verdicts {
                VerdictSource::Fixed(_) => None,
                _ => parts.early_analysis.map(EarlyAnalysis::new),
            },
            last_stop: None,
            verdicts: Verdicts::new(parts.verdicts),
            ring: parts.ring,
            events: parts.events,
            context: parts.context,
            analysis: None,
            analysis_hold: parts.analysis_hold,
            held: None,
            records: Vec::new(),
            records_dropped: 0,
            end: None,
            ended_at: None,
            metrics_sent: 0,
        }
    }

    /// Runs the call's turns until it ends; returns the turn records.
    pub(crate) async fn run(mut self) -> DriverOutcome {
        self.events.emit(EngineEvent::CallStarted {
            call_id: self.context.call_id.clone(),
            metadata: self.context.metadata.clone(),
        });
        loop {
            self.run_actions().await;
            self.drop_stale_analysis();
            if self.end.is_some() {
                break;
            }
            if self.release_held() {
                // An inline verdict may have given the machine actions.
                continue;
            }
            let deadline = self.machine.poll_timeout();
            if deadline.is_some_and(|d| d <= now()) {
                self.machine.handle_timeout(now());
                continue;
            }
            let hold_ends = self.held.as_ref().map(|h| h.until);
            tokio::select! {
                biased;
                result = analysis(&mut self.analysis), if self.analysis.is_some() => {
                    self.on_analysis(result);
                }
                result = early_running(&mut self.early), if self.early_running() => {
                    if let Some(early) = &mut self.early {
                        early.on_ready(result);
                    }
                }
                input = self.inbox.recv() => match input {
                    Some(input) => self.on_input(input),
                    None => self.end = Some(CallEnd::Hangup),
                },
                () = sleep_until(earliest(deadline, hold_ends)) => {
                    if deadline.is_some_and(|d| d <= now()) {
                        self.machine.handle_timeout(now());
                    }
                }
            }
        }
        self.finish()
    }

    fn finish(mut self) -> DriverOutcome {
        let at = self.ended_at.unwrap_or_else(now);
        self.machine.handle_hangup(at);
        if let Some(early) = &mut self.early {
            early.discard();
        }
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
            early_analysis: self
                .early
                .as_ref()
                .map(EarlyAnalysis::counters)
                .unwrap_or_default(),
            context: self.context,
        }
    }

    fn on_input(&mut self, input: DriverInput) {
        let m = &mut self.machine;
        match input {
            DriverInput::SpeechFalling { speech_end } => self.on_falling(speech_end),
            DriverInput::SpeechStart { at, decided } => {
                if let Some(early) = &mut self.early {
                    early.discard();
                }
                m.handle_speech_start(decided, at);
                self.events.emit(EngineEvent::UserStartedSpeaking);
            }
            DriverInput::SpeechEnd {
                speech_end,
                decided,
            } => {
                self.last_stop = Some(speech_end);
                m.handle_speech_end(decided, speech_end);
                self.events.emit(EngineEvent::UserStoppedSpeaking);
            }
            DriverInput::Interim { text, at } => {
                m.handle_interim(at, &text);
                self.events.emit(EngineEvent::Transcript {
                    text,
                    is_final: false,
                });
            }
            DriverInput::Final {
                text,
                from_finalize,
                at,
            } => {
                m.handle_final(at, &text, from_finalize);
                self.events.emit(EngineEvent::Transcript {
                    text,
                    is_final: true,
                });
            }
            DriverInput::AudioStarted { epoch, at } => {
                m.handle_response_audio_started(at, epoch);
                self.events.emit(EngineEvent::BotSpeakingStarted { epoch });
            }
            DriverInput::ResponseFinished { epoch, at } => {
                m.handle_response_finished(at, epoch);
                self.events.emit(EngineEvent::BotSpeakingStopped { epoch });
                self.emit_response_done(epoch);
            }
            DriverInput::Heard { heard } => self.on_heard(heard),
            DriverInput::Control { control, at } => self.on_control(control, at),
            DriverInput::SttError { at } => self.machine.handle_stt_error(at),
            DriverInput::SttLost { at } => self.end_at(CallEnd::SttLost, at),
            DriverInput::Hangup { at } => self.end_at(CallEnd::Hangup, at),
            DriverInput::TransportClosed { at } => self.end_at(CallEnd::TransportClosed, at),
        }
    }

    /// A control from the call's edge, received at `at`.
    fn on_control(&mut self, control: Control, at: Instant) {
        match control {
            Control::Say { text, interrupt } => {
                if text.trim().is_empty() {
                    self.reject("invalid_field", "say.text is empty: nothing to say");
                } else if !self.machine.handle_say(at, text, interrupt) {
                    self.reject(
                        "say_refused",
                        "say refused: the queue of waiting says is full or the call is ending",
                    );
                }
            }
            Control::Dtmf { digit } => self.events.emit(EngineEvent::Dtmf { digit }),
            Control::Metadata { update } => {
                self.context.metadata.extend(update);
                self.events.emit(EngineEvent::MetadataUpdated {
                    metadata: self.context.metadata.clone(),
                });
            }
            Control::Context(update) => {
                if self.llm.try_send(LlmInput::Context(update)).is_err() {
                    self.reject(
                        "context_refused",
                        "context update refused: the model's queue is full",
                    );
                }
            }
            Control::Respond => {
                if !self.machine.handle_respond(at) {
                    self.reject(
                        "respond_refused",
                        "respond refused: the queue of waiting says is full or the call is ending",
                    );
                }
            }
            Control::Hangup { .. } => self.end_at(CallEnd::Requested, at),
            Control::Transfer { to } => self.end_at(CallEnd::Transferred { to }, at),
            Control::Invalid { code, message } => {
                self.events
                    .emit(EngineEvent::ControlRejected { code, message });
            }
        }
    }

    /// The call ends (`end`, at `at`), unless it already did.
    fn end_at(&mut self, end: CallEnd, at: Instant) {
        if self.end.is_none() {
            self.end = Some(end);
            self.ended_at = Some(at);
        }
    }

    fn reject(&self, code: &str, message: &str) {
        self.events.emit(EngineEvent::ControlRejected {
            code: code.to_owned(),
            message: message.to_owned(),
        });
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
                Action::Respond { epoch } => {
                    self.send_llm(LlmInput::Respond { epoch }).await;
                }
                Action::Speak { epoch, text, .. } => {
                    self.send_llm(LlmInput::Speak { epoch, text }).await;
                }
                Action::CancelResponse { new, .. } => {
                    self.floor.send_replace(new);
                }
                Action::ResumeResponse { interrupted, epoch } => {
                    self.send_llm(LlmInput::Resume { interrupted, epoch }).await;
                }
                Action::CutResponse { cut, new } => {
                    self.floor.send_replace(new);
                    self.events.emit(EngineEvent::Interrupted { old: cut, new });
                }
                Action::Speculate { epoch, text } => {
                    self.send_llm(LlmInput::Speculate { epoch, text }).await;
                }
                Action::WithdrawSpeculation { epoch } => {
                    self.send_llm(LlmInput::Withdraw { epoch }).await;
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
                Action::NoText {
                    epoch,
                    reason,
                    speech,
                    replied,
                } => {
                    // The transport logs it (this crate does not log).
                    self.events.emit(EngineEvent::TurnNoText {
                        epoch,
                        reason,
                        speech,
                        replied,
                    });
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
            if let Some(early) = &mut self.early {
                early.new_turn();
            }
        }
    }

    /// A cut answer: the conversation keeps what the caller heard, and the
    /// events say so. (The LLM inbox has room: it holds at most a start and a
    /// cut per turn; a full one drops the cut, which only leaves the whole
    /// answer in the conversation.)
    fn on_heard(&mut self, heard: crate::playout::Heard) {
        let words = heard.heard.split_whitespace().count();
        let _ = self.llm.try_send(LlmInput::Heard {
            epoch: heard.epoch,
            words,
        });
        self.events.emit(EngineEvent::Heard {
            epoch: heard.epoch,
            sent: heard.sent,
            heard: heard.heard,
            played_ms: heard.played_ms,
        });
    }

    /// Tells the listener the metrics of `epoch`'s turn now that its response ended.
    fn emit_response_done(&mut self, epoch: Epoch) {
        let record = self
            .timeline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open_turn()
            .filter(|t| t.epoch() == epoch)
            .cloned();
        if let Some(record) = record {
            self.emit_turn(&record, true);
        }
    }

    /// Emits a turn's timeline as it stands: [`EngineEvent::ResponseDone`]
    /// when its response played out (`done`), else [`EngineEvent::TurnFinished`];
    /// and, once per caller's turn, [`EngineEvent::TurnMetrics`].
    fn emit_turn(&mut self, record: &TurnRecord, done: bool) {
        let epoch = record.epoch().0;
        let boxed = Box::new(record.clone());
        if done {
            self.events
                .emit(EngineEvent::ResponseDone { record: boxed });
        } else {
            self.events
                .emit(EngineEvent::TurnFinished { record: boxed });
        }
        // A caller's turn: not the greeting, nor a say in an epoch of its own.
        let callers = record.at(TurnEvent::UserSpeechStart).is_some();
        if callers && epoch > self.metrics_sent {
            self.metrics_sent = epoch;
            self.events.emit(EngineEvent::TurnMetrics {
                record: Box::new(record.clone()),
            });
        }
    }

    /// Moves finished turn records from the timeline into the report.
    fn collect_records(&mut self) {
        let finished: Vec<TurnRecord> = self
            .timeline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain_finished()
            .collect();
        for record in finished {
            self.emit_turn(&record, false);
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
        let service = match &self.verdicts {
            Verdicts::Fixed(verdict) => {
                self.machine.handle_verdict(now(), stop, *verdict);
                return;
            }
            Verdicts::Service(service) => service,
        };
        let samples_now = self.ring.as_ref().map_or(0, |ring| {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .samples_written()
        });
        let early = self.early.as_mut();
        match early.and_then(|e| e.take_for_stop(self.last_stop, samples_now)) {
            Some(EarlyResult::Ready(result)) => return self.on_analysis_of(stop, result),
            Some(EarlyResult::Running(pending)) => {
                self.analysis = Some((stop, pending));
                return;
            }
            None => {}
        }
        // From the service's free list; it goes back there after the analysis.
        let mut snapshot = service.snapshot_buffer();
        if let Some(ring) = &self.ring {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .snapshot_into(&mut snapshot);
        }
        if !self.analysis_hold.is_zero() && !self.machine.verdict_usable(stop) {
            let until = now() + self.analysis_hold;
            if let Some(older) = self.held.replace(Held {
                stop,
                snapshot,
                until,
            }) {
                service.recycle(older.snapshot);
            }
            return;
        }
        self.start_analysis(stop, snapshot);
    }

    /// Sends the held analysis once its verdict can end the turn or its hold
    /// ended; drops it (no analysis) once the machine no longer awaits it.
    /// True when an analysis was sent.
    fn release_held(&mut self) -> bool {
        let Some(held) = &self.held else {
            return false;
        };
        let (stop, until) = (held.stop, held.until);
        let awaited = self.machine.awaits_verdict(stop);
        if awaited && !self.machine.verdict_usable(stop) && now() < until {
            return false;
        }
        let Some(held) = self.held.take() else {
            return false;
        };
        let Verdicts::Service(service) = &self.verdicts else {
            return false;
        };
        if !awaited {
            service.recycle(held.snapshot);
            return false;
        }
        self.start_analysis(stop, held.snapshot);
        true
    }

    /// Sends the analysis of `snapshot` for `stop`.
    fn start_analysis(&mut self, stop: StopId, snapshot: Vec<i16>) {
        let Verdicts::Service(service) = &self.verdicts else {
            return;
        };
        let mut pending = service.analyze(snapshot);
        // A refusal, or an inline pool's verdict, is ready now: handle it in order.
        match Pin::new(&mut pending).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => self.on_analysis_of(stop, result),
            Poll::Pending => self.analysis = Some((stop, pending)),
        }
    }

    /// A falling hint: start Smart Turn on the ring now, within the turn's budget.
    fn on_falling(&mut self, speech_end: Instant) {
        let (Some(early), Verdicts::Service(service), Some(ring)) =
            (&mut self.early, &self.verdicts, &self.ring)
        else {
            return;
        };
        if !early.may_start() {
            return;
        }
        let mut snapshot = service.snapshot_buffer();
        let samples_at = {
            let ring = ring.lock().unwrap_or_else(PoisonError::into_inner);
            ring.snapshot_into(&mut snapshot);
            ring.samples_written()
        };
        early.started(speech_end, samples_at, service.analyze(snapshot));
    }

    /// Drops the analysis in flight once the machine no longer waits for its
    /// verdict (the caller spoke again, the turn ended by another rule). An
    /// analysis still queued is then cancelled and never takes the executor's
    /// thread: under a burst of ends of turn the queue holds many such analyses
    /// (a pause inside a sentence is a stop too), and each costs 25-30 ms of CPU.
    fn drop_stale_analysis(&mut self) {
        if self
            .analysis
            .as_ref()
            .is_some_and(|(stop, _)| !self.machine.awaits_verdict(*stop))
        {
            self.analysis = None;
        }
    }

    fn early_running(&mut self) -> bool {
        self.early.as_mut().is_some_and(|e| e.running().is_some())
    }

    fn on_analysis(&mut self, result: Result<ModelVerdict, SmartTurnError>) {
        if let Some((stop, _)) = self.analysis.take() {
            self.on_analysis_of(stop, result);
        }
    }

    /// Refused, late and failed analyses are failed verdicts (counted by the
    /// machine; the service counts them by kind).
    fn on_analysis_of(&mut self, stop: StopId, result: Result<ModelVerdict, SmartTurnError>) {
        let verdict = match result {
            Ok(v) if v.complete => Verdict::Complete {
                probability: v.probability,
            },
            Ok(v) => Verdict::Incomplete {
                probability: v.probability,
            },
            Err(_) => Verdict::Failed,
        };
        self.machine.handle_verdict(now(), stop, verdict);
    }
}

/// The earlier of two optional deadlines.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The result of the analysis in flight.
///
/// # Cancel safety
///
/// Cancel safe: the handle stays in place until it resolves.
async fn analysis(
    pending: &mut Option<(StopId, PendingVerdict)>,
) -> Result<ModelVerdict, SmartTurnError> {
    match pending {
        Some((_, verdict)) => verdict.await,
        None => std::future::pending().await,
    }
}

/// The early analysis in flight.
///
/// # Cancel safety
///
/// Cancel safe: the analysis stays in place until it resolves.
async fn early_running(early: &mut Option<EarlyAnalysis>) -> Result<ModelVerdict, SmartTurnError> {
    match early.as_mut().and_then(EarlyAnalysis::running) {
        Some(pending) => pending.await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use brisvox_core::timeline::TimelineRecorder;
    use brisvox_models::pool::{InferencePool, PoolConfig, Priority};
    use brisvox_models::runtime::models_required;
    use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig};
    use brisvox_testkit::{PATIENCE, eventually};

    use super::*;
    use crate::turn::TurnConfig;

    async fn send(tx: &mpsc::Sender<DriverInput>, input: DriverInput) {
        tx.send(input).await.expect("the driver runs");
        // Lets the driver take the input and run its actions.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    /// The caller pauses (a stop: an analysis is queued behind a busy executor)
    /// and speaks again before it starts: the analysis is dropped and the
    /// executor cancels it instead of running it.
    #[tokio::test(start_paused = true)]
    async fn an_analysis_for_a_stop_the_caller_spoke_over_is_never_run() {
        let model = match SmartTurn::load(SmartTurnConfig::default()) {
            Ok(model) => Arc::new(model),
            Err(e) if !models_required() => {
                eprintln!("skipped: Smart Turn not available ({e})");
                return;
            }
            Err(e) => panic!("models required but Smart Turn not loadable: {e}"),
        };
        let pool = InferencePool::new(PoolConfig {
            threads: 1,
            ..PoolConfig::named("stale-test")
        });
        // Holds the executor's one thread until the test lets it go.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        pool.submit_detached(Priority::Normal, None, move || {
            let _ = started_tx.send(());
            let _ = held.recv();
        })
        .expect("an empty pool takes a job");
        started
            .recv_timeout(Duration::from_secs(10))
            .expect("the pool starts the holding job");
        let (tx, inbox) = mpsc::channel(16);
        let (llm, _llm_rx) = mpsc::channel(16);
        let (finalize, _finalize_rx) = mpsc::channel(16);
        let (floor, _floor_rx) = watch::channel(Epoch(0));
        let driver = TurnDriver::new(DriverParts {
            machine: TurnMachine::new(TurnConfig::default(), now()),
            inbox,
            timeline: Arc::new(Mutex::new(TimelineRecorder::new())),
            floor,
            llm,
            finalize,
            verdicts: VerdictSource::Service(SmartTurnService::with_pool(model, pool.clone())),
            ring: Some(Arc::new(Mutex::new(SmartTurnRing::new()))),
            events: EventBus::new(),
            context: CallContext::default(),
            early_analysis: None,
            analysis_hold: Duration::ZERO,
        });
        let task = tokio::spawn(driver.run());

        let t0 = now();
        let start = |at: Instant| DriverInput::SpeechStart {
            at,
            decided: at + Duration::from_millis(64),
        };
        send(&tx, start(t0)).await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let decided = now();
        let stop = DriverInput::SpeechEnd {
            speech_end: decided - Duration::from_millis(100),
            decided,
        };
        send(&tx, stop).await;
        assert_eq!(pool.stats().queued_normal, 1, "the analysis waits");
        send(&tx, start(now())).await;

        release.send(()).expect("the holding job waits");
        // The pool's thread runs on the wall clock, not tokio's paused one.
        eventually(PATIENCE, "the pool ends both jobs", || {
            let stats = pool.stats();
            stats.completed + stats.cancelled == 2
        });
        let stats = pool.stats();
        assert_eq!(stats.cancelled, 1, "{stats:?}");
        assert_eq!(stats.completed, 1, "only the holding job ran: {stats:?}");

        send(&tx, DriverInput::Hangup { at: now() }).await;
        let outcome = task.await.expect("the driver ends");
        assert_eq!(outcome.counters.stale_verdicts, 0);
    }
}
