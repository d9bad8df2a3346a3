//! The `[turn]` (with `[turn.shortcut]` and `[turn.early_analysis]`), `[vad]`,
//! `[interruption]` and `[limits]` sections.

use serde::{Deserialize, Serialize};

use brisvox_engine::turn::config::DEFAULT_MAX_WORDLESS_SPEECH_MS;

use super::AgentError;

/// How the end of the caller's turn is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnPolicy {
    /// The turn model's verdict plus the STT final; an "incomplete" verdict
    /// waits up to `incomplete_timeout_ms`.
    #[default]
    Adaptive,
    /// A fixed silence of `silence_ms` ends the turn.
    Fixed,
}

/// What gives the end-of-turn verdict at a VAD stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnAnalyzer {
    /// Smart Turn v3.2 on the call's last 8 s of audio (needs the model files).
    #[default]
    SmartTurn,
    /// Every stop is "complete" at once: no model (benchmarks of the framework
    /// alone, machines without the model files).
    AlwaysComplete,
}

/// Which voice activity detector runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VadDetector {
    /// Silero VAD v6, batched across calls (needs the model files).
    #[default]
    Silero,
    /// Loudness only: a 32 ms window at or above `energy_dbfs` is speech. No
    /// model; for benchmarks of the framework alone and clean audio.
    Energy,
}

/// Adaptive policy: default `incomplete_timeout_ms`.
pub const DEFAULT_INCOMPLETE_TIMEOUT_MS: u32 = 3000;

/// Fixed policy: default `silence_ms`.
pub const DEFAULT_SILENCE_MS: u32 = 700;

/// `[turn]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TurnSettings {
    /// The policy.
    pub policy: TurnPolicy,
    /// What gives the verdict under the adaptive policy.
    pub analyzer: TurnAnalyzer,
    /// Adaptive: the longest wait after an "incomplete" verdict, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_timeout_ms: Option<u32>,
    /// Fixed: the silence that ends a turn, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silence_ms: Option<u32>,
    /// Wait for the STT final before ending the turn.
    pub require_final: bool,
    /// The longest wait for the STT final after the turn end, in ms.
    pub final_timeout_ms: u32,
    /// How long a stop's Smart Turn analysis may wait for the stop's STT
    /// final before it runs, in ms (0: at the stop).
    pub analysis_hold_ms: u32,
    /// Said when the caller clearly spoke but nothing was recognised (an
    /// empty transcript, an STT error, a late final); empty: say nothing.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub not_heard_reply: String,
    /// The shortest speech (VAD start to stop) that counts as clearly
    /// spoken for `not_heard_reply`, in ms.
    pub not_heard_min_speech_ms: u32,
    /// `[turn.shortcut]`: shorter waits when the STT final says the turn is complete.
    pub shortcut: ShortcutSettings,
    /// `[turn.early_analysis]`: Smart Turn at the VAD's first fall.
    pub early_analysis: EarlyAnalysisSettings,
    /// `[turn.speculation]`: the LLM started before the turn ends.
    pub speculation: SpeculationSettings,
}

/// What the local demo says when it heard speech but no words.
pub const LOCAL_NOT_HEARD_REPLY: &str = "Sorry, I didn't catch that.";

impl Default for TurnSettings {
    fn default() -> Self {
        Self {
            policy: TurnPolicy::Adaptive,
            analyzer: TurnAnalyzer::SmartTurn,
            // Filled in by the check for the policy in force.
            incomplete_timeout_ms: None,
            silence_ms: None,
            require_final: true,
            final_timeout_ms: 1000,
            analysis_hold_ms: 0,
            not_heard_reply: String::new(),
            not_heard_min_speech_ms: 500,
            shortcut: ShortcutSettings::default(),
            early_analysis: EarlyAnalysisSettings::default(),
            speculation: SpeculationSettings::default(),
        }
    }
}

/// `[turn.shortcut]` (adaptive policy): when the end-of-turn model says
/// "incomplete" (or fails), the STT final's text may still end the turn before
/// `incomplete_timeout_ms`: after a complete short answer or terminal
/// punctuation, never after a word that goes on ("and", "the", "um").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShortcutSettings {
    /// Whether the text may shorten the wait.
    pub enabled: bool,
    /// Wait after the end of speech when the final is a complete short answer, ms.
    pub short_answer_ms: u32,
    /// Most words of a short answer.
    pub short_answer_max_words: u32,
    /// Longest turn that can be a short answer, ms.
    pub short_answer_max_turn_ms: u32,
    /// Wait after the end of speech when the final ends in `.`, `!` or `?`, ms;
    /// 0 turns this rule off (for an STT that punctuates every finalize).
    pub terminal_ms: u32,
    /// Start the answer on the final while such a shorter wait runs (held,
    /// committed when the turn ends with those words, dropped when the caller
    /// goes on).
    pub prefetch: bool,
}

impl Default for ShortcutSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            short_answer_ms: 300,
            short_answer_max_words: 3,
            short_answer_max_turn_ms: 2500,
            terminal_ms: 700,
            prefetch: true,
        }
    }
}

impl ShortcutSettings {
    fn check(&self) -> Result<(), AgentError> {
        range(
            "turn.shortcut.short_answer_ms",
            self.short_answer_ms,
            100,
            10_000,
        )?;
        range(
            "turn.shortcut.short_answer_max_words",
            self.short_answer_max_words,
            1,
            10,
        )?;
        range(
            "turn.shortcut.short_answer_max_turn_ms",
            self.short_answer_max_turn_ms,
            100,
            10_000,
        )?;
        range("turn.shortcut.terminal_ms", self.terminal_ms, 0, 10_000)
    }
}

/// `[turn.early_analysis]` (adaptive policy with Smart Turn): start the
/// analysis when the VAD's speech probability first falls, so the verdict is
/// ready at the confirmed stop. Off by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EarlyAnalysisSettings {
    /// Whether analyses start at the falling hint.
    pub enabled: bool,
    /// How long the fall must last before the hint, ms; must stay below
    /// `vad.min_silence_ms` in whole 32 ms windows.
    pub fall_delay_ms: u32,
    /// Most early analyses per user turn.
    pub max_per_turn: u32,
    /// Most audio between the snapshot and the stop for the verdict to be reused, ms.
    pub max_tail_ms: u32,
}

impl Default for EarlyAnalysisSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            fall_delay_ms: 64,
            max_per_turn: 4,
            max_tail_ms: 300,
        }
    }
}

impl EarlyAnalysisSettings {
    fn check(&self) -> Result<(), AgentError> {
        range(
            "turn.early_analysis.fall_delay_ms",
            self.fall_delay_ms,
            0,
            5000,
        )?;
        range(
            "turn.early_analysis.max_per_turn",
            self.max_per_turn,
            1,
            100,
        )?;
        range("turn.early_analysis.max_tail_ms", self.max_tail_ms, 0, 5000)
    }
}

/// `[turn.speculation]`: start the LLM for a candidate text of the turn
/// before the turn ends (at the VAD stop from the partial, or at the STT
/// final), commit its answer when the turn ends with the same words, cancel
/// it otherwise. Off by default: a run that is not committed is a request paid
/// for nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpeculationSettings {
    /// Whether runs start before the turn ends.
    pub enabled: bool,
    /// Whether the partial at the VAD stop is a candidate (else only the final).
    pub on_partial: bool,
    /// How long the partial must stay unchanged after the stop before its
    /// run starts, ms; 0 starts it at once.
    pub partial_stable_ms: u32,
}

impl Default for SpeculationSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            on_partial: true,
            partial_stable_ms: 0,
        }
    }
}

impl TurnSettings {
    pub(super) fn check(&mut self) -> Result<(), AgentError> {
        match self.policy {
            TurnPolicy::Adaptive => {
                if self.silence_ms.is_some() {
                    return Err(AgentError::NotForPolicy {
                        key: "turn.silence_ms",
                        policy: "fixed",
                    });
                }
                let t = *self
                    .incomplete_timeout_ms
                    .get_or_insert(DEFAULT_INCOMPLETE_TIMEOUT_MS);
                range("turn.incomplete_timeout_ms", t, 100, 30_000)?;
            }
            TurnPolicy::Fixed => {
                if self.incomplete_timeout_ms.is_some() {
                    return Err(AgentError::NotForPolicy {
                        key: "turn.incomplete_timeout_ms",
                        policy: "adaptive",
                    });
                }
                let s = *self.silence_ms.get_or_insert(DEFAULT_SILENCE_MS);
                range("turn.silence_ms", s, 100, 10_000)?;
            }
        }
        range(
            "turn.not_heard_min_speech_ms",
            self.not_heard_min_speech_ms,
            0,
            10_000,
        )?;
        self.shortcut.check()?;
        self.early_analysis.check()?;
        range(
            "turn.speculation.partial_stable_ms",
            self.speculation.partial_stable_ms,
            0,
            5000,
        )?;
        range("turn.analysis_hold_ms", self.analysis_hold_ms, 0, 10_000)?;
        range("turn.final_timeout_ms", self.final_timeout_ms, 0, 10_000)
    }
}

/// `[vad]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VadSettings {
    /// Which detector runs.
    pub detector: VadDetector,
    /// The energy detector's speech level, in dBFS (full scale 32768).
    pub energy_dbfs: f32,
    /// Speech probability at which speech starts, 0 to 1.
    pub start_threshold: f32,
    /// Speech probability under which speech may stop, 0 to 1, not above
    /// `start_threshold`.
    pub stop_threshold: f32,
    /// Silence that ends a speech segment, in ms.
    pub min_silence_ms: u32,
    /// Audio kept before the start and after the end of speech, in ms.
    pub speech_pad_ms: u32,
    /// Shortest speech that counts, in ms.
    pub min_speech_ms: u32,
}

impl Default for VadSettings {
    fn default() -> Self {
        // The engine's defaults: a stop after 100 ms of silence (4 Silero
        // windows), speech from 64 ms (2 windows), Silero's own 30 ms pad.
        Self {
            detector: VadDetector::Silero,
            energy_dbfs: -40.0,
            start_threshold: 0.5,
            stop_threshold: 0.35,
            min_silence_ms: 100,
            speech_pad_ms: 30,
            min_speech_ms: 64,
        }
    }
}

impl VadSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        for (key, v) in [
            ("vad.start_threshold", self.start_threshold),
            ("vad.stop_threshold", self.stop_threshold),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(AgentError::invalid(key, v, "a number from 0 to 1"));
            }
        }
        if self.stop_threshold > self.start_threshold {
            return Err(AgentError::invalid(
                "vad.stop_threshold",
                self.stop_threshold,
                "a number not above vad.start_threshold",
            ));
        }
        if !(-90.0..=0.0).contains(&self.energy_dbfs) {
            return Err(AgentError::invalid(
                "vad.energy_dbfs",
                self.energy_dbfs,
                "a level from -90 to 0 dBFS",
            ));
        }
        range("vad.min_silence_ms", self.min_silence_ms, 32, 5000)?;
        range("vad.speech_pad_ms", self.speech_pad_ms, 0, 1000)?;
        range("vad.min_speech_ms", self.min_speech_ms, 0, 5000)
    }
}

/// `[interruption]`: when speech over the bot cuts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterruptionSettings {
    /// Whether the caller can talk over the bot (barge-in).
    pub enabled: bool,
    /// Speech over the bot that confirms a barge-in, in ms.
    pub min_speech_ms: u32,
    /// Recognised words (backchannels not counted) needed before the bot is
    /// cut; 0: any word that is not a backchannel.
    pub min_words: u32,
    /// Words that never interrupt on their own; unset: the language's list,
    /// `[]`: none (the VAD alone decides, as before the word rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backchannels: Option<Vec<String>>,
    /// Speech with no recognised word at all that still interrupts, in ms.
    pub max_wordless_speech_ms: u32,
    /// How long after its end a speech may still interrupt when its words come late, in ms.
    pub word_grace_ms: u32,
    /// After a false interruption (speech that cut the bot, then no words),
    /// the bot goes on from the first word the caller did not hear.
    pub resume_false_interruptions: bool,
}

impl Default for InterruptionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            min_speech_ms: 300,
            min_words: 0,
            backchannels: None,
            max_wordless_speech_ms: DEFAULT_MAX_WORDLESS_SPEECH_MS as u32,
            word_grace_ms: 400,
            resume_false_interruptions: true,
        }
    }
}

impl InterruptionSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        range("interruption.min_speech_ms", self.min_speech_ms, 0, 5000)?;
        range("interruption.min_words", self.min_words, 0, 20)?;
        range(
            "interruption.max_wordless_speech_ms",
            self.max_wordless_speech_ms,
            100,
            10_000,
        )?;
        range("interruption.word_grace_ms", self.word_grace_ms, 0, 5000)?;
        if let Some(words) = &self.backchannels
            && words.iter().any(|w| w.trim().is_empty())
        {
            return Err(AgentError::invalid(
                "interruption.backchannels",
                "\"\"",
                "a list of non-empty words or phrases",
            ));
        }
        Ok(())
    }
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSettings {
    /// Calls at once; the next one is refused.
    pub max_calls: u32,
    /// A call is ended after this long, in seconds.
    pub max_call_duration_s: u32,
    /// Caller silence after which the bot says `idle_prompt`, in seconds.
    pub idle_prompt_after_s: u32,
    /// What the bot says when the caller is silent.
    pub idle_prompt: String,
    /// Caller silence after which the call ends, in seconds.
    pub idle_end_after_s: u32,
    /// Refuse new calls that the model pools have no room for
    /// (`crate::shedding`); false: only the VAD queue's depth and
    /// `max_calls` refuse calls.
    pub load_shedding: bool,
    /// The recent wait of the VAD or Smart Turn pool above which new calls
    /// are refused (once sustained), and the wait a burst of admitted calls'
    /// first analyses may cause, in ms.
    pub shed_wait_ms: u32,
    /// With `load_shedding`: a new call is refused when the calls running
    /// and it would load the Smart Turn executor's (or the VAD pool's)
    /// threads over this share, in percent, at their learned cost per call
    /// (`crate::forecast`).
    pub shed_target_load_percent: u32,
    /// With `load_shedding` and Smart Turn: new calls are admitted at most
    /// at this share, in percent, of the analyses per second the executor
    /// finishes (`crate::pacer`).
    pub shed_admission_rate_percent: u32,
}

/// Default of `[limits] shed_wait_ms`.
pub const DEFAULT_SHED_WAIT_MS: u32 = 250;
/// Default of `[limits] shed_target_load_percent`.
pub const DEFAULT_SHED_TARGET_LOAD_PERCENT: u32 = 80;
/// Default of `[limits] shed_admission_rate_percent`.
pub const DEFAULT_SHED_ADMISSION_RATE_PERCENT: u32 = 60;

impl Default for LimitsSettings {
    fn default() -> Self {
        Self {
            max_calls: 100,
            max_call_duration_s: 1800,
            idle_prompt_after_s: 15,
            idle_prompt: "Are you still there?".to_owned(),
            idle_end_after_s: 30,
            load_shedding: true,
            shed_wait_ms: DEFAULT_SHED_WAIT_MS,
            shed_target_load_percent: DEFAULT_SHED_TARGET_LOAD_PERCENT,
            shed_admission_rate_percent: DEFAULT_SHED_ADMISSION_RATE_PERCENT,
        }
    }
}

impl LimitsSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        range("limits.max_calls", self.max_calls, 1, 100_000)?;
        range("limits.shed_wait_ms", self.shed_wait_ms, 10, 5000)?;
        range(
            "limits.shed_target_load_percent",
            self.shed_target_load_percent,
            5,
            95,
        )?;
        range(
            "limits.shed_admission_rate_percent",
            self.shed_admission_rate_percent,
            5,
            100,
        )?;
        range(
            "limits.max_call_duration_s",
            self.max_call_duration_s,
            1,
            86_400,
        )?;
        range(
            "limits.idle_prompt_after_s",
            self.idle_prompt_after_s,
            1,
            3600,
        )?;
        if self.idle_end_after_s <= self.idle_prompt_after_s {
            return Err(AgentError::invalid(
                "limits.idle_end_after_s",
                self.idle_end_after_s,
                "a number of seconds above limits.idle_prompt_after_s",
            ));
        }
        Ok(())
    }
}

/// `min..=max` or an error naming `key` and the range.
pub(super) fn range(key: &'static str, v: u32, min: u32, max: u32) -> Result<(), AgentError> {
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        Err(AgentError::InvalidValue {
            key: key.to_owned(),
            value: v.to_string(),
            allowed: format!("a whole number from {min} to {max}"),
        })
    }
}
