//! Turn-taking settings: the end-of-turn policy, the shorter wait after an
//! "incomplete" verdict, the interruption policy, idle guard and call limits.

use std::time::Duration;

use brisvox_text::Language;

use super::speculation::SpeculationConfig;

/// How the engine decides that the caller's turn is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnPolicy {
    /// The end-of-turn model decides: a "complete" verdict (plus the STT final when
    /// `require_final`) ends the turn at once. Any other outcome (an "incomplete"
    /// verdict, a failed analysis, or no verdict yet) waits for more speech, or
    /// ends the turn at its fallback: `incomplete_timeout` after the VAD stop, or
    /// sooner when [`TurnConfig::incomplete_shortcut`] applies.
    Adaptive {
        /// How long the turn may stay open after the stop without a "complete" verdict.
        incomplete_timeout: Duration,
    },
    /// The turn ends a fixed silence after the caller's last speech (the
    /// backdated VAD stop), no model involved.
    FixedSilence {
        /// Silence counted from the end of the last speech.
        silence: Duration,
    },
}

impl Default for TurnPolicy {
    fn default() -> Self {
        TurnPolicy::Adaptive {
            incomplete_timeout: Duration::from_millis(3000),
        }
    }
}

/// When talking over the bot interrupts it (rules: [`super::interruption`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BargeInConfig {
    /// Whether the caller can interrupt at all.
    pub enabled: bool,
    /// How long speech must last (from its start) before it interrupts; 0 means
    /// the VAD's own start confirmation is enough.
    pub min_speech: Duration,
    /// Recognised words, backchannels not counted, the speech must hold before
    /// it interrupts; 0 with an empty `backchannels` list leaves it to the VAD.
    pub min_words: u32,
    /// Words and phrases that never interrupt on their own ("mm-hmm", "yeah");
    /// compared lower case, without punctuation, hyphenated forms split.
    pub backchannels: Vec<String>,
    /// With a word rule, speech in which the STT recognised no word at all
    /// interrupts once it has lasted this long (known when the VAD has not
    /// stopped it by this long plus its hangover).
    pub max_wordless_speech: Duration,
    /// With a word rule, how long after its VAD stop a speech may still
    /// interrupt when its words arrive late.
    pub word_grace: Duration,
}

impl BargeInConfig {
    /// Whether the transcripts take part in the decision.
    pub fn has_word_rule(&self) -> bool {
        self.min_words > 0 || !self.backchannels.is_empty()
    }
}

impl Default for BargeInConfig {
    /// Enabled, the VAD alone decides, at once (no word rule).
    fn default() -> Self {
        BargeInConfig {
            enabled: true,
            min_speech: Duration::ZERO,
            min_words: 0,
            backchannels: Vec::new(),
            max_wordless_speech: Duration::from_millis(DEFAULT_MAX_WORDLESS_SPEECH_MS),
            word_grace: Duration::from_millis(DEFAULT_WORD_GRACE_MS),
        }
    }
}

/// Default [`BargeInConfig::max_wordless_speech`], ms: longer than a
/// backchannel, so that one whose word a streaming STT gives only at its end
/// does not cut the bot. A backchannel is one or two short tokens ("mm-hmm",
/// "uh-huh", "oh okay", "mm-hmm yeah"): at 160 words a minute (espeak-ng
/// en-us, the fixtures' voice) they last 420 to 820 ms of sound, and the VAD
/// adds its 30 ms pad and up to a 32 ms window; 1 s covers them with room for
/// slower speech, while real speech over the bot is cut at its first word
/// that is not a backchannel (the wordless rule is only for an STT that finds
/// none).
pub const DEFAULT_MAX_WORDLESS_SPEECH_MS: u64 = 1000;
/// Default [`BargeInConfig::word_grace`], ms.
pub const DEFAULT_WORD_GRACE_MS: u64 = 400;

/// A shorter fallback for a paused turn without a "complete" verdict when the
/// STT final says the caller has finished (rules: [`super::words::TextRules`]).
/// Counted from the end of speech, so each is also the silence it needs.
/// A final that ends in a conjunction, article, preposition or filler never
/// shortens the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompleteShortcut {
    /// The language of the word lists.
    pub language: Language,
    /// Wait after a complete short answer ("yes", "no thanks", a number).
    pub short_answer: Duration,
    /// Most words of a short answer.
    pub short_answer_max_words: usize,
    /// Longest turn (first speech to last) that can be a short answer.
    pub short_answer_max_turn: Duration,
    /// Wait after a final ending in `.`, `!` or `?`; zero turns this rule off.
    pub terminal: Duration,
    /// While the turn waits out one of these shorter waits (every final in,
    /// the verdict not "complete"), start the answer on the final: the LLM
    /// stage runs it with its output held, commits it when the turn ends with
    /// the same words and drops it when the caller goes on (the speculative
    /// run of [`super::speculation`], counted with it). The answer is then
    /// ready when the wait ends instead of starting there; it costs one LLM
    /// request each time the caller goes on during such a wait.
    pub prefetch: bool,
}

impl IncompleteShortcut {
    /// The defaults for `language`: 300 ms after a short answer of up to three
    /// words in a turn of up to 2.5 s, 700 ms after terminal punctuation, the
    /// answer prefetched during either wait.
    pub fn new(language: Language) -> Self {
        IncompleteShortcut {
            language,
            short_answer: Duration::from_millis(300),
            short_answer_max_words: 3,
            short_answer_max_turn: Duration::from_millis(2500),
            terminal: Duration::from_millis(700),
            prefetch: true,
        }
    }
}

/// What to do when the caller stays silent while the bot is idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleConfig {
    /// Silence (bot idle, caller silent) before the prompt is spoken.
    pub prompt_after: Duration,
    /// The prompt.
    pub prompt: String,
    /// Further silence after the prompt before the call is ended.
    pub end_after: Duration,
}

/// What to say when the caller clearly spoke but nothing was recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotHeardConfig {
    /// The reply ("Sorry, I didn't catch that.").
    pub reply: String,
    /// The shortest speech (VAD start to stop) that counts as clearly spoken.
    pub min_speech: Duration,
}

/// Every turn-taking setting of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnConfig {
    /// The end-of-turn policy.
    pub policy: TurnPolicy,
    /// Whether the turn waits for the STT final of the last Finalize.
    pub require_final: bool,
    /// How long to wait for that final before ending the turn with what was heard.
    pub final_timeout: Duration,
    /// Shorter waits after an "incomplete" (or failed, or missing) verdict when
    /// the STT final says the turn is complete; `None` always waits the full
    /// fallback.
    pub incomplete_shortcut: Option<IncompleteShortcut>,
    /// Barge-in.
    pub barge_in: BargeInConfig,
    /// The idle guard; `None` disables it.
    pub idle: Option<IdleConfig>,
    /// The longest a call may last; `None` for no limit.
    pub max_call_duration: Option<Duration>,
    /// Spoken when the call starts, before the caller says anything.
    pub greeting: Option<String>,
    /// A false interruption (speech that cut the bot, then gave no words by
    /// its STT final) resumes the interrupted answer from the first word the
    /// caller did not hear, instead of leaving the bot silent.
    pub resume_false_interruptions: bool,
    /// Spoken when a turn of clear speech produced no text; `None` stays silent.
    pub not_heard: Option<NotHeardConfig>,
    /// Speculative LLM start ([`super::speculation`]); `None` (the default)
    /// starts the LLM only when the turn ends.
    pub speculation: Option<SpeculationConfig>,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            policy: TurnPolicy::default(),
            require_final: true,
            final_timeout: Duration::from_millis(1500),
            incomplete_shortcut: None,
            barge_in: BargeInConfig::default(),
            idle: None,
            max_call_duration: None,
            greeting: None,
            resume_false_interruptions: false,
            not_heard: None,
            speculation: None,
        }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurnConfigError {
    /// A duration that must be positive is zero.
    #[error("{field} must be greater than zero")]
    ZeroDuration {
        /// The setting's name.
        field: &'static str,
    },
    /// An empty idle prompt.
    #[error("idle.prompt must not be empty")]
    EmptyIdlePrompt,
    /// An empty not-heard reply.
    #[error("not_heard.reply must not be empty")]
    EmptyNotHeardReply,
}

impl TurnConfig {
    /// Checks the settings, naming the first one that cannot work.
    pub fn validate(&self) -> Result<(), TurnConfigError> {
        let positive = |d: Duration, field| {
            if d.is_zero() {
                Err(TurnConfigError::ZeroDuration { field })
            } else {
                Ok(())
            }
        };
        match self.policy {
            TurnPolicy::Adaptive { incomplete_timeout } => {
                positive(incomplete_timeout, "policy.incomplete_timeout")?
            }
            TurnPolicy::FixedSilence { silence } => positive(silence, "policy.silence")?,
        }
        positive(self.final_timeout, "final_timeout")?;
        if self.barge_in.has_word_rule() {
            positive(
                self.barge_in.max_wordless_speech,
                "barge_in.max_wordless_speech",
            )?;
        }
        if let Some(s) = &self.incomplete_shortcut {
            positive(s.short_answer, "incomplete_shortcut.short_answer")?;
        }
        if let Some(idle) = &self.idle {
            positive(idle.prompt_after, "idle.prompt_after")?;
            positive(idle.end_after, "idle.end_after")?;
            if idle.prompt.trim().is_empty() {
                return Err(TurnConfigError::EmptyIdlePrompt);
            }
        }
        if self
            .not_heard
            .as_ref()
            .is_some_and(|n| n.reply.trim().is_empty())
        {
            return Err(TurnConfigError::EmptyNotHeardReply);
        }
        if let Some(max) = self.max_call_duration {
            positive(max, "max_call_duration")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(TurnConfig::default().validate(), Ok(()));
    }

    #[test]
    fn a_zero_duration_is_named_in_the_error() {
        let cfg = TurnConfig {
            final_timeout: Duration::ZERO,
            ..TurnConfig::default()
        };
        assert_eq!(
            cfg.validate(),
            Err(TurnConfigError::ZeroDuration {
                field: "final_timeout"
            })
        );
        let cfg = TurnConfig {
            idle: Some(IdleConfig {
                prompt_after: Duration::from_secs(5),
                prompt: " ".into(),
                end_after: Duration::from_secs(5),
            }),
            ..TurnConfig::default()
        };
        assert_eq!(cfg.validate(), Err(TurnConfigError::EmptyIdlePrompt));
    }
}
