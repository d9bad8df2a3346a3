//! The per-call turn timeline: when each event of each turn happened, and the
//! per-turn latency metrics derived from it.
//!
//! Every stage of a call calls [`TimelineRecorder::mark`] with the epoch of the
//! item it is working on and the time it did the work (read from the call's
//! clock by the caller: this module never reads a clock). The recorder keeps one
//! open turn and a bounded history of finished ones.
//!
//! # Rules
//!
//! - **Which mark wins.** The first mark of an event in a turn wins, except
//!   [`TurnEvent::UserSpeechEnd`], [`TurnEvent::VadStop`] and
//!   [`TurnEvent::SttFinalize`], where the latest mark before
//!   [`TurnEvent::TurnEnd`] wins, and [`TurnEvent::SttFinal`], where the latest
//!   mark before [`TurnEvent::LlmRequest`] wins: a caller may pause and resume
//!   within one turn. Such a mark that comes after its closing event is ignored
//!   and counted in [`TimelineCounters::ignored`].
//! - **Epochs.** A mark for a newer epoch finishes the open turn (it moves to the
//!   history and its summary is logged) and opens the new one. A mark for an
//!   older epoch, or for the open epoch after it was finished, is *late*: it is
//!   counted and never attributed to another turn. The one exception is
//!   [`TurnEvent::AudioOutStopped`], which happens after its turn by nature: it
//!   patches the finished record of its epoch, if that is still in the history.
//! - **Stages without epochs.** The VAD and STT stages do not know turn epochs;
//!   they call [`TimelineRecorder::mark_open_turn`], which marks the open turn
//!   and counts the mark late when there is no turn yet or the open turn has
//!   already ended ([`TurnEvent::TurnEnd`] marked).
//! - **Barge-in.** [`TimelineRecorder::interrupt`] marks
//!   [`TurnEvent::Interrupted`] on the old turn and opens the new one with its
//!   [`TurnEvent::UserSpeechStart`] seeded from the barge-in speech, in one call,
//!   so a stage that tags the new turn first cannot lose it.
//! - **Session end.** [`TimelineRecorder::finish`] finishes the open turn; call it
//!   when the call ends.
//! - **Metrics** whose endpoints are missing or reversed are `None`, never negative.
//! - **History.** The last [`HISTORY_CAPACITY`] finished turns are kept (grown
//!   lazily); exporters take them with [`TimelineRecorder::drain_finished`]. When
//!   the history is full, the oldest record is dropped and counted.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::epoch::Epoch;

/// How many finished turns the recorder keeps until they are drained.
pub const HISTORY_CAPACITY: usize = 32;

/// The events of a turn, in their usual order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TurnEvent {
    /// The caller started speaking (VAD start, backdated to the first speech window).
    UserSpeechStart = 0,
    /// The caller's last speech (VAD stop backdated to the end of the last speech window).
    UserSpeechEnd,
    /// The VAD decided the caller stopped (after its minimum silence).
    VadStop,
    /// Finalize was handed to the STT session.
    SttFinalize,
    /// The STT's final transcript for the turn arrived.
    SttFinal,
    /// The end-of-turn model's verdict arrived.
    TurnVerdict,
    /// The engine decided the caller's turn is over.
    TurnEnd,
    /// The turn machine asked for a response (marked with the turn end decision).
    LlmRequest,
    /// The LLM stage handed the request to the provider (after the hop from
    /// the turn driver to the LLM stage).
    LlmRequestSent,
    /// The LLM's first token arrived.
    LlmFirstToken,
    /// The segmenter released the first speakable chunk.
    LlmFirstSentence,
    /// The TTS context was opened for the response.
    TtsRequest,
    /// The first text reached the TTS provider.
    TtsFirstText,
    /// The TTS's first audio arrived.
    TtsFirstByte,
    /// The first audio frame of the response was handed to the transport.
    FirstAudioOut,
    /// The last audio frame of the response was handed to the transport.
    LastAudioOut,
    /// A barge-in interrupted the response.
    Interrupted,
    /// The transport was cleared after a barge-in (audio stopped).
    AudioOutStopped,
    /// The response's first tool call was handed to its executor.
    ToolCallStart,
    /// The response's last tool result so far arrived (latest wins until the
    /// response's last audio).
    ToolCallEnd,
}

impl TurnEvent {
    /// Number of events.
    pub const COUNT: usize = 20;

    /// Every event, in order.
    pub const ALL: [TurnEvent; Self::COUNT] = [
        TurnEvent::UserSpeechStart,
        TurnEvent::UserSpeechEnd,
        TurnEvent::VadStop,
        TurnEvent::SttFinalize,
        TurnEvent::SttFinal,
        TurnEvent::TurnVerdict,
        TurnEvent::TurnEnd,
        TurnEvent::LlmRequest,
        TurnEvent::LlmRequestSent,
        TurnEvent::LlmFirstToken,
        TurnEvent::LlmFirstSentence,
        TurnEvent::TtsRequest,
        TurnEvent::TtsFirstText,
        TurnEvent::TtsFirstByte,
        TurnEvent::FirstAudioOut,
        TurnEvent::LastAudioOut,
        TurnEvent::Interrupted,
        TurnEvent::AudioOutStopped,
        TurnEvent::ToolCallStart,
        TurnEvent::ToolCallEnd,
    ];

    /// The event's name in logs and exports (snake case).
    pub fn name(self) -> &'static str {
        match self {
            TurnEvent::UserSpeechStart => "user_speech_start",
            TurnEvent::UserSpeechEnd => "user_speech_end",
            TurnEvent::VadStop => "vad_stop",
            TurnEvent::SttFinalize => "stt_finalize",
            TurnEvent::SttFinal => "stt_final",
            TurnEvent::TurnVerdict => "turn_verdict",
            TurnEvent::TurnEnd => "turn_end",
            TurnEvent::LlmRequest => "llm_request",
            TurnEvent::LlmRequestSent => "llm_request_sent",
            TurnEvent::LlmFirstToken => "llm_first_token",
            TurnEvent::LlmFirstSentence => "llm_first_sentence",
            TurnEvent::TtsRequest => "tts_request",
            TurnEvent::TtsFirstText => "tts_first_text",
            TurnEvent::TtsFirstByte => "tts_first_byte",
            TurnEvent::FirstAudioOut => "first_audio_out",
            TurnEvent::LastAudioOut => "last_audio_out",
            TurnEvent::Interrupted => "interrupted",
            TurnEvent::AudioOutStopped => "audio_out_stopped",
            TurnEvent::ToolCallStart => "tool_call_start",
            TurnEvent::ToolCallEnd => "tool_call_end",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The event whose mark closes this event's "latest wins" window, if any.
    fn latest_wins_until(self) -> Option<TurnEvent> {
        match self {
            TurnEvent::UserSpeechEnd | TurnEvent::VadStop | TurnEvent::SttFinalize => {
                Some(TurnEvent::TurnEnd)
            }
            TurnEvent::SttFinal => Some(TurnEvent::LlmRequest),
            TurnEvent::ToolCallEnd => Some(TurnEvent::LastAudioOut),
            _ => None,
        }
    }
}

/// The marks of one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    epoch: Epoch,
    marks: [Option<Instant>; TurnEvent::COUNT],
}

impl TurnRecord {
    fn new(epoch: Epoch) -> Self {
        TurnRecord {
            epoch,
            marks: [None; TurnEvent::COUNT],
        }
    }

    /// The turn's epoch.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// When `event` was marked in this turn.
    pub fn at(&self, event: TurnEvent) -> Option<Instant> {
        self.marks[event.index()]
    }

    /// Whether the turn was interrupted by a barge-in.
    pub fn was_interrupted(&self) -> bool {
        self.at(TurnEvent::Interrupted).is_some()
    }

    /// `to - from`, or `None` when either is missing or `to` is before `from`.
    pub fn span(&self, from: TurnEvent, to: TurnEvent) -> Option<Duration> {
        self.at(to)?.checked_duration_since(self.at(from)?)
    }

    /// The per-turn metrics derived from the marks.
    pub fn metrics(&self) -> TurnMetrics {
        use TurnEvent as E;
        TurnMetrics {
            end_of_turn_delay: self.span(E::UserSpeechEnd, E::TurnEnd),
            stt_final_delay: self.span(E::UserSpeechEnd, E::SttFinal),
            llm_ttft: self.span(E::LlmRequest, E::LlmFirstToken),
            llm_first_sentence: self.span(E::LlmRequest, E::LlmFirstSentence),
            tts_ttfb: self.span(E::TtsRequest, E::TtsFirstByte),
            post_endpoint_latency: self.span(E::TurnEnd, E::FirstAudioOut),
            response_latency: self.span(E::UserSpeechEnd, E::FirstAudioOut),
            time_to_silence: self.span(E::Interrupted, E::AudioOutStopped),
        }
    }

    /// What the end of this turn waited for last: `"stt_final"` when the
    /// transcript came last (at most 50 ms before the turn end), `"turn_model"`
    /// when the end-of-turn verdict did, `"timeout"` when the turn ended later
    /// than both (a deadline: the final timeout, or the wait after an
    /// "incomplete" verdict or a fixed silence); `None` before the turn end.
    pub fn end_of_turn_waited_for(&self) -> Option<&'static str> {
        use TurnEvent as E;
        let end = self.at(E::TurnEnd)?;
        let before_end = |e| self.at(e).filter(|&t| t <= end);
        let last = match (before_end(E::SttFinal), before_end(E::TurnVerdict)) {
            (Some(f), Some(v)) if f >= v => Some((f, "stt_final")),
            (Some(_), Some(v)) => Some((v, "turn_model")),
            (Some(f), None) => Some((f, "stt_final")),
            (None, Some(v)) => Some((v, "turn_model")),
            (None, None) => None,
        };
        Some(match last {
            Some((at, what)) if end.duration_since(at) <= Duration::from_millis(50) => what,
            _ => "timeout",
        })
    }

    /// The engine's own hand-offs in this turn, from its marks.
    pub fn engine_hops(&self) -> EngineHops {
        use TurnEvent as E;
        EngineHops {
            turn_end_to_llm: self.span(E::TurnEnd, E::LlmRequestSent),
            tts_first_byte_to_transport: self.span(E::TtsFirstByte, E::FirstAudioOut),
            interrupt_to_clear: self.span(E::Interrupted, E::AudioOutStopped),
        }
    }

    fn mark(&mut self, event: TurnEvent, at: Instant) -> MarkOutcome {
        let slot = &mut self.marks[event.index()];
        match event.latest_wins_until() {
            None if slot.is_some() => MarkOutcome::Ignored,
            None => {
                *slot = Some(at);
                MarkOutcome::Marked
            }
            Some(closing) if self.marks[closing.index()].is_some() => MarkOutcome::Ignored,
            Some(_) => {
                self.marks[event.index()] = Some(at);
                MarkOutcome::Marked
            }
        }
    }
}

/// Latency metrics of one turn; each is `None` when its endpoints are missing or reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnMetrics {
    /// TurnEnd - UserSpeechEnd: how long the end-of-turn decision took.
    pub end_of_turn_delay: Option<Duration>,
    /// SttFinal - UserSpeechEnd.
    pub stt_final_delay: Option<Duration>,
    /// LlmFirstToken - LlmRequest.
    pub llm_ttft: Option<Duration>,
    /// LlmFirstSentence - LlmRequest.
    pub llm_first_sentence: Option<Duration>,
    /// TtsFirstByte - TtsRequest.
    pub tts_ttfb: Option<Duration>,
    /// FirstAudioOut - TurnEnd: providers plus internal overhead after the decision.
    pub post_endpoint_latency: Option<Duration>,
    /// FirstAudioOut - UserSpeechEnd: the server-side voice-to-voice latency.
    pub response_latency: Option<Duration>,
    /// AudioOutStopped - Interrupted: how fast a barge-in silenced the bot.
    pub time_to_silence: Option<Duration>,
}

impl TurnMetrics {
    /// The metrics with their export names, in a fixed order.
    pub fn named(&self) -> [(&'static str, Option<Duration>); 8] {
        [
            ("end_of_turn_delay", self.end_of_turn_delay),
            ("stt_final_delay", self.stt_final_delay),
            ("llm_ttft", self.llm_ttft),
            ("llm_first_sentence", self.llm_first_sentence),
            ("tts_ttfb", self.tts_ttfb),
            ("post_endpoint_latency", self.post_endpoint_latency),
            ("response_latency", self.response_latency),
            ("time_to_silence", self.time_to_silence),
        ]
    }
}

/// The engine's own hand-offs in one turn (no provider time in them); each is
/// `None` when its endpoints are missing or reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineHops {
    /// LlmRequestSent - TurnEnd: from the end-of-turn decision to the request
    /// handed to the LLM provider.
    pub turn_end_to_llm: Option<Duration>,
    /// FirstAudioOut - TtsFirstByte: from the TTS's first audio to the first
    /// frame handed to the transport.
    pub tts_first_byte_to_transport: Option<Duration>,
    /// AudioOutStopped - Interrupted: from the barge-in decision to the
    /// transport's clear (the same span as [`TurnMetrics::time_to_silence`]).
    pub interrupt_to_clear: Option<Duration>,
}

/// What happened to one mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOutcome {
    /// The mark was recorded.
    Marked,
    /// The event was already marked (first wins) or its window had closed.
    Ignored,
    /// The mark belonged to no open turn and was counted late.
    Late,
    /// An `AudioOutStopped` patched a finished turn's record.
    Patched,
}

/// Counters of marks that were not recorded where they were aimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimelineCounters {
    /// Marks for an older or finished epoch, or open-turn marks with no open turn.
    pub late: u64,
    /// Marks of an event already marked (first wins) or after its closing event.
    pub ignored: u64,
    /// Finished records dropped because the history was full.
    pub dropped_records: u64,
    /// Turns finished.
    pub finished_turns: u64,
}

/// Records the timeline of one call's turns.
#[derive(Debug, Default)]
pub struct TimelineRecorder {
    open: Option<TurnRecord>,
    history: VecDeque<TurnRecord>,
    newest_finished: Option<Epoch>,
    counters: TimelineCounters,
}

impl TimelineRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The open turn, if any.
    pub fn open_turn(&self) -> Option<&TurnRecord> {
        self.open.as_ref()
    }

    /// The counters of late, ignored and dropped marks.
    pub fn counters(&self) -> TimelineCounters {
        self.counters
    }

    /// Finished turns not yet drained, oldest first.
    pub fn finished(&self) -> impl Iterator<Item = &TurnRecord> {
        self.history.iter()
    }

    /// Marks `event` at `at` for the turn of `epoch` (see the module rules).
    pub fn mark(&mut self, epoch: Epoch, event: TurnEvent, at: Instant) -> MarkOutcome {
        let open_epoch = self.open.as_ref().map(TurnRecord::epoch);
        if open_epoch.is_none_or(|open| epoch > open) && !self.is_finished(epoch) {
            self.start(epoch);
        }
        let aimed_at_open = self.open.as_ref().is_some_and(|t| t.epoch == epoch);
        if aimed_at_open {
            self.counted(|t| t.mark(event, at))
        } else if event == TurnEvent::AudioOutStopped {
            self.patch_finished(epoch, at)
        } else {
            self.late()
        }
    }

    /// Marks `event` on the open turn, for stages that do not know epochs.
    ///
    /// Counted late when there is no open turn or it has already ended.
    pub fn mark_open_turn(&mut self, event: TurnEvent, at: Instant) -> MarkOutcome {
        let open_and_not_ended = self
            .open
            .as_ref()
            .is_some_and(|t| t.at(TurnEvent::TurnEnd).is_none());
        if open_and_not_ended {
            self.counted(|t| t.mark(event, at))
        } else {
            self.late()
        }
    }

    /// A barge-in: marks `Interrupted` on `old` and opens `new` with its speech start.
    ///
    /// `new` must be newer than `old`; otherwise only the `Interrupted` mark is made.
    pub fn interrupt(&mut self, old: Epoch, new: Epoch, at: Instant, speech_start: Instant) {
        self.mark(old, TurnEvent::Interrupted, at);
        if new > old {
            self.mark(new, TurnEvent::UserSpeechStart, speech_start);
        }
    }

    /// Finishes the open turn (call at session end).
    pub fn finish(&mut self) {
        if let Some(turn) = self.open.take() {
            self.push_finished(turn);
        }
    }

    /// Takes the finished turns, oldest first.
    pub fn drain_finished(&mut self) -> impl Iterator<Item = TurnRecord> + '_ {
        self.history.drain(..)
    }

    fn is_finished(&self, epoch: Epoch) -> bool {
        self.newest_finished.is_some_and(|done| epoch <= done)
    }

    fn start(&mut self, epoch: Epoch) {
        if let Some(previous) = self.open.replace(TurnRecord::new(epoch)) {
            self.push_finished(previous);
        }
    }

    fn push_finished(&mut self, turn: TurnRecord) {
        log_summary(&turn);
        self.newest_finished = Some(
            self.newest_finished
                .map_or(turn.epoch, |e| e.max(turn.epoch)),
        );
        self.counters.finished_turns += 1;
        if self.history.len() == HISTORY_CAPACITY {
            self.history.pop_front();
            self.counters.dropped_records += 1;
        }
        self.history.push_back(turn);
    }

    fn counted(&mut self, f: impl FnOnce(&mut TurnRecord) -> MarkOutcome) -> MarkOutcome {
        // Only called when the open turn exists (both callers matched on it).
        let outcome = self.open.as_mut().map_or(MarkOutcome::Late, f);
        match outcome {
            MarkOutcome::Ignored => self.counters.ignored += 1,
            MarkOutcome::Late => self.counters.late += 1,
            MarkOutcome::Marked | MarkOutcome::Patched => {}
        }
        outcome
    }

    fn patch_finished(&mut self, epoch: Epoch, at: Instant) -> MarkOutcome {
        let Some(record) = self.history.iter_mut().rev().find(|r| r.epoch == epoch) else {
            return self.late();
        };
        match record.mark(TurnEvent::AudioOutStopped, at) {
            MarkOutcome::Marked => MarkOutcome::Patched,
            other => {
                self.counters.ignored += 1;
                other
            }
        }
    }

    fn late(&mut self) -> MarkOutcome {
        self.counters.late += 1;
        MarkOutcome::Late
    }
}

/// Logs one `turn finished` summary at INFO (target `brisvox::timeline`), with
/// each metric in microseconds; absent metrics are not logged. Computed only when
/// the level is enabled.
fn log_summary(turn: &TurnRecord) {
    if !tracing::enabled!(target: "brisvox::timeline", tracing::Level::INFO) {
        return;
    }
    let m = turn.metrics();
    let us = |d: Option<Duration>| d.map(|d| d.as_micros() as u64);
    tracing::info!(
        target: "brisvox::timeline",
        epoch = turn.epoch.0,
        interrupted = turn.was_interrupted(),
        end_of_turn_delay_us = us(m.end_of_turn_delay),
        stt_final_delay_us = us(m.stt_final_delay),
        llm_ttft_us = us(m.llm_ttft),
        llm_first_sentence_us = us(m.llm_first_sentence),
        tts_ttfb_us = us(m.tts_ttfb),
        post_endpoint_latency_us = us(m.post_endpoint_latency),
        response_latency_us = us(m.response_latency),
        time_to_silence_us = us(m.time_to_silence),
        "turn finished"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use TurnEvent as E;

    fn t0() -> Instant {
        #[allow(clippy::disallowed_methods)] // a test needs one real instant as its origin
        Instant::now()
    }

    fn ms(base: Instant, n: u64) -> Instant {
        base + Duration::from_millis(n)
    }

    #[test]
    fn the_end_of_turn_waited_for_the_last_input_or_a_deadline() {
        let b = t0();
        let waited = |marks: &[(TurnEvent, u64)]| {
            let mut r = TimelineRecorder::new();
            for &(e, at) in marks {
                r.mark(Epoch(1), e, ms(b, at));
            }
            r.open_turn().unwrap().end_of_turn_waited_for()
        };
        let final_last = [(E::TurnVerdict, 100), (E::SttFinal, 300), (E::TurnEnd, 300)];
        assert_eq!(waited(&final_last), Some("stt_final"));
        let verdict_last = [(E::SttFinal, 100), (E::TurnVerdict, 200), (E::TurnEnd, 201)];
        assert_eq!(waited(&verdict_last), Some("turn_model"));
        let deadline = [(E::TurnVerdict, 100), (E::TurnEnd, 1100)];
        assert_eq!(waited(&deadline), Some("timeout"));
        assert_eq!(waited(&[(E::TurnEnd, 500)]), Some("timeout"));
        assert_eq!(waited(&[(E::SttFinal, 500)]), None, "no turn end yet");
    }

    #[test]
    fn the_first_mark_wins_for_ordinary_events() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        assert_eq!(
            r.mark(Epoch(1), E::LlmRequest, ms(b, 10)),
            MarkOutcome::Marked
        );
        assert_eq!(
            r.mark(Epoch(1), E::LlmRequest, ms(b, 20)),
            MarkOutcome::Ignored
        );
        assert_eq!(r.open_turn().unwrap().at(E::LlmRequest), Some(ms(b, 10)));
        assert_eq!(r.counters().ignored, 1);
    }

    #[test]
    fn speech_end_vad_stop_and_finalize_keep_the_latest_mark_before_the_turn_end() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        for ev in [E::UserSpeechEnd, E::VadStop, E::SttFinalize] {
            r.mark(Epoch(1), ev, ms(b, 100));
            r.mark(Epoch(1), ev, ms(b, 300));
        }
        r.mark(Epoch(1), E::TurnEnd, ms(b, 400));
        for ev in [E::UserSpeechEnd, E::VadStop, E::SttFinalize] {
            assert_eq!(r.mark(Epoch(1), ev, ms(b, 500)), MarkOutcome::Ignored);
            assert_eq!(r.open_turn().unwrap().at(ev), Some(ms(b, 300)), "{ev:?}");
        }
    }

    #[test]
    fn the_stt_final_keeps_the_latest_mark_before_the_llm_request() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::SttFinal, ms(b, 100));
        r.mark(Epoch(1), E::TurnEnd, ms(b, 150));
        r.mark(Epoch(1), E::SttFinal, ms(b, 200));
        r.mark(Epoch(1), E::LlmRequest, ms(b, 250));
        assert_eq!(
            r.mark(Epoch(1), E::SttFinal, ms(b, 300)),
            MarkOutcome::Ignored
        );
        assert_eq!(r.open_turn().unwrap().at(E::SttFinal), Some(ms(b, 200)));
    }

    #[test]
    fn a_newer_epoch_finishes_the_open_turn() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::UserSpeechStart, ms(b, 0));
        r.mark(Epoch(2), E::UserSpeechStart, ms(b, 1000));
        let done: Vec<_> = r.drain_finished().collect();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].epoch(), Epoch(1));
        assert_eq!(r.open_turn().unwrap().epoch(), Epoch(2));
        assert_eq!(r.counters().finished_turns, 1);
    }

    #[test]
    fn a_mark_for_an_older_or_finished_epoch_is_late_and_attributed_nowhere() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::UserSpeechStart, ms(b, 0));
        r.mark(Epoch(2), E::UserSpeechStart, ms(b, 1000));
        assert_eq!(
            r.mark(Epoch(1), E::LlmRequest, ms(b, 1100)),
            MarkOutcome::Late
        );
        r.finish();
        assert_eq!(
            r.mark(Epoch(2), E::LlmRequest, ms(b, 1200)),
            MarkOutcome::Late
        );
        assert_eq!(r.counters().late, 2);
        for turn in r.finished() {
            assert_eq!(turn.at(E::LlmRequest), None);
        }
        assert!(
            r.open_turn().is_none(),
            "a late mark must not reopen a finished epoch"
        );
    }

    #[test]
    fn audio_out_stopped_patches_the_finished_record_of_its_epoch() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::FirstAudioOut, ms(b, 0));
        r.interrupt(Epoch(1), Epoch(2), ms(b, 500), ms(b, 450));
        assert_eq!(
            r.mark(Epoch(1), E::AudioOutStopped, ms(b, 503)),
            MarkOutcome::Patched
        );
        let done: Vec<_> = r.drain_finished().collect();
        assert_eq!(
            done[0].metrics().time_to_silence,
            Some(Duration::from_millis(3))
        );
        assert_eq!(r.counters().late, 0);
    }

    #[test]
    fn interrupt_marks_the_old_turn_and_seeds_the_new_turns_speech_start() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::FirstAudioOut, ms(b, 0));
        r.interrupt(Epoch(1), Epoch(2), ms(b, 500), ms(b, 380));
        let open = r.open_turn().unwrap();
        assert_eq!(open.epoch(), Epoch(2));
        assert_eq!(open.at(E::UserSpeechStart), Some(ms(b, 380)));
        let old: Vec<_> = r.finished().cloned().collect();
        assert_eq!(old[0].at(E::Interrupted), Some(ms(b, 500)));
        assert!(old[0].was_interrupted());
    }

    #[test]
    fn a_stage_that_tags_the_new_turn_first_loses_nothing_at_interrupt() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::FirstAudioOut, ms(b, 0));
        r.mark(Epoch(2), E::SttFinalize, ms(b, 490));
        r.interrupt(Epoch(1), Epoch(2), ms(b, 500), ms(b, 380));
        let open = r.open_turn().unwrap();
        assert_eq!(open.at(E::SttFinalize), Some(ms(b, 490)));
        assert_eq!(open.at(E::UserSpeechStart), Some(ms(b, 380)));
        // Epoch 1 was finished when epoch 2 was first tagged; Interrupted is late there.
        assert_eq!(r.counters().late, 1);
    }

    #[test]
    fn open_turn_marks_are_late_without_a_turn_or_after_its_end() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        assert_eq!(r.mark_open_turn(E::VadStop, ms(b, 0)), MarkOutcome::Late);
        r.mark(Epoch(1), E::UserSpeechStart, ms(b, 10));
        assert_eq!(r.mark_open_turn(E::VadStop, ms(b, 20)), MarkOutcome::Marked);
        r.mark(Epoch(1), E::TurnEnd, ms(b, 30));
        assert_eq!(r.mark_open_turn(E::SttFinal, ms(b, 40)), MarkOutcome::Late);
        assert_eq!(r.counters().late, 2);
        assert_eq!(r.open_turn().unwrap().at(E::VadStop), Some(ms(b, 20)));
    }

    #[test]
    fn metrics_are_derived_from_the_marks() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        let marks = [
            (E::UserSpeechEnd, 1000),
            (E::VadStop, 1100),
            (E::SttFinal, 1150),
            (E::TurnEnd, 1160),
            (E::LlmRequest, 1161),
            (E::LlmFirstToken, 1500),
            (E::LlmFirstSentence, 1530),
            (E::TtsRequest, 1531),
            (E::TtsFirstByte, 1680),
            (E::FirstAudioOut, 1681),
        ];
        for (ev, t) in marks {
            r.mark(Epoch(1), ev, ms(b, t));
        }
        let m = r.open_turn().unwrap().metrics();
        let d = Duration::from_millis;
        assert_eq!(m.end_of_turn_delay, Some(d(160)));
        assert_eq!(m.stt_final_delay, Some(d(150)));
        assert_eq!(m.llm_ttft, Some(d(339)));
        assert_eq!(m.llm_first_sentence, Some(d(369)));
        assert_eq!(m.tts_ttfb, Some(d(149)));
        assert_eq!(m.post_endpoint_latency, Some(d(521)));
        assert_eq!(m.response_latency, Some(d(681)));
        assert_eq!(m.time_to_silence, None);
    }

    #[test]
    fn engine_hops_are_the_spans_between_the_engines_own_marks() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        let marks = [
            (E::TurnEnd, 1000),
            (E::LlmRequest, 1000),
            (E::LlmRequestSent, 1001),
            (E::TtsFirstByte, 1500),
            (E::FirstAudioOut, 1503),
            (E::Interrupted, 2000),
        ];
        for (ev, t) in marks {
            r.mark(Epoch(1), ev, ms(b, t));
        }
        let h = r.open_turn().unwrap().engine_hops();
        let d = Duration::from_millis;
        assert_eq!(h.turn_end_to_llm, Some(d(1)));
        assert_eq!(h.tts_first_byte_to_transport, Some(d(3)));
        assert_eq!(h.interrupt_to_clear, None, "no clear yet");
        r.mark(Epoch(2), E::UserSpeechStart, ms(b, 1990));
        assert_eq!(
            r.mark(Epoch(1), E::AudioOutStopped, ms(b, 2002)),
            MarkOutcome::Patched
        );
        let done: Vec<_> = r.drain_finished().collect();
        assert_eq!(done[0].engine_hops().interrupt_to_clear, Some(d(2)));
    }

    #[test]
    fn an_engine_hop_with_reversed_or_missing_endpoints_is_none() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::LlmRequestSent, ms(b, 100));
        r.mark(Epoch(1), E::TurnEnd, ms(b, 200));
        r.mark(Epoch(1), E::FirstAudioOut, ms(b, 300));
        let h = r.open_turn().unwrap().engine_hops();
        assert_eq!(h, EngineHops::default());
    }

    #[test]
    fn a_metric_with_reversed_or_missing_endpoints_is_none() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(1), E::TurnEnd, ms(b, 100));
        r.mark(Epoch(1), E::UserSpeechEnd, ms(b, 200)); // after TurnEnd: ignored
        r.mark(Epoch(1), E::LlmFirstToken, ms(b, 100));
        r.mark(Epoch(1), E::LlmRequest, ms(b, 150)); // request after first token
        let m = r.open_turn().unwrap().metrics();
        assert_eq!(m.end_of_turn_delay, None);
        assert_eq!(m.llm_ttft, None);
        assert_eq!(m.response_latency, None);
    }

    #[test]
    fn the_history_keeps_the_last_32_finished_turns() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        for e in 1..=40 {
            r.mark(Epoch(e), E::UserSpeechStart, ms(b, e));
        }
        r.finish();
        assert_eq!(r.counters().finished_turns, 40);
        assert_eq!(r.counters().dropped_records, 8);
        let epochs: Vec<u64> = r.drain_finished().map(|t| t.epoch().0).collect();
        assert_eq!(epochs, (9..=40).collect::<Vec<_>>());
        assert_eq!(r.finished().count(), 0);
    }

    #[test]
    fn finish_closes_the_open_turn_and_later_marks_are_late() {
        let b = t0();
        let mut r = TimelineRecorder::new();
        r.mark(Epoch(3), E::UserSpeechStart, ms(b, 0));
        r.finish();
        assert!(r.open_turn().is_none());
        assert_eq!(r.finished().count(), 1);
        assert_eq!(r.mark(Epoch(3), E::TurnEnd, ms(b, 5)), MarkOutcome::Late);
        // A newer epoch still opens a new turn.
        assert_eq!(
            r.mark(Epoch(4), E::UserSpeechStart, ms(b, 9)),
            MarkOutcome::Marked
        );
    }

    #[test]
    fn every_event_has_a_distinct_name_and_index() {
        let mut names: Vec<_> = TurnEvent::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TurnEvent::COUNT);
        for (i, e) in TurnEvent::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
        }
    }
}
