//! One test per transition of the turn machine, driven without a runtime: a small
//! driver collects the actions and jumps the clock to the machine's next deadline.

use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;

use super::*;
use crate::turn::config::{BargeInConfig, IdleConfig, NotHeardConfig, TurnConfig, TurnPolicy};

struct Driver {
    m: TurnMachine,
    t0: Instant,
    log: Vec<Action>,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Driver {
    fn new(config: TurnConfig) -> Self {
        #[allow(clippy::disallowed_methods)]
        // the tests' one real origin; all later times derive from it
        let t0 = Instant::now();
        let mut d = Driver {
            m: TurnMachine::new(config, t0),
            t0,
            log: Vec::new(),
        };
        d.drain();
        d
    }

    fn at(&self, n: u64) -> Instant {
        self.t0 + ms(n)
    }

    fn drain(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(a) = self.m.poll_action() {
            out.push(a);
        }
        self.log.extend(out.iter().cloned());
        out
    }

    /// Runs every timeout up to `n` ms, as a timer-driven shell would.
    fn advance_to(&mut self, n: u64) -> Vec<Action> {
        let until = self.at(n);
        let mut out = Vec::new();
        let mut last = None;
        while let Some(deadline) = self.m.poll_timeout() {
            if deadline > until {
                break;
            }
            assert_ne!(
                Some(deadline),
                last,
                "a deadline fired twice: the machine made no progress"
            );
            last = Some(deadline);
            self.m.handle_timeout(deadline);
            out.extend(self.drain());
        }
        out
    }

    fn speech(&mut self, start: u64, confirmed: u64) -> Vec<Action> {
        self.advance_to(confirmed);
        self.m
            .handle_speech_start(self.at(confirmed), self.at(start));
        self.drain()
    }

    fn stop(&mut self, speech_end: u64, decided: u64) -> Vec<Action> {
        self.advance_to(decided);
        self.m
            .handle_speech_end(self.at(decided), self.at(speech_end));
        self.drain()
    }

    fn final_(&mut self, at: u64, text: &str) -> Vec<Action> {
        self.advance_to(at);
        self.m.handle_final(self.at(at), text, true);
        self.drain()
    }

    fn verdict(&mut self, at: u64, verdict: Verdict) -> Vec<Action> {
        self.advance_to(at);
        let stop = self.last_stop().expect("a verdict was requested");
        self.m.handle_verdict(self.at(at), stop, verdict);
        self.drain()
    }

    fn last_stop(&self) -> Option<StopId> {
        self.log.iter().rev().find_map(|a| match a {
            Action::RequestVerdict { stop, .. } => Some(*stop),
            _ => None,
        })
    }

    /// A whole user turn under the adaptive policy with a complete verdict.
    fn user_turn(&mut self, start: u64, end: u64, text: &str) -> Vec<Action> {
        let mut out = self.speech(start, start + 64);
        out.extend(self.stop(end, end + 100));
        out.extend(self.verdict(end + 125, COMPLETE));
        out.extend(self.final_(end + 250, text));
        out
    }
}

const COMPLETE: Verdict = Verdict::Complete { probability: 0.9 };
const INCOMPLETE: Verdict = Verdict::Incomplete { probability: 0.1 };

fn responses(actions: &[Action]) -> Vec<(Epoch, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::StartResponse { epoch, user_text } => Some((*epoch, user_text.clone())),
            _ => None,
        })
        .collect()
}

fn marked(actions: &[Action], event: TurnEvent) -> Option<(Epoch, Instant)> {
    actions.iter().find_map(|a| match a {
        Action::Mark(e, ev, at) if *ev == event => Some((*e, *at)),
        _ => None,
    })
}

fn fixed(silence_ms: u64) -> TurnConfig {
    TurnConfig {
        policy: TurnPolicy::FixedSilence {
            silence: ms(silence_ms),
        },
        ..TurnConfig::default()
    }
}

#[test]
fn speech_from_listening_opens_a_new_epoch_and_marks_its_start() {
    let mut d = Driver::new(TurnConfig::default());
    let out = d.speech(100, 164);
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
    assert_eq!(d.m.epoch(), Epoch(1));
    assert_eq!(
        marked(&out, TurnEvent::UserSpeechStart),
        Some((Epoch(1), d.at(100)))
    );
}

#[test]
fn the_vad_stop_finalizes_the_stt_and_asks_for_a_verdict() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    let out = d.stop(1000, 1100);
    assert_eq!(d.m.state(), TurnState::UserPaused);
    assert!(out.contains(&Action::FinalizeStt));
    assert!(out.iter().any(
        |a| matches!(a, Action::RequestVerdict { speech_end, .. } if *speech_end == d.at(1000))
    ));
    assert_eq!(
        marked(&out, TurnEvent::UserSpeechEnd),
        Some((Epoch(1), d.at(1000)))
    );
    assert_eq!(
        marked(&out, TurnEvent::VadStop),
        Some((Epoch(1), d.at(1100)))
    );
}

#[test]
fn a_complete_verdict_and_the_final_end_the_turn_and_start_one_response() {
    let mut d = Driver::new(TurnConfig::default());
    let out = d.user_turn(100, 1000, "hello there");
    assert_eq!(responses(&out), vec![(Epoch(1), "hello there".to_owned())]);
    assert_eq!(d.m.state(), TurnState::BotThinking);
    assert_eq!(
        marked(&out, TurnEvent::TurnEnd),
        Some((Epoch(1), d.at(1250)))
    );
    assert_eq!(
        marked(&out, TurnEvent::LlmRequest),
        Some((Epoch(1), d.at(1250)))
    );
    assert_eq!(d.m.counters().responses, 1);
}

#[test]
fn a_complete_verdict_waits_for_the_final_when_it_is_required() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    let out = d.verdict(1125, COMPLETE);
    assert!(responses(&out).is_empty());
    assert_eq!(d.m.state(), TurnState::UserPaused);
    let out = d.final_(1300, "ok");
    assert_eq!(responses(&out).len(), 1);
}

#[test]
fn without_require_final_a_complete_verdict_ends_the_turn_with_the_interim() {
    let mut d = Driver::new(TurnConfig {
        require_final: false,
        ..TurnConfig::default()
    });
    d.speech(100, 164);
    d.m.handle_interim(d.at(500), "what time");
    d.stop(1000, 1100);
    let out = d.verdict(1125, COMPLETE);
    assert_eq!(responses(&out), vec![(Epoch(1), "what time".to_owned())]);
}

#[test]
fn an_incomplete_verdict_waits_and_resumed_speech_continues_the_same_turn() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.verdict(1125, INCOMPLETE);
    d.final_(1250, "I would like");
    assert_eq!(d.m.state(), TurnState::UserPaused);
    let out = d.speech(1400, 1464);
    assert!(marked(&out, TurnEvent::UserSpeechStart).is_none());
    assert_eq!(d.m.epoch(), Epoch(1));
    d.stop(2500, 2600);
    d.verdict(2625, COMPLETE);
    let out = d.final_(2750, "a coffee");
    assert_eq!(
        responses(&out),
        vec![(Epoch(1), "I would like a coffee".to_owned())]
    );
    assert_eq!(d.m.counters().turns, 1);
    assert_eq!(d.m.counters().responses, 1);
}

#[test]
fn an_incomplete_verdict_ends_the_turn_at_its_timeout() {
    let mut d = Driver::new(TurnConfig {
        policy: TurnPolicy::Adaptive {
            incomplete_timeout: ms(2000),
        },
        ..TurnConfig::default()
    });
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.verdict(1125, INCOMPLETE);
    d.final_(1250, "so");
    assert_eq!(d.m.poll_timeout(), Some(d.at(3100)));
    let out = d.advance_to(3100);
    assert_eq!(responses(&out), vec![(Epoch(1), "so".to_owned())]);
    assert_eq!(
        marked(&out, TurnEvent::TurnEnd),
        Some((Epoch(1), d.at(3100)))
    );
    assert_eq!(d.m.counters().incomplete_timeouts, 1);
}

#[test]
fn a_failed_analysis_waits_for_the_fallback_deadline_and_is_counted() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.final_(1200, "I would like to");
    let out = d.verdict(1300, Verdict::Failed);
    assert!(responses(&out).is_empty(), "never ended at once: {out:?}");
    assert_eq!(d.m.counters().verdicts_failed, 1);
    assert_eq!(d.m.poll_timeout(), Some(d.at(4100)));
    // The caller goes on inside the fallback: one turn, answered once.
    d.speech(1500, 1564);
    d.stop(2500, 2600);
    d.verdict(2700, COMPLETE);
    let out = d.final_(2800, "book a table");
    assert_eq!(
        responses(&out),
        vec![(Epoch(1), "I would like to book a table".to_owned())]
    );
}

#[test]
fn a_late_analysis_ends_the_turn_at_its_fallback_deadline() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.final_(1250, "so");
    assert!(d.advance_to(4099).is_empty());
    let out = d.advance_to(4100);
    assert_eq!(responses(&out), vec![(Epoch(1), "so".to_owned())]);
    assert_eq!(d.m.counters().verdict_fallbacks, 1);
    // The verdict that comes after all changes nothing.
    let stop = d.last_stop().expect("requested");
    d.m.handle_verdict(d.at(4200), stop, COMPLETE);
    assert!(responses(&d.drain()).is_empty());
    assert_eq!(d.m.counters().stale_verdicts, 1);
}

fn with_shortcut() -> TurnConfig {
    TurnConfig {
        incomplete_shortcut: Some(crate::turn::IncompleteShortcut::new(
            brisvox_text::Language::En,
        )),
        ..TurnConfig::default()
    }
}

/// The turn ends `wait_ms` after the end of speech (1000) once the final says `text`.
fn ends_after(config: TurnConfig, text: &str, verdict: Verdict) -> Option<u64> {
    let mut d = Driver::new(config);
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.verdict(1125, verdict);
    let mut out = d.final_(1250, text);
    out.extend(d.advance_to(10_000));
    marked(&out, TurnEvent::TurnEnd).map(|(_, at)| (at - d.at(1000)).as_millis() as u64)
}

#[test]
fn a_short_answer_or_terminal_punctuation_shortens_the_incomplete_wait() {
    assert_eq!(ends_after(with_shortcut(), "Yes.", INCOMPLETE), Some(300));
    assert_eq!(
        ends_after(with_shortcut(), "four two seven", INCOMPLETE),
        Some(300)
    );
    assert_eq!(
        ends_after(with_shortcut(), "I'd like a table for two.", INCOMPLETE),
        Some(700)
    );
    assert_eq!(
        ends_after(with_shortcut(), "Yes.", Verdict::Failed),
        Some(300)
    );
    // Words that go on, or no evidence: the full fallback after the stop.
    assert_eq!(
        ends_after(with_shortcut(), "I'd like the.", INCOMPLETE),
        Some(3100)
    );
    assert_eq!(
        ends_after(with_shortcut(), "a table for two", INCOMPLETE),
        Some(3100)
    );
    // Without the shortcut configured nothing changes.
    assert_eq!(
        ends_after(TurnConfig::default(), "Yes.", INCOMPLETE),
        Some(3100)
    );
}

#[test]
fn a_shortened_wait_is_counted_and_a_late_final_ends_the_turn_at_once() {
    let mut d = Driver::new(with_shortcut());
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.verdict(1125, INCOMPLETE);
    assert!(d.advance_to(1900).is_empty(), "no text yet: no shortcut");
    let out = d.final_(1900, "No.");
    assert_eq!(responses(&out), vec![(Epoch(1), "No.".to_owned())]);
    assert_eq!(d.m.counters().shortened_fallbacks, 1);
    assert_eq!(d.m.counters().incomplete_timeouts, 0);
}

/// The shortcut's turn up to its final: speech 100-1000 ms, the stop at 1100.
fn paused_with_shortcut(config: TurnConfig) -> Driver {
    let mut d = Driver::new(config);
    d.speech(100, 164);
    d.stop(1000, 1100);
    d
}

#[test]
fn a_shortened_wait_prefetches_the_answer_on_the_final() {
    let mut d = paused_with_shortcut(with_shortcut());
    assert!(speculations(&d.verdict(1125, INCOMPLETE)).is_empty());
    let at_final = d.final_(1250, "I'd like a table for two.");
    assert_eq!(speculations(&at_final), ["I'd like a table for two."]);
    let end = d.advance_to(10_000);
    assert!(speculations(&end).is_empty(), "offered once");
    assert_eq!(
        responses(&end),
        [(Epoch(1), "I'd like a table for two.".to_owned())]
    );
    assert_eq!(
        marked(&end, TurnEvent::TurnEnd).map(|(_, at)| at),
        Some(d.at(1700)),
        "the wait itself is unchanged"
    );
    // The verdict after the final: offered at the verdict.
    let mut d = paused_with_shortcut(with_shortcut());
    assert!(speculations(&d.final_(1150, "No.")).is_empty());
    assert_eq!(speculations(&d.verdict(1200, Verdict::Failed)), ["No."]);
}

#[test]
fn a_prefetched_answer_is_withdrawn_when_the_caller_goes_on() {
    let mut d = paused_with_shortcut(with_shortcut());
    d.verdict(1125, INCOMPLETE);
    d.final_(1250, "I'd like a table.");
    assert_eq!(speculations(&d.speech(1500, 1564)), ["<withdrawn>"]);
}

#[test]
fn nothing_is_prefetched_without_a_shortened_wait() {
    let prefetch_off = {
        let mut c = with_shortcut();
        if let Some(s) = &mut c.incomplete_shortcut {
            s.prefetch = false;
        }
        c
    };
    for (config, text, verdict) in [
        (with_shortcut(), "a table for two", INCOMPLETE),
        (with_shortcut(), "I'd like the.", INCOMPLETE),
        (with_shortcut(), "I'd like a table.", COMPLETE),
        (prefetch_off, "I'd like a table.", INCOMPLETE),
        (TurnConfig::default(), "I'd like a table.", INCOMPLETE),
    ] {
        let mut d = paused_with_shortcut(config);
        let mut out = d.verdict(1125, verdict);
        out.extend(d.final_(1250, text));
        out.extend(d.advance_to(10_000));
        assert!(speculations(&out).is_empty(), "{text:?} {verdict:?}");
    }
}

#[test]
fn a_long_turn_is_not_a_short_answer() {
    let mut d = Driver::new(with_shortcut());
    d.speech(100, 164);
    d.stop(4000, 4100);
    d.verdict(4125, INCOMPLETE);
    let mut out = d.final_(4250, "one two three");
    out.extend(d.advance_to(10_000));
    assert_eq!(
        marked(&out, TurnEvent::TurnEnd).map(|(_, at)| at),
        Some(d.at(7100))
    );
}

/// The word rule with an 800 ms wordless limit (the machine alone: no VAD
/// hangover).
fn with_words() -> TurnConfig {
    TurnConfig {
        barge_in: BargeInConfig {
            min_speech: ms(300),
            backchannels: crate::turn::words::default_backchannels(brisvox_text::Language::En),
            max_wordless_speech: ms(800),
            ..BargeInConfig::default()
        },
        ..TurnConfig::default()
    }
}

/// A bot speaking since 1700 after the caller's first turn.
fn bot_speaking(config: TurnConfig) -> Driver {
    let mut d = Driver::new(config);
    d.user_turn(100, 1000, "hi");
    d.m.handle_response_audio_started(d.at(1700), Epoch(1));
    d
}

#[test]
fn a_backchannel_that_outlasts_the_answer_is_not_answered() {
    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    // The answer ends while the caller is still saying it.
    d.m.handle_response_finished(d.at(3200), Epoch(1));
    let mut out = d.drain();
    out.extend(d.stop(3500, 3600));
    out.extend(d.verdict(3625, COMPLETE));
    out.extend(d.final_(3750, "Okay."));
    out.extend(d.advance_to(8000));
    assert!(responses(&out).is_empty(), "{out:?}");
    assert_eq!(d.m.state(), TurnState::Listening);
    assert_eq!(d.m.counters().backchannels_ignored, 1);
    // The same word from a caller who spoke after the bot is an answer.
    d.user_turn(9000, 9400, "Okay.");
    assert_eq!(
        responses(&d.log).last().map(|r| r.1.as_str()),
        Some("Okay.")
    );
}

fn interrupts(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Interrupt { .. }))
        .count()
}

#[test]
fn a_backchannel_over_the_bot_never_interrupts_and_is_counted() {
    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    d.advance_to(3400);
    d.m.handle_interim(d.at(3400), "mm-hmm");
    let mut out = d.drain();
    out.extend(d.stop(3500, 3600));
    d.m.handle_final(d.at(3700), "Mm-hmm, yeah.", false);
    out.extend(d.drain());
    out.extend(d.advance_to(5000));
    assert_eq!(interrupts(&out), 0, "{out:?}");
    assert_eq!(d.m.state(), TurnState::BotSpeaking);
    assert_eq!(d.m.counters().backchannels_ignored, 1);
    assert_eq!(d.m.counters().barge_ins, 0);
}

#[test]
fn words_that_are_not_backchannels_interrupt() {
    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    d.m.handle_interim(d.at(3200), "okay wait");
    let mut out = d.drain();
    assert_eq!(interrupts(&out), 0, "not before min_speech");
    out.extend(d.advance_to(3300));
    assert_eq!(interrupts(&out), 1);
    assert_eq!(d.m.counters().barge_ins, 1);
    // The words heard so far open the caller's new turn.
    d.stop(3600, 3700);
    d.verdict(3725, COMPLETE);
    let out = d.final_(3800, "a second");
    assert_eq!(responses(&out), vec![(Epoch(2), "a second".to_owned())]);
}

#[test]
fn long_speech_without_words_interrupts_and_a_late_word_still_counts() {
    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    let out = d.advance_to(3800);
    assert_eq!(interrupts(&out), 1, "no word for 800 ms: a barge-in");

    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    d.stop(3500, 3600);
    assert_eq!(
        d.m.counters().short_speech_ignored,
        0,
        "waits for its words"
    );
    d.m.handle_final(d.at(3800), "stop", false);
    assert_eq!(interrupts(&d.drain()), 1);

    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    d.stop(3500, 3600);
    assert!(d.advance_to(4000).is_empty());
    assert_eq!(
        d.m.counters().short_speech_ignored,
        1,
        "no word in the grace"
    );
}

#[test]
fn min_words_needs_that_many_recognised_words() {
    let mut config = with_words();
    config.barge_in.min_words = 2;
    let mut d = bot_speaking(config);
    d.speech(3000, 3064);
    d.m.handle_interim(d.at(3400), "yeah stop");
    assert_eq!(interrupts(&d.drain()), 0);
    d.m.handle_interim(d.at(3500), "yeah stop talking");
    assert_eq!(interrupts(&d.drain()), 1);
}

#[test]
fn a_verdict_for_an_older_stop_is_ignored() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    let old = d.last_stop().unwrap();
    d.speech(1150, 1214);
    d.stop(2000, 2100);
    d.m.handle_verdict(d.at(2110), old, COMPLETE);
    d.drain();
    d.final_(2200, "a");
    d.final_(2250, "b");
    assert_eq!(
        d.m.state(),
        TurnState::UserPaused,
        "the old verdict must not end the turn"
    );
    assert_eq!(d.m.counters().stale_verdicts, 1);
    let out = d.verdict(2300, COMPLETE);
    assert_eq!(responses(&out), vec![(Epoch(1), "a b".to_owned())]);
}

#[test]
fn a_verdict_is_awaited_only_while_the_caller_is_paused_at_its_stop() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    let first = d.last_stop().unwrap();
    assert!(d.m.awaits_verdict(first));
    d.speech(1150, 1214);
    assert!(!d.m.awaits_verdict(first), "the caller went on");
    d.stop(2000, 2100);
    let second = d.last_stop().unwrap();
    assert!(d.m.awaits_verdict(second));
    assert!(!d.m.awaits_verdict(first));
    // One final per finalize (one per stop), then the verdict ends the turn.
    d.final_(2200, "a");
    d.final_(2250, "b");
    d.verdict(2300, COMPLETE);
    assert_ne!(d.m.state(), TurnState::UserPaused);
    assert!(!d.m.awaits_verdict(second), "the turn ended");
}

#[test]
fn a_verdict_is_usable_once_the_finals_are_in_or_their_wait_gave_up() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    d.stop(1000, 1100);
    let first = d.last_stop().unwrap();
    assert!(
        !d.m.verdict_usable(first),
        "the final of its finalize is pending"
    );
    d.final_(1250, "a");
    assert!(d.m.verdict_usable(first), "every final is in");
    d.speech(1300, 1364);
    assert!(!d.m.verdict_usable(first), "the caller went on");
    d.stop(2000, 2100);
    let second = d.last_stop().unwrap();
    assert!(!d.m.verdict_usable(second));
    // The final never comes: usable once the wait for it gives up.
    d.advance_to(2100 + 1500);
    assert!(d.m.verdict_usable(second), "the final timeout passed");
    let mut no_final = Driver::new(TurnConfig {
        require_final: false,
        ..TurnConfig::default()
    });
    no_final.speech(100, 164);
    no_final.stop(1000, 1100);
    let stop = no_final.last_stop().unwrap();
    assert!(no_final.m.verdict_usable(stop), "nothing waits for a final");
}

#[test]
fn fixed_silence_counts_from_the_backdated_stop() {
    let mut d = Driver::new(fixed(450));
    d.speech(100, 164);
    let out = d.stop(1000, 1100);
    assert!(
        !out.iter()
            .any(|a| matches!(a, Action::RequestVerdict { .. }))
    );
    d.final_(1200, "hi");
    assert_eq!(d.m.poll_timeout(), Some(d.at(1450)));
    let out = d.advance_to(1450);
    assert_eq!(responses(&out).len(), 1);
    assert_eq!(
        marked(&out, TurnEvent::TurnEnd),
        Some((Epoch(1), d.at(1450)))
    );
}

#[test]
fn fixed_silence_still_waits_for_a_late_final() {
    let mut d = Driver::new(fixed(450));
    d.speech(100, 164);
    d.stop(1000, 1100);
    assert!(responses(&d.advance_to(1500)).is_empty());
    let out = d.final_(1600, "late");
    assert_eq!(responses(&out).len(), 1);
}

#[test]
fn a_missing_final_ends_the_turn_at_the_final_timeout_with_the_interim() {
    let mut d = Driver::new(TurnConfig {
        final_timeout: ms(800),
        ..TurnConfig::default()
    });
    d.speech(100, 164);
    d.m.handle_interim(d.at(600), "book a table");
    d.stop(1000, 1100);
    d.verdict(1125, COMPLETE);
    assert_eq!(d.m.poll_timeout(), Some(d.at(1900)));
    let out = d.advance_to(1900);
    assert_eq!(responses(&out), vec![(Epoch(1), "book a table".to_owned())]);
    assert_eq!(d.m.counters().final_timeouts, 1);
}

#[test]
fn an_empty_transcript_ends_the_turn_without_a_request() {
    let mut d = Driver::new(TurnConfig::default());
    let out = d.user_turn(100, 400, "  ");
    assert!(responses(&out).is_empty());
    assert!(marked(&out, TurnEvent::TurnEnd).is_some());
    assert_eq!(d.m.state(), TurnState::Listening);
    assert_eq!(d.m.counters().empty_turns, 1);
}

fn no_text(actions: &[Action]) -> Option<(NoTextReason, Duration, bool)> {
    actions.iter().find_map(|a| match a {
        Action::NoText {
            reason,
            speech,
            replied,
            ..
        } => Some((*reason, *speech, *replied)),
        _ => None,
    })
}

fn spoken(actions: &[Action]) -> Vec<(String, SpeakKind)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Speak { text, kind, .. } => Some((text.clone(), *kind)),
            _ => None,
        })
        .collect()
}

fn not_heard() -> TurnConfig {
    TurnConfig {
        not_heard: Some(NotHeardConfig {
            reply: "Sorry, I didn't catch that.".into(),
            min_speech: ms(500),
        }),
        ..TurnConfig::default()
    }
}

#[test]
fn a_turn_without_text_is_reported_with_its_reason_and_the_length_of_the_speech() {
    let mut d = Driver::new(TurnConfig::default());
    let out = d.user_turn(100, 400, "");
    assert_eq!(
        no_text(&out),
        Some((NoTextReason::EmptyTranscript, ms(300), false))
    );
    assert!(spoken(&out).is_empty(), "silence without a not-heard reply");
}

#[test]
fn clear_speech_without_text_is_answered_with_the_not_heard_reply() {
    let mut d = Driver::new(not_heard());
    let out = d.user_turn(100, 1400, "");
    assert_eq!(
        no_text(&out),
        Some((NoTextReason::EmptyTranscript, ms(1300), true))
    );
    assert_eq!(
        spoken(&out),
        vec![(
            "Sorry, I didn't catch that.".to_owned(),
            SpeakKind::NotHeard
        )]
    );
    assert_eq!(d.m.state(), TurnState::BotThinking);
    assert_eq!(d.m.counters().not_heard_replies, 1);
    // The reply plays out; the caller's next turn is a normal one.
    let epoch = d.m.epoch();
    d.m.handle_response_finished(d.at(3000), epoch);
    assert_eq!(d.m.state(), TurnState::Listening);
    let out = d.user_turn(4000, 5000, "hello");
    assert_eq!(responses(&out).len(), 1);
}

#[test]
fn a_short_sound_without_text_gets_no_reply() {
    let mut d = Driver::new(not_heard());
    let out = d.user_turn(100, 400, "");
    assert_eq!(
        no_text(&out),
        Some((NoTextReason::EmptyTranscript, ms(300), false))
    );
    assert!(spoken(&out).is_empty());
    assert_eq!(d.m.state(), TurnState::Listening);
}

#[test]
fn a_final_that_never_comes_is_a_final_timeout_and_is_answered() {
    let mut d = Driver::new(not_heard());
    d.speech(100, 164);
    d.stop(1000, 1100);
    d.verdict(1125, COMPLETE);
    // final_timeout 1500 ms after the VAD stop.
    let out = d.advance_to(2600);
    assert_eq!(
        no_text(&out),
        Some((NoTextReason::FinalTimeout, ms(900), true))
    );
    assert_eq!(spoken(&out).len(), 1);
    assert_eq!(d.m.counters().final_timeouts, 1);
    // The late final after the turn ended is ignored.
    d.m.handle_final(d.at(2700), "too late", true);
    assert!(responses(&d.drain()).is_empty());
}

#[test]
fn an_stt_error_in_the_turn_is_the_reason() {
    let mut d = Driver::new(not_heard());
    d.speech(100, 164);
    d.m.handle_stt_error(d.at(500));
    d.stop(1000, 1100);
    d.verdict(1125, COMPLETE);
    let out = d.advance_to(2600);
    assert_eq!(no_text(&out).map(|n| n.0), Some(NoTextReason::SttError));
    // The next turn starts without the error.
    let epoch = d.m.epoch();
    d.m.handle_response_finished(d.at(3000), epoch);
    let out = d.user_turn(4000, 5000, "");
    assert_eq!(
        no_text(&out).map(|n| n.0),
        Some(NoTextReason::EmptyTranscript)
    );
}

#[test]
fn speech_after_the_turn_end_but_before_audio_takes_the_turn_back() {
    let mut d = Driver::new(TurnConfig::default());
    d.user_turn(100, 1000, "I want");
    assert_eq!(d.m.state(), TurnState::BotThinking);
    let out = d.speech(1400, 1464);
    assert_eq!(
        out.first(),
        Some(&Action::CancelResponse {
            cancelled: Epoch(1),
            new: Epoch(2)
        })
    );
    assert_eq!(
        marked(&out, TurnEvent::UserSpeechStart),
        Some((Epoch(2), d.at(100))),
        "the continued turn keeps the original speech start"
    );
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
    d.stop(2000, 2100);
    d.verdict(2125, COMPLETE);
    let out = d.final_(2250, "a refund");
    assert_eq!(
        responses(&out),
        vec![(Epoch(2), "I want a refund".to_owned())]
    );
    let c = d.m.counters();
    assert_eq!((c.turns, c.taken_back, c.responses), (1, 1, 2));
}

#[test]
fn speech_while_the_bot_speaks_interrupts_at_once_by_default() {
    let mut d = Driver::new(TurnConfig::default());
    d.user_turn(100, 1000, "tell me a story");
    d.m.handle_response_audio_started(d.at(1700), Epoch(1));
    assert_eq!(d.m.state(), TurnState::BotSpeaking);
    let out = d.speech(3000, 3064);
    assert_eq!(
        out,
        vec![Action::Interrupt {
            old: Epoch(1),
            new: Epoch(2),
            speech_start: d.at(3000)
        }]
    );
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
    assert_eq!(d.m.counters().barge_ins, 1);
    // The old response's completion no longer matters.
    d.m.handle_response_finished(d.at(3100), Epoch(1));
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
}

#[test]
fn short_speech_over_the_bot_does_not_interrupt_and_is_counted() {
    let mut d = Driver::new(TurnConfig {
        barge_in: BargeInConfig {
            enabled: true,
            min_speech: ms(300),
            ..BargeInConfig::default()
        },
        ..TurnConfig::default()
    });
    d.user_turn(100, 1000, "hi");
    d.m.handle_response_audio_started(d.at(1700), Epoch(1));
    d.speech(3000, 3064);
    assert_eq!(d.m.poll_timeout(), Some(d.at(3300)));
    d.stop(3150, 3250);
    assert_eq!(d.m.state(), TurnState::BotSpeaking);
    assert_eq!(d.m.counters().short_speech_ignored, 1);
    assert_eq!(d.m.poll_timeout(), None);
    // Longer speech interrupts at speech start + min_speech.
    d.speech(4000, 4064);
    let out = d.advance_to(4300);
    assert!(matches!(
        out.as_slice(),
        [Action::Interrupt {
            old: Epoch(1),
            new: Epoch(2),
            ..
        }]
    ));
}

#[test]
fn with_barge_in_disabled_speech_over_the_bot_becomes_the_next_turn() {
    let mut d = Driver::new(TurnConfig {
        barge_in: BargeInConfig {
            enabled: false,
            min_speech: ms(0),
            ..BargeInConfig::default()
        },
        ..TurnConfig::default()
    });
    d.user_turn(100, 1000, "hi");
    d.m.handle_response_audio_started(d.at(1700), Epoch(1));
    assert!(d.speech(3000, 3064).is_empty());
    d.m.handle_response_finished(d.at(3500), Epoch(1));
    let out = d.drain();
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
    assert_eq!(
        marked(&out, TurnEvent::UserSpeechStart),
        Some((Epoch(2), d.at(3000)))
    );
}

#[test]
fn the_greeting_is_spoken_first_and_speech_over_it_interrupts() {
    let mut d = Driver::new(TurnConfig {
        greeting: Some("Hello, how can I help?".into()),
        ..TurnConfig::default()
    });
    assert_eq!(
        d.log,
        vec![Action::Speak {
            epoch: Epoch(0),
            text: "Hello, how can I help?".into(),
            kind: SpeakKind::Greeting
        }]
    );
    let out = d.speech(200, 264);
    assert!(matches!(
        out.as_slice(),
        [Action::Interrupt {
            old: Epoch(0),
            new: Epoch(1),
            ..
        }]
    ));
}

#[test]
fn say_speaks_at_once_when_idle_and_waits_while_busy() {
    let mut d = Driver::new(TurnConfig::default());
    assert!(d.m.say("one".into()));
    assert!(matches!(
        d.drain().as_slice(),
        [Action::Speak {
            kind: SpeakKind::Say,
            ..
        }]
    ));
    assert!(d.m.say("two".into()));
    assert!(d.drain().is_empty(), "the bot is busy: queued");
    d.m.handle_response_finished(d.at(500), Epoch(0));
    let out = d.drain();
    assert!(matches!(out.as_slice(), [Action::Speak { text, .. }] if text == "two"));
    for _ in 0..SAY_QUEUE_CAPACITY {
        assert!(d.m.say("x".into()));
    }
    assert!(!d.m.say("overflow".into()), "the queue is bounded");
}

#[test]
fn an_interrupting_say_cuts_the_bot_and_speaks_in_a_new_epoch() {
    let mut d = Driver::new(TurnConfig::default());
    d.user_turn(0, 1000, "hello");
    d.m.handle_response_audio_started(d.at(1500), Epoch(1));
    d.drain();
    assert!(d.m.say("queued".into()), "queued behind the answer");
    assert!(d.m.handle_say(d.at(1600), "now".into(), true));
    let out = d.drain();
    assert!(
        matches!(
            out.as_slice(),
            [
                Action::CutResponse { cut: Epoch(1), new: Epoch(2) },
                Action::Speak { epoch: Epoch(2), text, kind: SpeakKind::Say },
            ] if text == "now"
        ),
        "{out:?}"
    );
    // The cut answer's end is stale; the say's end frees the bot, and the
    // say queued before the cut was dropped.
    d.m.handle_response_finished(d.at(1700), Epoch(1));
    assert_eq!(d.m.state(), TurnState::BotThinking);
    d.m.handle_response_finished(d.at(2500), Epoch(2));
    assert!(d.drain().is_empty(), "{:?}", d.m.state());
    assert_eq!(d.m.state(), TurnState::Listening);
    assert_eq!(d.m.counters().barge_ins, 0, "a cut is not a barge-in");
}

#[test]
fn a_say_never_talks_over_the_caller() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(0, 64);
    assert!(d.m.handle_say(d.at(100), "later".into(), true));
    assert!(d.drain().is_empty(), "the caller holds the floor");
    d.stop(1000, 1100);
    d.verdict(1125, COMPLETE);
    d.final_(1250, "");
    let out = d.drain();
    // An empty turn gives the floor back: the waiting say is spoken.
    let spoken = d
        .log
        .iter()
        .chain(out.iter())
        .any(|a| matches!(a, Action::Speak { text, .. } if text == "later"));
    assert!(spoken, "{:?}", d.log);
}

#[test]
fn the_idle_guard_prompts_then_ends_the_call() {
    let mut d = Driver::new(TurnConfig {
        idle: Some(IdleConfig {
            prompt_after: ms(5000),
            prompt: "Are you still there?".into(),
            end_after: ms(4000),
        }),
        ..TurnConfig::default()
    });
    let out = d.advance_to(5000);
    assert!(matches!(
        out.as_slice(),
        [Action::Speak {
            kind: SpeakKind::IdlePrompt,
            ..
        }]
    ));
    d.m.handle_response_finished(d.at(6000), Epoch(0));
    assert_eq!(d.m.poll_timeout(), Some(d.at(10_000)));
    let out = d.advance_to(10_000);
    assert_eq!(out, vec![Action::EndCall(EndReason::Idle)]);
    assert_eq!(d.m.state(), TurnState::Ended);
}

#[test]
fn caller_speech_resets_the_idle_guard() {
    let mut d = Driver::new(TurnConfig {
        idle: Some(IdleConfig {
            prompt_after: ms(5000),
            prompt: "Hello?".into(),
            end_after: ms(4000),
        }),
        ..TurnConfig::default()
    });
    d.speech(4000, 4064);
    assert!(d.advance_to(9000).is_empty());
    assert_eq!(d.m.state(), TurnState::UserSpeaking);
}

#[test]
fn the_maximum_call_duration_ends_the_call_in_any_state() {
    let mut d = Driver::new(TurnConfig {
        max_call_duration: Some(ms(60_000)),
        ..TurnConfig::default()
    });
    d.speech(59_000, 59_064);
    let out = d.advance_to(60_000);
    assert_eq!(out, vec![Action::EndCall(EndReason::MaxDuration)]);
    assert_eq!(d.m.state(), TurnState::Ended);
    assert_eq!(d.m.poll_timeout(), None);
}

#[test]
fn a_response_event_of_an_older_epoch_is_ignored() {
    let mut d = Driver::new(TurnConfig::default());
    d.user_turn(100, 1000, "a");
    d.m.handle_response_finished(d.at(1500), Epoch(0));
    assert_eq!(d.m.state(), TurnState::BotThinking);
    d.m.handle_response_audio_started(d.at(1600), Epoch(1));
    d.m.handle_response_finished(d.at(2600), Epoch(1));
    assert_eq!(d.m.state(), TurnState::Listening);
}

#[test]
fn after_a_hangup_nothing_happens() {
    let mut d = Driver::new(TurnConfig::default());
    d.m.handle_hangup(d.at(10));
    assert!(d.speech(100, 164).is_empty());
    assert!(!d.m.say("hi".into()));
    assert_eq!(d.m.poll_timeout(), None);
}

/// Random sequences of inputs (seeded, reproducible): the machine never panics,
/// never reports the same deadline again after handling it, and starts at most
/// one response per epoch.
#[test]
fn random_input_sequences_keep_every_invariant() {
    let configs = [
        TurnConfig::default(),
        fixed(300),
        with_words(),
        TurnConfig {
            barge_in: BargeInConfig {
                enabled: true,
                min_speech: ms(200),
                ..BargeInConfig::default()
            },
            idle: Some(IdleConfig {
                prompt_after: ms(3000),
                prompt: "Hello?".into(),
                end_after: ms(3000),
            }),
            max_call_duration: Some(ms(60_000)),
            greeting: Some("Hi".into()),
            ..TurnConfig::default()
        },
    ];
    for seed in 0..300u64 {
        let mut rng = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut d = Driver::new(configs[(seed % 4) as usize].clone());
        let mut t = 0;
        for _ in 0..60 {
            t += 1 + next(400);
            d.advance_to(t);
            let now = d.at(t);
            match next(9) {
                0 => d.m.handle_speech_start(now, now - ms(next(100))),
                1 => d.m.handle_speech_end(now, now - ms(next(100))),
                2 => d.m.handle_final(
                    now,
                    ["words", "yes.", "yeah"][next(3) as usize],
                    next(2) == 0,
                ),
                3 => {
                    d.m.handle_interim(now, ["wor", "mm-hmm", "stop"][next(3) as usize])
                }
                4 => {
                    if let Some(stop) = d.last_stop() {
                        let v = [COMPLETE, INCOMPLETE, Verdict::Failed][next(3) as usize];
                        d.m.handle_verdict(now, stop, v);
                    }
                }
                5 => d.m.handle_response_audio_started(now, d.m.epoch()),
                6 => d.m.handle_response_finished(now, d.m.epoch()),
                7 => {
                    d.m.say("hello".into());
                }
                _ => {}
            }
            d.drain();
        }
        let mut per_epoch = std::collections::HashMap::new();
        for (epoch, _) in responses(&d.log) {
            *per_epoch.entry(epoch).or_insert(0) += 1;
        }
        assert!(
            per_epoch.values().all(|&n| n == 1),
            "seed {seed}: {per_epoch:?}"
        );
    }
}

#[test]
fn a_false_interruption_resumes_the_interrupted_answer_at_its_empty_final() {
    let mut config = with_words();
    config.resume_false_interruptions = true;
    let mut d = bot_speaking(config);
    d.speech(3000, 3064);
    assert_eq!(interrupts(&d.advance_to(3800)), 1, "no word for 800 ms");
    d.stop(3900, 4000);
    let out = d.final_(4150, "");
    assert!(
        out.contains(&Action::ResumeResponse {
            interrupted: Epoch(1),
            epoch: Epoch(2),
        }),
        "{out:?}"
    );
    assert!(responses(&out).is_empty(), "the model is not asked again");
    assert_eq!(d.m.counters().false_interruptions_resumed, 1);
    assert_eq!(d.m.state(), TurnState::BotThinking);
    // Without the setting the same turn is only an empty turn.
    let mut d = bot_speaking(with_words());
    d.speech(3000, 3064);
    d.advance_to(3800);
    d.stop(3900, 4000);
    d.final_(4150, "");
    let out = d.advance_to(10_000);
    assert!(
        !out.iter()
            .any(|a| matches!(a, Action::ResumeResponse { .. }))
    );
    assert_eq!(d.m.counters().empty_turns, 1);
}

// ----- speculative start -----

fn speculating(on_partial: bool, stable_ms: u64) -> TurnConfig {
    TurnConfig {
        speculation: Some(crate::turn::SpeculationConfig {
            on_partial,
            partial_stable: ms(stable_ms),
        }),
        ..TurnConfig::default()
    }
}

fn speculations(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Speculate { text, .. } => Some(text.clone()),
            Action::WithdrawSpeculation { .. } => Some("<withdrawn>".into()),
            _ => None,
        })
        .collect()
}

#[test]
fn speculation_offers_the_partial_at_the_stop_then_the_turn_ends_with_the_same_words() {
    let mut d = Driver::new(speculating(true, 0));
    d.speech(0, 64);
    d.m.handle_interim(d.at(500), "book a table");
    let at_stop = d.stop(900, 1000);
    assert_eq!(speculations(&at_stop), ["book a table"]);
    let epoch = d.m.epoch();
    assert!(at_stop.contains(&Action::Speculate {
        epoch,
        text: "book a table".into()
    }));
    let at_final = d.final_(1150, "Book a table.");
    assert!(
        speculations(&at_final).is_empty(),
        "same words: not offered again"
    );
    let end = d.verdict(1200, COMPLETE);
    assert_eq!(responses(&end), [(epoch, "Book a table.".to_owned())]);
}

#[test]
fn speculation_is_withdrawn_when_the_caller_goes_on() {
    let mut d = Driver::new(speculating(true, 0));
    d.speech(0, 64);
    d.m.handle_interim(d.at(500), "book a table");
    d.stop(900, 1000);
    let resumed = d.speech(1100, 1164);
    assert_eq!(speculations(&resumed), ["<withdrawn>"]);
    d.m.handle_interim(d.at(1500), "book a table for two");
    let again = d.stop(1900, 2000);
    assert_eq!(
        speculations(&again),
        ["book a table for two"],
        "offered anew at the next stop"
    );
}

#[test]
fn speculation_off_offers_nothing() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(0, 64);
    d.m.handle_interim(d.at(500), "book a table");
    let mut out = d.stop(900, 1000);
    out.extend(d.final_(1150, "book a table"));
    out.extend(d.speech(1300, 1364));
    assert!(speculations(&out).is_empty());
}

#[test]
fn speculation_on_the_final_only_waits_for_the_final() {
    let mut d = Driver::new(speculating(false, 0));
    d.speech(0, 64);
    d.m.handle_interim(d.at(500), "book a");
    assert!(speculations(&d.stop(900, 1000)).is_empty());
    assert_eq!(
        speculations(&d.final_(1150, "book a table")),
        ["book a table"]
    );
}

#[test]
fn a_gated_partial_is_offered_when_it_held_still() {
    let mut d = Driver::new(speculating(true, 200));
    d.speech(0, 64);
    d.m.handle_interim(d.at(500), "book a");
    assert!(speculations(&d.stop(900, 1000)).is_empty());
    d.advance_to(1100);
    d.m.handle_interim(d.at(1100), "book a table");
    assert!(
        speculations(&d.drain()).is_empty(),
        "changed: the wait restarts"
    );
    assert!(speculations(&d.advance_to(1299)).is_empty());
    assert_eq!(speculations(&d.advance_to(1300)), ["book a table"]);
}

fn responds(actions: &[Action]) -> Vec<Epoch> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Respond { epoch } => Some(*epoch),
            _ => None,
        })
        .collect()
}

#[test]
fn a_respond_while_idle_starts_an_answer_at_once_and_one_while_the_bot_speaks_waits() {
    let mut d = Driver::new(TurnConfig::default());
    assert!(d.m.handle_respond(d.at(50)));
    assert_eq!(responds(&d.drain()), [Epoch(0)]);
    assert_eq!(d.m.state(), TurnState::BotThinking);
    d.m.handle_response_finished(d.at(900), Epoch(0));
    d.drain();
    let mut d = bot_speaking(TurnConfig::default());
    assert!(d.m.handle_respond(d.at(1800)));
    assert!(
        d.m.handle_respond(d.at(1810)),
        "a second is the same request"
    );
    assert!(responds(&d.drain()).is_empty(), "the bot is speaking");
    d.m.handle_response_finished(d.at(2500), Epoch(1));
    assert_eq!(responds(&d.drain()), [Epoch(1)], "once, when it is free");
    assert_eq!(d.m.counters().responses, 2);
}

#[test]
fn a_respond_while_the_caller_speaks_is_spent_by_the_answer_to_the_turn() {
    let mut d = Driver::new(TurnConfig::default());
    d.speech(100, 164);
    assert!(d.m.handle_respond(d.at(300)));
    let out = d.user_turn(100, 1000, "hi");
    assert!(responds(&out).is_empty(), "{out:?}");
    assert_eq!(responses(&out).len(), 1);
    d.m.handle_response_finished(d.at(2500), Epoch(1));
    assert!(
        responds(&d.drain()).is_empty(),
        "spent by the turn's answer"
    );
    // A turn without words leaves it to run.
    d.speech(3000, 3064);
    assert!(d.m.handle_respond(d.at(3100)));
    d.stop(3400, 3500);
    d.verdict(3525, COMPLETE);
    let out = d.final_(3650, "");
    assert_eq!(responds(&out), [Epoch(2)], "{out:?}");
}

#[test]
fn a_barge_in_cancels_a_respond_and_drops_a_waiting_one_and_an_ended_call_refuses_it() {
    let mut d = Driver::new(TurnConfig::default());
    assert!(d.m.handle_respond(d.at(50)));
    d.m.handle_response_audio_started(d.at(600), Epoch(0));
    assert!(d.m.handle_respond(d.at(700)), "waits for the answer");
    let out = d.speech(1000, 1064);
    let out = [out, d.advance_to(3000)].concat();
    assert_eq!(interrupts(&out), 1, "{out:?}");
    assert_eq!(d.m.counters().barge_ins, 1);
    assert!(d.m.says.is_empty(), "the waiting respond is dropped");
    d.m.handle_hangup(d.at(3100));
    assert!(!d.m.handle_respond(d.at(3200)));
}
