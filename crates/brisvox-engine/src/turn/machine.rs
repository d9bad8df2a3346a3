//! The turn machine: who is talking, when the caller's turn ends, and barge-in.
//!
//! A sans-IO core. The turn driver feeds it the VAD's speech starts and stops,
//! the STT's transcripts, the end-of-turn model's verdicts and the response's
//! progress, each with the current time, and then drains
//! [`TurnMachine::poll_action`] until it returns `None`, and arms one timer for
//! [`TurnMachine::poll_timeout`]. When that timer fires it calls
//! [`TurnMachine::handle_timeout`]. The machine never reads a clock.
//!
//! # States
//!
//! `Listening` → (speech start) → `UserSpeaking` → (VAD stop: Finalize the STT
//! and ask for a verdict) → `UserPaused` → (policy satisfied) → `BotThinking`
//! (LLM started) → (first audio out) → `BotSpeaking` → (last audio played) →
//! `Listening`.
//!
//! - A caller who speaks again in `UserPaused` continues the same turn. One who
//!   speaks again in `BotThinking` (turn ended, no audio yet) also continues it:
//!   the machine takes the turn back, cancels the response already started for it
//!   (counted in [`TurnCounters::taken_back`]) and moves to a new epoch so no item
//!   of the cancelled response can be played.
//! - Speech while the bot speaks is a barge-in when the interruption policy says
//!   so ([`super::interruption`]: minimum speech, optionally recognised words, and
//!   backchannels that never interrupt): the epoch is bumped, the response is
//!   cancelled and the transport is cleared ([`Action::Interrupt`]). Other speech
//!   (a cough, "mm-hmm") leaves the bot talking and is counted.
//! - Ending a turn: see [`TurnPolicy`]. Under the adaptive policy only a
//!   "complete" verdict ends the turn before its fallback deadline; a failed or
//!   late analysis waits for the fallback like an "incomplete" verdict, so an
//!   overloaded end-of-turn model delays answers instead of cutting callers off
//!   mid-sentence. The fallback is shortened when the STT final says the turn is
//!   complete ([`IncompleteShortcut`](super::config::IncompleteShortcut)). With
//!   `require_final` the turn also waits for the final of every Finalize sent, up
//!   to `final_timeout` after the last one. A turn whose transcript is empty is
//!   dropped without an LLM request and reported ([`Action::NoText`] with its
//!   [`NoTextReason`]); when the caller spoke for at least
//!   [`NotHeardConfig::min_speech`](super::config::NotHeardConfig) the
//!   configured "didn't catch that" reply is spoken instead of silence.
//!
//! Every decision is also reported as timeline marks ([`Action::Mark`]) with the
//! epoch the machine assigned, so the driver never guesses epochs.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;

use super::config::{TurnConfig, TurnPolicy};
use super::interruption::{Ignored, PendingBargeIn};
use super::speculation::{Offer, Speculator};
use super::words::{TextEvidence, TextRules, WordSet};

/// Identifies one VAD stop, so a verdict for an older stop is recognised as stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StopId(pub u64);

/// The end-of-turn model's answer for one stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The caller has finished.
    Complete {
        /// The model's probability of "complete".
        probability: f32,
    },
    /// The caller is likely to go on.
    Incomplete {
        /// The model's probability of "complete".
        probability: f32,
    },
    /// The analysis failed (pool saturated, timed out, model error): counted, and
    /// the turn waits for its fallback deadline as after "incomplete" (never
    /// ended at once: a caller pausing mid-sentence on an overloaded server is
    /// not answered mid-sentence).
    Failed,
}

/// Why something is spoken without an LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeakKind {
    /// The greeting at call start.
    Greeting,
    /// A `say` requested by the application.
    Say,
    /// The idle guard's prompt.
    IdlePrompt,
    /// The reply to clear speech that produced no text.
    NotHeard,
}

/// Why a turn ended without text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoTextReason {
    /// The STT answered every Finalize, with no words.
    EmptyTranscript,
    /// The STT reported an error during the turn.
    SttError,
    /// The final had not come when the turn ended (`final_timeout`, or the
    /// policy ended the turn without waiting for it).
    FinalTimeout,
}

impl NoTextReason {
    /// The reason's stable name (`empty_transcript`, `stt_error`, `final_timeout`).
    pub fn as_str(self) -> &'static str {
        match self {
            NoTextReason::EmptyTranscript => "empty_transcript",
            NoTextReason::SttError => "stt_error",
            NoTextReason::FinalTimeout => "final_timeout",
        }
    }
}

/// Why the machine ends the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The caller stayed silent after the idle prompt.
    Idle,
    /// The call reached its maximum duration.
    MaxDuration,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Record a timeline mark.
    Mark(Epoch, TurnEvent, Instant),
    /// Send Finalize to the STT session.
    FinalizeStt,
    /// Run the end-of-turn model on the audio up to `speech_end`.
    RequestVerdict {
        /// The stop this verdict is for.
        stop: StopId,
        /// The end of the caller's speech (backdated VAD stop).
        speech_end: Instant,
    },
    /// Start the LLM response to `user_text` in `epoch`.
    StartResponse {
        /// The turn's epoch.
        epoch: Epoch,
        /// What the caller said in this turn.
        user_text: String,
    },
    /// Start an LLM response in `epoch` over the conversation as it stands,
    /// without a caller turn (a `respond` control).
    Respond {
        /// The epoch the response is tagged with.
        epoch: Epoch,
    },
    /// Speak `text` without the LLM, in `epoch`.
    Speak {
        /// The epoch the audio is tagged with.
        epoch: Epoch,
        /// The text.
        text: String,
        /// Why it is spoken.
        kind: SpeakKind,
    },
    /// The caller took the turn back before any audio: cancel the response of
    /// `cancelled` (LLM and TTS); later items belong to `new`.
    CancelResponse {
        /// The epoch whose response is dropped.
        cancelled: Epoch,
        /// The epoch the turn continues in.
        new: Epoch,
    },
    /// The speech that interrupted `interrupted` gave no words: speak the rest
    /// of that answer (from the first word the caller did not hear) in `epoch`.
    ResumeResponse {
        /// The interrupted answer's epoch.
        interrupted: Epoch,
        /// The epoch the rest is spoken in.
        epoch: Epoch,
    },
    /// A `say` with `interrupt` cuts the bot: cancel the response of `cut`
    /// (LLM and TTS), clear the transport if it was audible, and continue in
    /// `new` (not a barge-in: no caller speech, nothing counted as one).
    CutResponse {
        /// The epoch whose response is dropped.
        cut: Epoch,
        /// The epoch the say is spoken in.
        new: Epoch,
    },
    /// Speculative start ([`super::speculation`]): begin an LLM run for
    /// `text` in `epoch`, its output held until the turn ends; a new one
    /// replaces the last. `StartResponse` with the same words commits it.
    Speculate {
        /// The turn's epoch.
        epoch: Epoch,
        /// The candidate text of the turn.
        text: String,
    },
    /// The caller spoke again: drop `epoch`'s speculative run.
    WithdrawSpeculation {
        /// The turn's epoch.
        epoch: Epoch,
    },
    /// Barge-in: cancel the response of `old`, clear the transport, and continue in `new`.
    Interrupt {
        /// The interrupted epoch.
        old: Epoch,
        /// The caller's new turn.
        new: Epoch,
        /// When the interrupting speech started.
        speech_start: Instant,
    },
    /// The turn of `epoch` ended without text (no LLM request was made).
    NoText {
        /// The turn's epoch.
        epoch: Epoch,
        /// Why.
        reason: NoTextReason,
        /// How long the caller spoke (VAD start to stop).
        speech: std::time::Duration,
        /// Whether the not-heard reply is spoken for it.
        replied: bool,
    },
    /// End the call.
    EndCall(EndReason),
}

/// Where the conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Nobody is talking.
    Listening,
    /// The caller is talking.
    UserSpeaking,
    /// The caller stopped; waiting for the verdict, the final or a deadline.
    UserPaused,
    /// The turn ended; the response has no audio out yet.
    BotThinking,
    /// The response's audio is playing.
    BotSpeaking,
    /// The call is over.
    Ended,
}

/// What the machine counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnCounters {
    /// User turns started.
    pub turns: u64,
    /// LLM responses started.
    pub responses: u64,
    /// Turns ended with an empty transcript (no request made).
    pub empty_turns: u64,
    /// Turns taken back after their response started (response cancelled).
    pub taken_back: u64,
    /// Barge-ins that interrupted the bot.
    pub barge_ins: u64,
    /// Speech during the bot's turn that did not interrupt: too short, or
    /// without (enough) recognised words.
    pub short_speech_ignored: u64,
    /// Speech during the bot's turn that held only backchannel words.
    pub backchannels_ignored: u64,
    /// Verdicts: complete, incomplete, failed.
    pub verdicts_complete: u64,
    /// Incomplete verdicts.
    pub verdicts_incomplete: u64,
    /// Failed analyses (the turn waits for its fallback).
    pub verdicts_failed: u64,
    /// Verdicts for a stop that was no longer current.
    pub stale_verdicts: u64,
    /// Turns ended by the full fallback after an "incomplete" verdict.
    pub incomplete_timeouts: u64,
    /// Turns ended by the full fallback with a failed analysis or no verdict.
    pub verdict_fallbacks: u64,
    /// Turns ended by a fallback shortened by the STT final's text.
    pub shortened_fallbacks: u64,
    /// False interruptions after which the interrupted answer was resumed.
    pub false_interruptions_resumed: u64,
    /// Turns ended without the final of the last Finalize.
    pub final_timeouts: u64,
    /// Turns answered with the not-heard reply.
    pub not_heard_replies: u64,
}

#[derive(Debug, Default)]
struct UserTurn {
    speech_start: Option<Instant>,
    speech_end: Option<Instant>,
    stop: Option<StopId>,
    verdict: Option<Verdict>,
    /// Deadline of the policy (fixed silence, or the adaptive fallback); once the
    /// effective deadline ([`TurnMachine::policy_deadline`]) passes it is flagged
    /// in `policy_deadline_passed`, so each deadline fires once.
    policy_deadline: Option<Instant>,
    policy_deadline_passed: bool,
    /// The deadline that passed was the text shortcut.
    shortcut_passed: bool,
    finals_pending: u32,
    last_finalize: Option<Instant>,
    /// When the wait for the pending finals gives up; cleared into `final_given_up`.
    final_deadline: Option<Instant>,
    final_given_up: bool,
    /// The STT reported an error during the turn.
    stt_error: bool,
    finals: String,
    interim: String,
    /// The answer this turn interrupted (a barge-in opened it).
    interrupted: Option<Epoch>,
    /// The turn's speech began over the bot's answer, which then ended.
    over_bot: bool,
}

/// The turn machine of one call.
#[derive(Debug)]
pub struct TurnMachine {
    config: TurnConfig,
    state: TurnState,
    epoch: Epoch,
    next_stop: u64,
    turn: UserTurn,
    barge_in: Option<PendingBargeIn>,
    /// The barge-in policy's backchannels.
    backchannels: WordSet,
    /// How long after the end of speech the VAD confirms its stop
    /// ([`TurnMachine::with_vad_hangover`]).
    vad_hangover: Duration,
    /// The incomplete shortcut's word rules.
    text_rules: Option<TextRules>,
    /// Speculative start's candidates.
    speculator: Speculator,
    /// Says and responds waiting for the bot to be free, in order.
    says: VecDeque<Waiting>,
    idle_deadline: Option<Instant>,
    idle_prompted: bool,
    call_deadline: Option<Instant>,
    /// Whether the bot's current turn answers a user turn (vs a greeting, say or prompt).
    responding_to_user: bool,
    actions: VecDeque<Action>,
    counters: TurnCounters,
}

/// How many `say` requests may wait for the bot to be idle; more are refused.
pub const SAY_QUEUE_CAPACITY: usize = 8;

/// What waits for the bot to be free.
#[derive(Debug, Clone, PartialEq)]
enum Waiting {
    /// A `say`'s text.
    Say(String),
    /// A `respond`: an answer over the conversation as it stands.
    Respond,
}

impl TurnMachine {
    /// A machine for a call that starts at `now` (greeting spoken at once if configured).
    pub fn new(config: TurnConfig, now: Instant) -> Self {
        let call_deadline = config.max_call_duration.map(|d| now + d);
        let backchannels = WordSet::new(&config.barge_in.backchannels);
        let text_rules = config
            .incomplete_shortcut
            .as_ref()
            .map(|s| TextRules::new(s.language, s.short_answer_max_words));
        let speculator = Speculator::new(config.speculation.clone());
        let mut m = TurnMachine {
            config,
            state: TurnState::Listening,
            epoch: Epoch::ZERO,
            next_stop: 0,
            turn: UserTurn::default(),
            barge_in: None,
            backchannels,
            vad_hangover: Duration::ZERO,
            text_rules,
            speculator,
            says: VecDeque::new(),
            idle_deadline: None,
            idle_prompted: false,
            call_deadline,
            responding_to_user: false,
            actions: VecDeque::new(),
            counters: TurnCounters::default(),
        };
        match m.config.greeting.clone() {
            Some(text) => m.speak(text, SpeakKind::Greeting),
            None => m.arm_idle(now),
        }
        m
    }

    /// Tells the machine how long after the end of speech the VAD confirms its
    /// stop (`VadParams::stop_hangover`): speech over the bot is known to have
    /// lasted `max_wordless_speech` only once that much longer has passed
    /// without a stop (rule 5 of [`super::interruption`]). Zero by default.
    pub fn with_vad_hangover(mut self, hangover: Duration) -> Self {
        self.vad_hangover = hangover;
        self
    }

    // ----- getters -----

    /// Whether a verdict for `stop` would still be used: the caller is paused at
    /// that stop. Once they speak again or the turn ends, it is stale (and
    /// [`handle_verdict`](Self::handle_verdict) would only count it), so an
    /// analysis still running for it can be dropped.
    pub fn awaits_verdict(&self, stop: StopId) -> bool {
        self.state == TurnState::UserPaused && self.turn.stop == Some(stop)
    }

    /// Whether a verdict for `stop` could end the turn now: the machine awaits
    /// it and nothing else holds the turn open. With `require_final`, a
    /// verdict only counts once every final is in (or the wait for them gave
    /// up, or the policy's deadline passed); until then it changes nothing,
    /// and if the caller goes on first it never will. The driver may hold an
    /// analysis until then ([`EngineConfig::analysis_hold`](crate::EngineConfig::analysis_hold)).
    pub fn verdict_usable(&self, stop: StopId) -> bool {
        self.awaits_verdict(stop)
            && (!self.config.require_final
                || self.turn.finals_pending == 0
                || self.turn.final_given_up
                || self.turn.policy_deadline_passed)
    }

    /// The current state.
    pub fn state(&self) -> TurnState {
        self.state
    }

    /// The current epoch.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// What was counted so far.
    pub fn counters(&self) -> TurnCounters {
        self.counters
    }

    /// The settings.
    pub fn config(&self) -> &TurnConfig {
        &self.config
    }

    // ----- inputs -----

    /// The VAD confirmed speech that started at `speech_start`.
    pub fn handle_speech_start(&mut self, now: Instant, speech_start: Instant) {
        self.idle_deadline = None;
        self.idle_prompted = false;
        match self.state {
            TurnState::Listening => self.start_user_turn(speech_start),
            TurnState::UserPaused => {
                // Same turn: the caller went on. Any verdict for the last stop is stale now.
                let offer = self.speculator.resumed();
                self.offer(offer);
                self.reset_pause();
                self.state = TurnState::UserSpeaking;
            }
            TurnState::BotThinking if self.responding_to_user => self.take_back(),
            TurnState::BotThinking | TurnState::BotSpeaking => self.arm_barge_in(now, speech_start),
            TurnState::UserSpeaking | TurnState::Ended => {}
        }
    }

    /// The VAD decided at `now` that the caller stopped; their speech ended at `speech_end`.
    pub fn handle_speech_end(&mut self, now: Instant, speech_end: Instant) {
        if matches!(self.state, TurnState::BotSpeaking | TurnState::BotThinking) {
            if let Some(pending) = &mut self.barge_in {
                pending.stopped(now, speech_end);
            }
            self.check_barge_in(now);
            return;
        }
        if self.state != TurnState::UserSpeaking {
            return;
        }
        self.next_stop += 1;
        let stop = StopId(self.next_stop);
        self.reset_pause();
        self.turn.speech_end = Some(speech_end);
        self.turn.stop = Some(stop);
        self.turn.finals_pending += 1;
        self.turn.last_finalize = Some(now);
        self.turn.final_deadline = Some(now + self.config.final_timeout);
        self.mark(TurnEvent::UserSpeechEnd, speech_end);
        self.mark(TurnEvent::VadStop, now);
        self.actions.push_back(Action::FinalizeStt);
        self.mark(TurnEvent::SttFinalize, now);
        self.turn.policy_deadline = match self.config.policy {
            TurnPolicy::Adaptive { incomplete_timeout } => {
                self.actions
                    .push_back(Action::RequestVerdict { stop, speech_end });
                Some(now + incomplete_timeout)
            }
            TurnPolicy::FixedSilence { silence } => Some(speech_end + silence),
        };
        self.state = TurnState::UserPaused;
        let offer = self.speculator.stopped(now, &self.partial());
        self.offer(offer);
        self.try_end_turn(now);
    }

    /// An interim transcript (replaces the previous interim of the turn).
    pub fn handle_interim(&mut self, now: Instant, text: &str) {
        if self.in_user_turn() {
            self.turn.interim.clear();
            self.turn.interim.push_str(text);
            if self.state == TurnState::UserPaused {
                let offer = self.speculator.partial_changed(now, &self.partial());
                self.offer(offer);
            }
        } else if let Some(pending) = &mut self.barge_in {
            pending.interim(text);
            self.check_barge_in(now);
        }
    }

    /// A final transcript; `from_finalize` when it answers a Finalize.
    pub fn handle_final(&mut self, now: Instant, text: &str, from_finalize: bool) {
        if !self.in_user_turn() {
            if let Some(pending) = &mut self.barge_in {
                pending.final_(text);
                self.check_barge_in(now);
            }
            return;
        }
        let text = text.trim();
        if !text.is_empty() {
            if !self.turn.finals.is_empty() {
                self.turn.finals.push(' ');
            }
            self.turn.finals.push_str(text);
        }
        self.turn.interim.clear();
        if from_finalize {
            self.turn.finals_pending = self.turn.finals_pending.saturating_sub(1);
            if self.turn.finals_pending == 0 {
                self.turn.final_deadline = None;
            }
        }
        self.mark(TurnEvent::SttFinal, now);
        if self.state == TurnState::UserPaused {
            if self.turn.finals_pending == 0 {
                let offer = self.speculator.finals_in(&self.turn.finals);
                self.offer(offer);
            }
            self.try_end_turn(now);
        }
    }

    /// The STT reported an error (a final may be missing because of it).
    pub fn handle_stt_error(&mut self, _now: Instant) {
        if self.in_user_turn() {
            self.turn.stt_error = true;
        }
    }

    /// The end-of-turn model's verdict for `stop`.
    pub fn handle_verdict(&mut self, now: Instant, stop: StopId, verdict: Verdict) {
        if !self.awaits_verdict(stop) {
            self.counters.stale_verdicts += 1;
            return;
        }
        match verdict {
            Verdict::Complete { .. } => self.counters.verdicts_complete += 1,
            Verdict::Failed => self.counters.verdicts_failed += 1,
            Verdict::Incomplete { .. } => self.counters.verdicts_incomplete += 1,
        }
        self.turn.verdict = Some(verdict);
        self.mark(TurnEvent::TurnVerdict, now);
        self.try_end_turn(now);
    }

    /// The first audio of `epoch`'s response reached the transport.
    pub fn handle_response_audio_started(&mut self, _now: Instant, epoch: Epoch) {
        if epoch == self.epoch && self.state == TurnState::BotThinking {
            self.state = TurnState::BotSpeaking;
        }
    }

    /// `epoch`'s response is over: its last audio played, or it produced none, or it failed.
    pub fn handle_response_finished(&mut self, now: Instant, epoch: Epoch) {
        if epoch != self.epoch
            || !matches!(self.state, TurnState::BotThinking | TurnState::BotSpeaking)
        {
            return;
        }
        self.state = TurnState::Listening;
        let pending = self.barge_in.take();
        if let Some(pending) = pending.as_ref().filter(|p| p.speech_end.is_none()) {
            // The caller started talking before the bot finished and is still talking.
            self.start_user_turn(pending.speech_start);
            self.turn.finals = pending.finals.clone();
            self.turn.over_bot = true;
        } else if let Some(pending) = pending {
            let kind = pending
                .ignored(now, &self.config.barge_in, &self.backchannels)
                .unwrap_or(Ignored::Short);
            self.count_ignored(kind);
            self.next_after_response(now);
        } else {
            self.next_after_response(now);
        }
    }

    fn next_after_response(&mut self, now: Instant) {
        if !self.next_waiting() {
            self.arm_idle(now);
        }
    }

    /// Starts what waits first (a say or a respond); false when nothing waits.
    fn next_waiting(&mut self) -> bool {
        match self.says.pop_front() {
            Some(Waiting::Say(text)) => self.speak(text, SpeakKind::Say),
            Some(Waiting::Respond) => self.respond(),
            None => return false,
        }
        true
    }

    /// A `say` arrived at `now`: without `interrupt`, [`say`](Self::say);
    /// with it, the bot's current speech (answer, say or prompt) is cut
    /// ([`Action::CutResponse`]), queued says are dropped and `text` is spoken
    /// at once. The caller is never talked over: while the caller holds the
    /// floor an interrupting say waits at the head of the queue. Returns false
    /// when the say is refused (a full queue, an ended call).
    pub fn handle_say(&mut self, _now: Instant, text: String, interrupt: bool) -> bool {
        if !interrupt || self.state == TurnState::Ended {
            return self.say(text);
        }
        self.says.clear();
        match self.state {
            TurnState::UserSpeaking | TurnState::UserPaused => {
                self.says.push_back(Waiting::Say(text));
            }
            TurnState::BotThinking | TurnState::BotSpeaking => {
                let cut = self.epoch;
                self.epoch = self.epoch.next();
                self.actions.push_back(Action::CutResponse {
                    cut,
                    new: self.epoch,
                });
                self.speak(text, SpeakKind::Say);
            }
            TurnState::Listening | TurnState::Ended => {
                self.idle_deadline = None;
                self.speak(text, SpeakKind::Say);
            }
        }
        true
    }

    /// Asks the bot to say `text` as soon as it is idle. Returns false when the
    /// queue of waiting requests is full.
    pub fn say(&mut self, text: String) -> bool {
        if self.state == TurnState::Ended {
            return false;
        }
        if self.state == TurnState::Listening && self.says.is_empty() {
            self.idle_deadline = None;
            self.speak(text, SpeakKind::Say);
            return true;
        }
        if self.says.len() >= SAY_QUEUE_CAPACITY {
            return false;
        }
        self.says.push_back(Waiting::Say(text));
        true
    }

    /// A `respond` arrived: the model answers over the conversation as it
    /// stands, without a caller turn. When the bot is idle the answer starts
    /// at once ([`Action::Respond`]); while the bot speaks it waits in the
    /// queue of says, after them; while the caller holds the floor it waits
    /// too, and the answer to the caller's turn (which reads the same
    /// conversation) spends it: only a turn that ends without words leaves it
    /// to run. One respond waits at most (another one is the same request).
    /// A barge-in or an interrupting say drops a waiting respond, and
    /// cancels a running one like any answer. Returns false when it is
    /// refused (a full queue, an ended call).
    pub fn handle_respond(&mut self, _now: Instant) -> bool {
        match self.state {
            TurnState::Ended => false,
            TurnState::Listening if self.says.is_empty() => {
                self.idle_deadline = None;
                self.respond();
                true
            }
            _ if self.says.contains(&Waiting::Respond) => true,
            _ if self.says.len() >= SAY_QUEUE_CAPACITY => false,
            _ => {
                self.says.push_back(Waiting::Respond);
                true
            }
        }
    }

    /// The caller hung up or the call is being ended from outside.
    pub fn handle_hangup(&mut self, _now: Instant) {
        self.close();
    }

    /// Processes every deadline that is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.call_deadline.is_some_and(|d| d <= now) {
            self.end_call(EndReason::MaxDuration);
            return;
        }
        self.check_barge_in(now);
        if self.state == TurnState::UserPaused {
            let offer = self.speculator.timeout(now);
            self.offer(offer);
            self.try_end_turn(now);
        }
        if self.idle_deadline.is_some_and(|d| d <= now) {
            self.idle_deadline = None;
            self.on_idle();
        }
    }

    // ----- outputs -----

    /// The next action, or `None` when there is nothing to do until a new input or timeout.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The earliest deadline at which [`TurnMachine::handle_timeout`] must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let paused = self.state == TurnState::UserPaused;
        let barge_in = self.barge_in.as_ref().and_then(|p| {
            let config = &self.config.barge_in;
            let interrupt = p.interrupts_at(config, &self.backchannels, self.vad_hangover);
            [interrupt, p.grace_ends_at(config)]
                .into_iter()
                .flatten()
                .min()
        });
        [
            self.call_deadline,
            barge_in,
            self.idle_deadline,
            self.policy_deadline().filter(|_| paused),
            self.turn
                .final_deadline
                .filter(|_| paused && self.config.require_final),
            self.speculator.due().filter(|_| paused),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----- internals -----

    fn in_user_turn(&self) -> bool {
        matches!(self.state, TurnState::UserSpeaking | TurnState::UserPaused)
    }

    /// Whether `text` ends a turn that began over the bot and holds nothing
    /// but backchannels (with a backchannel list configured).
    fn only_backchannels_over_bot(&self, text: &str) -> bool {
        self.turn.over_bot
            && !self.backchannels.is_empty()
            && !text.trim().is_empty()
            && self.backchannels.count_others(text) == 0
    }

    /// The turn's text so far: its finals and the latest interim.
    fn partial(&self) -> String {
        let interim = self.turn.interim.trim();
        match (self.turn.finals.is_empty(), interim.is_empty()) {
            (_, true) => self.turn.finals.clone(),
            (true, false) => interim.to_owned(),
            (false, false) => format!("{} {interim}", self.turn.finals),
        }
    }

    /// Passes the speculator's decision on to the LLM stage.
    fn offer(&mut self, offer: Option<Offer>) {
        let epoch = self.epoch;
        match offer {
            Some(Offer::Start(text)) => {
                self.actions.push_back(Action::Speculate { epoch, text });
            }
            Some(Offer::Withdraw) => {
                self.actions
                    .push_back(Action::WithdrawSpeculation { epoch });
            }
            None => {}
        }
    }

    fn mark(&mut self, event: TurnEvent, at: Instant) {
        self.actions.push_back(Action::Mark(self.epoch, event, at));
    }

    fn reset_pause(&mut self) {
        self.turn.stop = None;
        self.turn.verdict = None;
        self.turn.policy_deadline = None;
        self.turn.policy_deadline_passed = false;
        self.turn.shortcut_passed = false;
    }

    /// The policy's deadline now: the fixed silence, or the adaptive fallback,
    /// shortened by the text shortcut; `None` once it has passed.
    fn policy_deadline(&self) -> Option<Instant> {
        if self.turn.policy_deadline_passed {
            return None;
        }
        let base = self.turn.policy_deadline?;
        Some(self.shortcut_deadline().map_or(base, |s| s.min(base)))
    }

    /// The end of an adaptive turn that the STT final's text allows: after a
    /// complete short answer or terminal punctuation (never after a word that
    /// goes on), counted from the end of speech.
    fn shortcut_deadline(&self) -> Option<Instant> {
        let (Some(rules), Some(shortcut)) = (&self.text_rules, &self.config.incomplete_shortcut)
        else {
            return None;
        };
        let adaptive = matches!(self.config.policy, TurnPolicy::Adaptive { .. });
        if !adaptive || self.turn.finals_pending > 0 {
            return None;
        }
        let end = self.turn.speech_end?;
        let text = self.turn.finals.trim_end();
        let evidence = rules.evidence(text);
        let turn_len = end.saturating_duration_since(self.turn.speech_start.unwrap_or(end));
        let wait = if evidence == TextEvidence::ShortAnswer
            && turn_len <= shortcut.short_answer_max_turn
        {
            shortcut.short_answer
        } else if evidence != TextEvidence::GoesOn
            && text.ends_with(['.', '!', '?'])
            && !shortcut.terminal.is_zero()
        {
            shortcut.terminal
        } else {
            return None;
        };
        Some(end + wait)
    }

    fn policy_satisfied(&self) -> bool {
        let deadline_passed = self.turn.policy_deadline_passed;
        match self.config.policy {
            TurnPolicy::FixedSilence { .. } => deadline_passed,
            TurnPolicy::Adaptive { .. } => {
                matches!(self.turn.verdict, Some(Verdict::Complete { .. })) || deadline_passed
            }
        }
    }

    /// Turns due deadlines into flags, so each deadline fires exactly once.
    fn expire_deadlines(&mut self, now: Instant) {
        if let Some(deadline) = self.policy_deadline()
            && deadline <= now
        {
            let base = self.turn.policy_deadline.unwrap_or(deadline);
            self.turn.shortcut_passed = deadline < base;
            self.turn.policy_deadline_passed = true;
        }
        if self.turn.final_deadline.is_some_and(|d| d <= now) {
            self.turn.final_deadline = None;
            self.turn.final_given_up = true;
        }
    }

    fn try_end_turn(&mut self, now: Instant) {
        self.expire_deadlines(now);
        if !self.policy_satisfied() {
            if self.false_interruption() {
                self.end_turn(now, self.no_text_reason());
            } else {
                self.prefetch_during_shortcut();
            }
            return;
        }
        let finals_ok = !self.config.require_final || self.turn.finals_pending == 0;
        if !finals_ok && !self.turn.final_given_up {
            return;
        }
        if !finals_ok {
            self.counters.final_timeouts += 1;
        }
        self.count_fallback();
        self.end_turn(now, self.no_text_reason());
    }

    /// While a shortened wait runs (every final in, the verdict "incomplete"
    /// or failed, the text shortcut set the deadline), offers the final to the
    /// LLM stage so that the answer is ready when the wait ends
    /// ([`IncompleteShortcut::prefetch`](super::IncompleteShortcut::prefetch)).
    fn prefetch_during_shortcut(&mut self) {
        let on = self
            .config
            .incomplete_shortcut
            .as_ref()
            .is_some_and(|s| s.prefetch);
        let not_complete = matches!(
            self.turn.verdict,
            Some(Verdict::Incomplete { .. } | Verdict::Failed)
        );
        if !on
            || !not_complete
            || self.state != TurnState::UserPaused
            || self.shortcut_deadline().is_none()
        {
            return;
        }
        let offer = self.speculator.prefetch(&self.turn.finals);
        self.offer(offer);
    }

    /// Why the turn would have no text if it ended now.
    fn no_text_reason(&self) -> NoTextReason {
        if self.turn.stt_error {
            NoTextReason::SttError
        } else if self.turn.finals_pending > 0 {
            NoTextReason::FinalTimeout
        } else {
            NoTextReason::EmptyTranscript
        }
    }

    fn end_turn(&mut self, now: Instant, reason: NoTextReason) {
        let mut text = std::mem::take(&mut self.turn.finals);
        let interim = self.turn.interim.trim();
        if self.turn.finals_pending > 0 && !interim.is_empty() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(interim);
        }
        self.reset_pause();
        self.turn.final_deadline = None;
        self.turn.final_given_up = false;
        self.turn.stt_error = false;
        self.mark(TurnEvent::TurnEnd, now);
        if self.only_backchannels_over_bot(&text) {
            // "Mm-hmm" that began over the answer and outlasted it: still not a turn.
            let offer = self.speculator.resumed();
            self.offer(offer);
            self.counters.backchannels_ignored += 1;
            self.state = TurnState::Listening;
            self.arm_idle(now);
            return;
        }
        if text.is_empty() {
            let offer = self.speculator.resumed();
            self.offer(offer);
            self.on_no_text(now, reason);
            return;
        }
        self.speculator.reset();
        self.turn.finals = text.clone();
        self.turn.finals_pending = 0;
        // This answer reads the conversation as it stands: it is the respond.
        self.says.retain(|w| *w != Waiting::Respond);
        self.counters.responses += 1;
        self.mark(TurnEvent::LlmRequest, now);
        self.actions.push_back(Action::StartResponse {
            epoch: self.epoch,
            user_text: text,
        });
        self.responding_to_user = true;
        self.state = TurnState::BotThinking;
    }

    /// A turn without text: reported, then the interrupted answer resumed (a
    /// false interruption), or the not-heard reply spoken when the caller
    /// spoke long enough, or a waiting say, or nothing.
    fn on_no_text(&mut self, now: Instant, reason: NoTextReason) {
        self.counters.empty_turns += 1;
        self.turn.finals_pending = 0;
        let speech = match (self.turn.speech_start, self.turn.speech_end) {
            (Some(start), Some(end)) => end.saturating_duration_since(start),
            _ => std::time::Duration::ZERO,
        };
        let resume = self
            .turn
            .interrupted
            .take()
            .filter(|_| self.config.resume_false_interruptions);
        let reply = match resume {
            Some(_) => None,
            None => self
                .config
                .not_heard
                .as_ref()
                .filter(|n| speech >= n.min_speech)
                .map(|n| n.reply.clone()),
        };
        self.actions.push_back(Action::NoText {
            epoch: self.epoch,
            reason,
            speech,
            replied: reply.is_some(),
        });
        if let Some(interrupted) = resume {
            self.resume(interrupted);
            return;
        }
        if let Some(text) = reply {
            self.counters.not_heard_replies += 1;
            self.speak(text, SpeakKind::NotHeard);
            return;
        }
        self.state = TurnState::Listening;
        self.next_after_response(now);
    }

    fn take_back(&mut self) {
        let cancelled = self.epoch;
        self.epoch = self.epoch.next();
        self.counters.taken_back += 1;
        self.actions.push_back(Action::CancelResponse {
            cancelled,
            new: self.epoch,
        });
        if let Some(start) = self.turn.speech_start {
            self.mark(TurnEvent::UserSpeechStart, start);
        }
        // The transcript so far stays: the caller is continuing the same turn.
        self.reset_pause();
        self.state = TurnState::UserSpeaking;
    }

    /// A turn opened by a barge-in whose finals are all in and hold no word:
    /// nothing is left to wait for when it is to be resumed.
    fn false_interruption(&self) -> bool {
        self.config.resume_false_interruptions
            && self.turn.interrupted.is_some()
            && self.turn.finals_pending == 0
            && self.turn.finals.trim().is_empty()
            && self.turn.interim.trim().is_empty()
    }

    fn resume(&mut self, interrupted: Epoch) {
        self.counters.false_interruptions_resumed += 1;
        self.actions.push_back(Action::ResumeResponse {
            interrupted,
            epoch: self.epoch,
        });
        self.responding_to_user = false;
        self.state = TurnState::BotThinking;
    }

    /// Which deadline ended an adaptive turn without a "complete" verdict.
    fn count_fallback(&mut self) {
        if !matches!(self.config.policy, TurnPolicy::Adaptive { .. })
            || matches!(self.turn.verdict, Some(Verdict::Complete { .. }))
        {
            return;
        }
        if self.turn.shortcut_passed {
            self.counters.shortened_fallbacks += 1;
        } else if matches!(self.turn.verdict, Some(Verdict::Incomplete { .. })) {
            self.counters.incomplete_timeouts += 1;
        } else {
            self.counters.verdict_fallbacks += 1;
        }
    }

    fn arm_barge_in(&mut self, now: Instant, speech_start: Instant) {
        match &mut self.barge_in {
            Some(pending) => pending.resumed(),
            None => self.barge_in = Some(PendingBargeIn::new(speech_start)),
        }
        self.check_barge_in(now);
    }

    /// Interrupts when the pending speech qualifies by `now`, or forgets it
    /// when it is over without qualifying.
    fn check_barge_in(&mut self, now: Instant) {
        let Some(pending) = &self.barge_in else {
            return;
        };
        let config = &self.config.barge_in;
        if pending
            .interrupts_at(config, &self.backchannels, self.vad_hangover)
            .is_some_and(|at| at <= now)
        {
            let (start, finals) = (pending.speech_start, pending.finals.clone());
            self.interrupt(start, finals);
        } else if let Some(kind) = pending.ignored(now, config, &self.backchannels) {
            self.barge_in = None;
            self.count_ignored(kind);
        }
    }

    fn count_ignored(&mut self, kind: Ignored) {
        match kind {
            Ignored::Backchannel => self.counters.backchannels_ignored += 1,
            Ignored::Short => self.counters.short_speech_ignored += 1,
        }
    }

    fn start_user_turn(&mut self, speech_start: Instant) {
        self.speculator.reset();
        self.epoch = self.epoch.next();
        self.counters.turns += 1;
        self.turn = UserTurn {
            speech_start: Some(speech_start),
            ..UserTurn::default()
        };
        self.mark(TurnEvent::UserSpeechStart, speech_start);
        self.state = TurnState::UserSpeaking;
    }

    fn interrupt(&mut self, speech_start: Instant, finals: String) {
        self.barge_in = None;
        let old = self.epoch;
        self.epoch = self.epoch.next();
        self.counters.barge_ins += 1;
        self.counters.turns += 1;
        self.says.clear();
        self.turn = UserTurn {
            speech_start: Some(speech_start),
            finals,
            interrupted: Some(old),
            ..UserTurn::default()
        };
        self.actions.push_back(Action::Interrupt {
            old,
            new: self.epoch,
            speech_start,
        });
        self.state = TurnState::UserSpeaking;
    }

    /// Starts an answer without a caller turn, in the current epoch.
    fn respond(&mut self) {
        self.counters.responses += 1;
        self.actions
            .push_back(Action::Respond { epoch: self.epoch });
        self.responding_to_user = false;
        self.state = TurnState::BotThinking;
    }

    fn speak(&mut self, text: String, kind: SpeakKind) {
        self.actions.push_back(Action::Speak {
            epoch: self.epoch,
            text,
            kind,
        });
        self.responding_to_user = false;
        self.state = TurnState::BotThinking;
    }

    fn arm_idle(&mut self, now: Instant) {
        self.idle_deadline = self.config.idle.as_ref().map(|idle| {
            now + if self.idle_prompted {
                idle.end_after
            } else {
                idle.prompt_after
            }
        });
    }

    fn on_idle(&mut self) {
        if self.state != TurnState::Listening {
            return;
        }
        if self.idle_prompted {
            self.end_call(EndReason::Idle);
            return;
        }
        let Some(prompt) = self.config.idle.as_ref().map(|i| i.prompt.clone()) else {
            return;
        };
        self.idle_prompted = true;
        self.speak(prompt, SpeakKind::IdlePrompt);
    }

    fn end_call(&mut self, reason: EndReason) {
        self.actions.push_back(Action::EndCall(reason));
        self.close();
    }

    fn close(&mut self) {
        self.state = TurnState::Ended;
        self.barge_in = None;
        self.idle_deadline = None;
        self.call_deadline = None;
        self.says.clear();
        self.speculator.reset();
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
