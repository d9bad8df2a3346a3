//! The agent file (`docs/AGENT_FILE.md`): one TOML file that says who the agent
//! is (prompt, greeting, language), which providers it uses, how turns and
//! interruptions work, the limits, and how the server listens.
//!
//! [`AgentSettings::from_toml_str`] parses and checks a file; every key has a
//! default, so an empty file (or no file, [`AgentSettings::mock_defaults`]) runs
//! the mock providers. Unknown keys, bad values, literal secrets and missing
//! environment variables are errors that name the key. Secrets are read from the
//! environment through a lookup function passed in (tests pass their own;
//! the binary passes [`process_env`]).

mod chaos;
pub mod exposure;
mod policy;
mod providers;
mod recording;
mod runtime;
mod server;
mod telephony;
mod tools;
mod transfer;

pub use chaos::{ChaosSettings, FaultKind, FaultSettings, MAX_FAULT_INDICES};
pub use policy::{
    DEFAULT_INCOMPLETE_TIMEOUT_MS, DEFAULT_SHED_ADMISSION_RATE_PERCENT,
    DEFAULT_SHED_TARGET_LOAD_PERCENT, DEFAULT_SHED_WAIT_MS, DEFAULT_SILENCE_MS,
    EarlyAnalysisSettings, InterruptionSettings, LOCAL_NOT_HEARD_REPLY, LimitsSettings,
    ShortcutSettings, TurnAnalyzer, TurnPolicy, TurnSettings, VadDetector, VadSettings,
};
pub use providers::{
    DeepgramSttSettings, EnvLookup, LlmProvider, LlmSection, LocalLlmSettings, LocalModelSettings,
    LocalTtsSettings, LocalVoice, MockLlmSettings, MockSttSettings, MockToolRule, MockTtsSettings,
    OpenAiCompatibleSettings, OpenAiTranscribeSettings, REASONING_EFFORTS, SttProvider, SttSection,
    TtsProvider, TtsSection, VendorTtsSettings,
};
pub use recording::{DEFAULT_RECORDING_MAX_DURATION_S, RecordingSettings};
pub use runtime::{
    ENV_SMART_TURN_INTRA_THREADS, ENV_SMART_TURN_THREADS, ENV_VAD_THREADS, MIN_POOL_QUEUE,
    RuntimeSettings, pool_queue_capacity, usable_cores,
};
pub use server::{
    AuthSettings, DEFAULT_DRAIN_ADMIT_S, DEFAULT_WEBRTC_UDP_PORTS, FailedAuthSettings,
    MAX_DRAIN_GRACE_S, RouteAuth, ServerSettings, TokenPlacement, WebRtcSettings,
};
pub use telephony::{
    ExotelSettings, PlivoSettings, TelephonySettings, TelnyxSettings, TwilioSettings,
    VONAGE_RATES_HZ, VonageSettings,
};
pub use tools::{
    AgentLinkSettings, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_WEBHOOK_TIMEOUT_MS, ToolCallSettings,
    ToolSettings, WebhookMethod, WebhookSettings,
};
pub use transfer::{MAX_TRANSFER_DESTINATIONS, TransferDestination, TransferSettings};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::secret::SecretError;

/// Why an agent file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The file could not be read.
    #[error("cannot read the agent file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not valid TOML, an unknown key, a value of the wrong type or an unknown
    /// choice; the message names the key, its line and the allowed values.
    #[error("{message}")]
    Parse {
        /// The parser's message (with the offending line).
        message: String,
    },
    /// A value outside what is allowed.
    #[error("{key} = {value} is not allowed: expected {allowed}")]
    InvalidValue {
        /// The key (`vad.start_threshold`).
        key: String,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A key that belongs to the other turn policy.
    #[error("{key} applies only to turn.policy = \"{policy}\"")]
    NotForPolicy {
        /// The key.
        key: &'static str,
        /// The policy it belongs to.
        policy: &'static str,
    },
    /// The selected provider's sub-table is missing.
    #[error(
        "provider \"{provider}\" is selected but the [{key}] table with its settings is missing"
    )]
    MissingSection {
        /// The table (`stt.deepgram`).
        key: String,
        /// The provider.
        provider: String,
    },
    /// A secret written as a literal value.
    #[error(
        "{key} must reference an environment variable, like \"${{MY_API_KEY}}\"; literal secrets are not allowed in the agent file"
    )]
    LiteralSecret {
        /// The key.
        key: String,
    },
    /// A secret's environment variable is not set.
    #[error("{key} references the environment variable {var}, which is not set")]
    MissingEnvVar {
        /// The key.
        key: String,
        /// The variable.
        var: String,
    },
}

impl AgentError {
    fn invalid(key: &str, value: impl std::fmt::Display, allowed: &str) -> Self {
        Self::InvalidValue {
            key: key.to_owned(),
            value: value.to_string(),
            allowed: allowed.to_owned(),
        }
    }
}

impl From<SecretError> for AgentError {
    fn from(e: SecretError) -> Self {
        match e {
            SecretError::Literal { key } => Self::LiteralSecret { key },
            SecretError::MissingEnvVar { key, var } => Self::MissingEnvVar { key, var },
        }
    }
}

/// The agent's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// English.
    #[default]
    En,
    /// Turkish.
    Tr,
}

/// A parsed and checked agent file, with its secrets resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// The system prompt.
    pub prompt: String,
    /// What the bot says when the call starts (none: it waits for the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub greeting: Option<String>,
    /// What the bot says when its LLM fails during an answer (none: the
    /// answer just ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apology: Option<String>,
    /// Language of the conversation.
    pub language: Language,
    /// `[stt]`.
    pub stt: SttSection,
    /// `[llm]`.
    pub llm: LlmSection,
    /// `[tts]`.
    pub tts: TtsSection,
    /// `[turn]`.
    pub turn: TurnSettings,
    /// `[vad]`.
    pub vad: VadSettings,
    /// `[interruption]`.
    pub interruption: InterruptionSettings,
    /// `[limits]`.
    pub limits: LimitsSettings,
    /// `[runtime]`.
    pub runtime: RuntimeSettings,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[telephony]`.
    pub telephony: TelephonySettings,
    /// `[recording]` (absent: calls are not recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording: Option<RecordingSettings>,
    /// `[[tools]]`: webhook tools the model may call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSettings>,
    /// `[tool_calls]`: rounds, timeout and filler of tool calls.
    pub tool_calls: ToolCallSettings,
    /// `[agent_link]`: the agent's websocket, opened for every call.
    pub agent_link: AgentLinkSettings,
    /// `[chaos]`: mock provider faults for a share of calls (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chaos: Option<ChaosSettings>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            prompt: "You are a helpful voice assistant. Answer in one or two short sentences."
                .to_owned(),
            greeting: Some("Hello! How can I help you?".to_owned()),
            apology: None,
            language: Language::En,
            stt: SttSection::default(),
            llm: LlmSection::default(),
            tts: TtsSection::default(),
            turn: TurnSettings::default(),
            vad: VadSettings::default(),
            interruption: InterruptionSettings::default(),
            limits: LimitsSettings::default(),
            runtime: RuntimeSettings::default(),
            server: ServerSettings::default(),
            telephony: TelephonySettings::default(),
            recording: None,
            tools: Vec::new(),
            tool_calls: ToolCallSettings::default(),
            agent_link: AgentLinkSettings::default(),
            chaos: None,
        }
    }
}

/// Reads variables from the process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl AgentSettings {
    /// The settings with no agent file: every provider a mock.
    pub fn mock_defaults() -> Self {
        let mut s = Self::default();
        // Cannot fail: the defaults hold no secrets and pass every check
        // (tested in `defaults_pass_their_own_checks`).
        s.check(&|_| None).expect("the defaults are valid");
        s
    }

    /// Parses and checks an agent file's text; secrets are read through `env`.
    pub fn from_toml_str(text: &str, env: EnvLookup<'_>) -> Result<Self, AgentError> {
        let mut s: Self = toml::from_str(text).map_err(|e| AgentError::Parse {
            message: e.to_string(),
        })?;
        s.check(env)?;
        Ok(s)
    }

    /// Reads, parses and checks the agent file at `path` (the binary then
    /// applies [`apply_env_overrides`](Self::apply_env_overrides)).
    pub fn load(path: &Path, env: EnvLookup<'_>) -> Result<Self, AgentError> {
        let text = std::fs::read_to_string(path).map_err(|source| AgentError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text, env).map_err(|e| match e {
            AgentError::Parse { message } => AgentError::Parse {
                message: format!("{}: {message}", path.display()),
            },
            other => other,
        })
    }

    /// Applies the environment's overrides of `[runtime]` (the variables win
    /// over the file) and checks the result.
    pub fn apply_env_overrides(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        self.runtime.apply_env(env)?;
        self.runtime.check()
    }

    fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        if self.prompt.trim().is_empty() {
            return Err(AgentError::invalid("prompt", "\"\"", "a non-empty string"));
        }
        self.stt.check(env)?;
        self.llm.check(env)?;
        self.tts.check(env)?;
        self.turn.check()?;
        self.vad.check()?;
        self.interruption.check()?;
        self.limits.check()?;
        self.runtime.check()?;
        self.check_early_analysis()?;
        tools::check_tools(&mut self.tools, env)?;
        self.tool_calls.check()?;
        self.agent_link.check()?;
        self.server.check(env)?;
        if let Some(r) = &self.recording {
            r.check()?;
        }
        if let Some(c) = &self.chaos {
            c.check(self.stt.provider, self.llm.provider, self.tts.provider)?;
        }
        self.telephony.check(env)
    }

    /// Early analysis needs the adaptive policy with Smart Turn, and a falling
    /// hint the VAD can send before its stop (`fall_delay_ms`, in whole 32 ms
    /// windows, below `vad.min_silence_ms`).
    fn check_early_analysis(&self) -> Result<(), AgentError> {
        let early = &self.turn.early_analysis;
        if !early.enabled {
            return Ok(());
        }
        if self.turn.policy != TurnPolicy::Adaptive || self.turn.analyzer != TurnAnalyzer::SmartTurn
        {
            return Err(AgentError::invalid(
                "turn.early_analysis.enabled",
                true,
                "false unless turn.policy = \"adaptive\" with analyzer = \"smart_turn\"",
            ));
        }
        self.vad_params().check_falling_hint().map_err(|e| {
            AgentError::invalid(
                "turn.early_analysis.fall_delay_ms",
                early.fall_delay_ms,
                &format!("a delay the VAD can hint with ({e})"),
            )
        })
    }

    /// The VAD stop rule of `[vad]`, with the falling hint of
    /// `[turn.early_analysis]` when that is enabled.
    pub fn vad_params(&self) -> brisvox_models::vad::detector::VadParams {
        let ms = |n: u32| std::time::Duration::from_millis(u64::from(n));
        let v = &self.vad;
        let early = &self.turn.early_analysis;
        brisvox_models::vad::detector::VadParams {
            positive_threshold: v.start_threshold,
            negative_threshold: v.stop_threshold,
            min_silence: ms(v.min_silence_ms),
            min_speech: ms(v.min_speech_ms),
            speech_pad: ms(v.speech_pad_ms),
            fall_delay: early.enabled.then(|| ms(early.fall_delay_ms)),
        }
    }

    /// The providers in use, as announced in the `started` event.
    pub fn providers(&self) -> brisvox_transport::brisvox_ws::Providers {
        brisvox_transport::brisvox_ws::Providers {
            stt: self.stt.provider.as_str().to_owned(),
            llm: self.llm.provider.as_str().to_owned(),
            tts: self.tts.provider.as_str().to_owned(),
        }
    }

    /// How long a drain lets running calls go on, in seconds:
    /// `[server] drain_grace_s`, or `[limits] max_call_duration_s` when unset.
    pub fn drain_grace_s(&self) -> u32 {
        self.server
            .drain_grace_s
            .unwrap_or(self.limits.max_call_duration_s)
    }

    /// True when any provider is a mock.
    pub fn uses_mock(&self) -> bool {
        self.stt.provider == SttProvider::Mock
            || self.llm.provider == LlmProvider::Mock
            || self.tts.provider == TtsProvider::Mock
    }

    /// The resolved settings as TOML, secrets shown as `<redacted, from $VAR>`.
    pub fn to_redacted_toml(&self) -> String {
        // Cannot fail: every field is a plain value, map or table that TOML
        // can express, and secrets serialise as redacted strings.
        toml::to_string_pretty(self).expect("agent settings always serialise to TOML")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_their_own_checks() {
        let s = AgentSettings::mock_defaults();
        assert!(s.uses_mock());
        let back = AgentSettings::from_toml_str(&s.to_redacted_toml(), &|_| None).unwrap();
        assert_eq!(back, s);
        assert_eq!(AgentSettings::from_toml_str("", &|_| None).unwrap(), s);
    }
}
