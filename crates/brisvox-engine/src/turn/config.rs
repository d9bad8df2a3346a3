//! Turn-taking settings: the end-of-turn policy, barge-in, idle guard and call limits.

use std::time::Duration;

/// How the engine decides that the caller's turn is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnPolicy {
    /// The end-of-turn model decides: a "complete" verdict (plus the STT final when
    /// `require_final`) ends the turn at once; an "incomplete" verdict waits for
    /// more speech, or ends the turn at `incomplete_timeout` after the VAD stop.
    Adaptive {
        /// How long an "incomplete" verdict may hold the turn open after the stop.
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

/// When talking over the bot interrupts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BargeInConfig {
    /// Whether the caller can interrupt at all.
    pub enabled: bool,
    /// How long speech must last (from its start) before it interrupts; 0 means
    /// the VAD's own start confirmation is enough.
    pub min_speech: Duration,
}

impl Default for BargeInConfig {
    fn default() -> Self {
        BargeInConfig {
            enabled: true,
            min_speech: Duration::ZERO,
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

/// Every turn-taking setting of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnConfig {
    /// The end-of-turn policy.
    pub policy: TurnPolicy,
    /// Whether the turn waits for the STT final of the last Finalize.
    pub require_final: bool,
    /// How long to wait for that final before ending the turn with what was heard.
    pub final_timeout: Duration,
    /// Barge-in.
    pub barge_in: BargeInConfig,
    /// The idle guard; `None` disables it.
    pub idle: Option<IdleConfig>,
    /// The longest a call may last; `None` for no limit.
    pub max_call_duration: Option<Duration>,
    /// Spoken when the call starts, before the caller says anything.
    pub greeting: Option<String>,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            policy: TurnPolicy::default(),
            require_final: true,
            final_timeout: Duration::from_millis(1500),
            barge_in: BargeInConfig::default(),
            idle: None,
            max_call_duration: None,
            greeting: None,
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
        if let Some(idle) = &self.idle {
            positive(idle.prompt_after, "idle.prompt_after")?;
            positive(idle.end_after, "idle.end_after")?;
            if idle.prompt.trim().is_empty() {
                return Err(TurnConfigError::EmptyIdlePrompt);
            }
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
