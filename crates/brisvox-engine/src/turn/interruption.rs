//! The interruption policy: when caller speech over the bot cuts the bot.
//!
//! A sans-IO part of the [`TurnMachine`](super::TurnMachine). Speech that starts
//! while the bot has the floor becomes a [`PendingBargeIn`]; the machine feeds it
//! the transcripts heard since and the end of that speech, and asks it when (if
//! ever) it interrupts. Rules, in order:
//!
//! 1. Barge-in disabled: never (the speech is remembered so that it becomes the
//!    caller's turn once the bot has finished).
//! 2. Speech shorter than [`BargeInConfig::min_speech`] never interrupts.
//! 3. Without a word rule (no backchannel list and `min_words` 0) speech that has
//!    lasted `min_speech` interrupts: the VAD alone decides.
//! 4. With a word rule, the transcripts decide: speech interrupts once it holds at
//!    least `max(min_words, 1)` words that are not backchannels. Backchannels
//!    ("mm-hmm", "yeah", "tamam") never interrupt on their own, however long.
//! 5. Speech with no recognised word at all interrupts once it has lasted
//!    [`BargeInConfig::max_wordless_speech`] (a real barge-in over an STT that
//!    lags or hears nothing must still stop the bot). The machine learns that
//!    speech has ended only at the VAD stop, the VAD's `hangover` after its last
//!    speech window, so the rule waits for `max_wordless_speech + hangover`
//!    without a stop: only then has the speech itself lasted
//!    `max_wordless_speech`. (Counting from the start alone cut the bot for a
//!    backchannel shorter than the limit whose stop came after it, and whose word
//!    a streaming STT gives only at its end.)
//! 6. Words often arrive after the VAD stop: a speech that ended after
//!    `min_speech` stays pending for [`BargeInConfig::word_grace`] and still
//!    interrupts if its words qualify by then; otherwise it is ignored and counted
//!    (a backchannel, or speech too short or without words).

use std::time::{Duration, Instant};

use super::config::BargeInConfig;
use super::words::{WordSet, words};

/// Caller speech heard while the bot has the floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingBargeIn {
    /// When the speech started (the interrupting turn's start).
    pub(crate) speech_start: Instant,
    /// When the speech ended; `None` while the caller still speaks.
    pub(crate) speech_end: Option<Instant>,
    /// When the VAD stop of that speech was decided (starts the word grace).
    stopped_at: Option<Instant>,
    /// Finals heard since the speech started.
    pub(crate) finals: String,
    /// The latest interim.
    interim: String,
}

/// What a pending barge-in becomes when its speech is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// Only backchannel words were heard.
    Backchannel,
    /// Too short, or no (or too few) words.
    Short,
}

impl PendingBargeIn {
    /// Speech that started at `speech_start`.
    pub(crate) fn new(speech_start: Instant) -> Self {
        PendingBargeIn {
            speech_start,
            speech_end: None,
            stopped_at: None,
            finals: String::new(),
            interim: String::new(),
        }
    }

    /// The caller spoke again before this speech was decided.
    pub(crate) fn resumed(&mut self) {
        self.speech_end = None;
        self.stopped_at = None;
    }

    /// The VAD stop of this speech, decided at `now`.
    pub(crate) fn stopped(&mut self, now: Instant, speech_end: Instant) {
        self.speech_end = Some(speech_end);
        self.stopped_at = Some(now);
    }

    /// An interim transcript (replaces the previous one).
    pub(crate) fn interim(&mut self, text: &str) {
        self.interim.clear();
        self.interim.push_str(text.trim());
    }

    /// A final transcript.
    pub(crate) fn final_(&mut self, text: &str) {
        let text = text.trim();
        if !text.is_empty() {
            if !self.finals.is_empty() {
                self.finals.push(' ');
            }
            self.finals.push_str(text);
        }
        self.interim.clear();
    }

    fn word_counts(&self, backchannels: &WordSet) -> (usize, usize) {
        let all = words(&self.finals).chain(words(&self.interim));
        all.fold((0, 0), |(total, content), w| {
            (total + 1, content + usize::from(!backchannels.contains(&w)))
        })
    }

    /// When this speech interrupts the bot, as far as is known now: `None` for
    /// not (yet). May be in the past: then it interrupts at once. `hangover`:
    /// how long after the end of speech the VAD confirms its stop (rule 5).
    pub(crate) fn interrupts_at(
        &self,
        config: &BargeInConfig,
        backchannels: &WordSet,
        hangover: Duration,
    ) -> Option<Instant> {
        if !config.enabled {
            return None;
        }
        let min_at = self.speech_start + config.min_speech;
        let ended_short = self.speech_end.is_some_and(|end| end < min_at);
        if ended_short {
            return None;
        }
        if !config.has_word_rule() {
            return Some(min_at);
        }
        let (total, content) = self.word_counts(backchannels);
        let needed = config.min_words.max(1) as usize;
        if content >= needed {
            return Some(min_at);
        }
        if total == 0 && self.speech_end.is_none() {
            let wordless_at = self.speech_start + config.max_wordless_speech + hangover;
            return Some(min_at.max(wordless_at));
        }
        None
    }

    /// When a stopped speech is given up if no qualifying word has come.
    pub(crate) fn grace_ends_at(&self, config: &BargeInConfig) -> Option<Instant> {
        self.stopped_at.map(|at| at + config.word_grace)
    }

    /// Whether the speech is over and can no longer interrupt at `now`; if so, how
    /// it is counted.
    pub(crate) fn ignored(
        &self,
        now: Instant,
        config: &BargeInConfig,
        backchannels: &WordSet,
    ) -> Option<Ignored> {
        let end = self.speech_end?;
        let short = end < self.speech_start + config.min_speech;
        let grace_over = self.grace_ends_at(config).is_some_and(|g| g <= now);
        if !(short || !config.has_word_rule() || grace_over) {
            return None;
        }
        let (total, content) = self.word_counts(backchannels);
        if total > 0 && content == 0 {
            Some(Ignored::Backchannel)
        } else {
            Some(Ignored::Short)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn config(backchannels: &[&str], min_words: u32) -> (BargeInConfig, WordSet) {
        let c = BargeInConfig {
            enabled: true,
            min_speech: ms(300),
            min_words,
            backchannels: backchannels.iter().map(|s| (*s).to_owned()).collect(),
            max_wordless_speech: ms(800),
            word_grace: ms(400),
        };
        let set = WordSet::new(&c.backchannels);
        (c, set)
    }

    #[test]
    fn without_a_word_rule_the_vad_alone_decides_at_min_speech() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let (c, set) = config(&[], 0);
        let mut p = PendingBargeIn::new(t0);
        assert_eq!(
            p.interrupts_at(&c, &set, Duration::ZERO),
            Some(t0 + ms(300))
        );
        p.stopped(t0 + ms(350), t0 + ms(200));
        assert_eq!(p.interrupts_at(&c, &set, Duration::ZERO), None);
        assert_eq!(p.ignored(t0 + ms(350), &c, &set), Some(Ignored::Short));
    }

    #[test]
    fn backchannels_never_interrupt_but_content_words_do() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let (c, set) = config(&["yeah", "mm-hmm"], 0);
        let mut p = PendingBargeIn::new(t0);
        p.interim("mm-hmm yeah");
        assert_eq!(p.interrupts_at(&c, &set, Duration::ZERO), None);
        p.interim("yeah wait");
        assert_eq!(
            p.interrupts_at(&c, &set, Duration::ZERO),
            Some(t0 + ms(300))
        );
    }

    #[test]
    fn wordless_speech_interrupts_only_when_long() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let (c, set) = config(&["yeah"], 0);
        let mut p = PendingBargeIn::new(t0);
        assert_eq!(
            p.interrupts_at(&c, &set, Duration::ZERO),
            Some(t0 + ms(800))
        );
        p.stopped(t0 + ms(600), t0 + ms(500));
        assert_eq!(p.interrupts_at(&c, &set, Duration::ZERO), None);
        assert_eq!(p.ignored(t0 + ms(700), &c, &set), None, "in the word grace");
        p.final_("stop");
        assert_eq!(
            p.interrupts_at(&c, &set, Duration::ZERO),
            Some(t0 + ms(300)),
            "a word after the stop still interrupts (at once: the time is past)"
        );
    }

    #[test]
    fn wordless_speech_is_timed_by_its_length_not_by_the_vads_late_stop() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let (c, set) = config(&["mm-hmm"], 0);
        let hangover = ms(128);
        let mut p = PendingBargeIn::new(t0);
        assert_eq!(
            p.interrupts_at(&c, &set, hangover),
            Some(t0 + ms(800 + 128)),
            "without a stop by then the speech has lasted 800 ms"
        );
        // A 750 ms "mm-hmm": its stop is decided at 878 ms, inside the limit.
        p.stopped(t0 + ms(878), t0 + ms(750));
        assert_eq!(p.interrupts_at(&c, &set, hangover), None);
        p.final_("mm-hmm");
        assert_eq!(
            p.ignored(t0 + ms(1300), &c, &set),
            Some(Ignored::Backchannel)
        );
    }

    #[test]
    fn min_words_counts_only_words_that_are_not_backchannels() {
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let (c, set) = config(&["okay"], 2);
        let mut p = PendingBargeIn::new(t0);
        p.interim("okay stop");
        assert_eq!(p.interrupts_at(&c, &set, Duration::ZERO), None);
        p.interim("okay stop now");
        assert_eq!(
            p.interrupts_at(&c, &set, Duration::ZERO),
            Some(t0 + ms(300))
        );
    }
}
