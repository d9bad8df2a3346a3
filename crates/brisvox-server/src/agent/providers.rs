//! The `[stt]`, `[llm]` and `[tts]` sections: which provider, and its settings.
//!
//! Each section names its `provider` and may hold one sub-table per provider
//! (`[stt.deepgram]`, `[llm.openai_compatible]`, ...). The sub-table of the
//! selected provider is required for real vendors (it holds the API key); the
//! mock's is optional. Sub-tables of providers not selected are checked too, so
//! a file can keep the settings of a provider it switches between.

use serde::{Deserialize, Serialize};

use super::AgentError;
use crate::secret::SecretSetting;

/// Looks up an environment variable.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn resolve(
    secret: &mut SecretSetting,
    key: &str,
    env: EnvLookup<'_>,
    selected: bool,
) -> Result<(), AgentError> {
    if selected {
        secret.resolve(key, env).map_err(AgentError::from)
    } else if secret.env_var().is_none() {
        // A literal key is refused even in an unused sub-table.
        Err(AgentError::LiteralSecret {
            key: key.to_owned(),
        })
    } else {
        Ok(())
    }
}

fn require<T>(table: &Option<T>, key: &str, provider: &str) -> Result<(), AgentError> {
    match table {
        Some(_) => Ok(()),
        None => Err(AgentError::MissingSection {
            key: key.to_owned(),
            provider: provider.to_owned(),
        }),
    }
}

/// Speech-to-text providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SttProvider {
    /// In-process mock with fixed latencies (no speech recognition).
    #[default]
    Mock,
    /// Deepgram streaming STT.
    Deepgram,
    /// An OpenAI-compatible `/v1/audio/transcriptions` endpoint, given each
    /// utterance at the VAD stop (OpenAI Whisper, local Whisper servers).
    OpenaiTranscribe,
    /// A local model.
    Local,
}

/// Language model providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmProvider {
    /// In-process mock with fixed latencies (canned answers).
    #[default]
    Mock,
    /// Any OpenAI Chat Completions compatible endpoint (OpenAI, OpenRouter, vLLM).
    OpenaiCompatible,
    /// The built-in rules agent (no language model): echoes what it heard and
    /// answers a few intents, for demos with no key.
    Local,
}

/// Text-to-speech providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TtsProvider {
    /// In-process mock with fixed latencies (tones, not speech).
    #[default]
    Mock,
    /// Cartesia streaming TTS.
    Cartesia,
    /// ElevenLabs streaming TTS.
    Elevenlabs,
    /// Deepgram Aura TTS.
    DeepgramAura,
    /// A local model.
    Local,
}

macro_rules! provider_name {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            /// The provider's name in the agent file.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
        }
    };
}
provider_name!(SttProvider {
    Mock => "mock", Deepgram => "deepgram", OpenaiTranscribe => "openai_transcribe", Local => "local",
});
provider_name!(LlmProvider {
    Mock => "mock", OpenaiCompatible => "openai_compatible", Local => "local",
});
provider_name!(TtsProvider {
    Mock => "mock", Cartesia => "cartesia", Elevenlabs => "elevenlabs",
    DeepgramAura => "deepgram_aura", Local => "local",
});

/// `[stt.mock]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MockSttSettings {
    /// From the end of speech (Finalize) to the final transcript, in ms.
    pub final_latency_ms: u32,
}

impl Default for MockSttSettings {
    fn default() -> Self {
        Self {
            final_latency_ms: 150,
        }
    }
}

/// `[stt.deepgram]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepgramSttSettings {
    /// Model name.
    #[serde(default = "default_deepgram_model")]
    pub model: String,
    /// API key, `"${DEEPGRAM_API_KEY}"`.
    pub api_key: SecretSetting,
    /// Endpoint override (for a proxy or a test server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Vocabulary to boost, sent as one `keyterm` query parameter each
    /// (Nova-3's Keyterm Prompting; Nova-3 does not take `keywords`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keyterms: Vec<String>,
}

fn default_deepgram_model() -> String {
    "nova-3".to_owned()
}

/// `[stt.openai_transcribe]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiTranscribeSettings {
    /// Model name.
    #[serde(default = "default_transcribe_model")]
    pub model: String,
    /// API key, `"${OPENAI_API_KEY}"`; leave it out for a local server without auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretSetting>,
    /// The API's base URL (the adapter appends `/audio/transcriptions`).
    #[serde(default = "default_transcribe_base_url")]
    pub base_url: String,
}

fn default_transcribe_model() -> String {
    "whisper-1".to_owned()
}

fn default_transcribe_base_url() -> String {
    "https://api.openai.com/v1".to_owned()
}

/// `[stt.local]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalModelSettings {
    /// Directory or file of the model.
    pub model_path: String,
    /// Voice name (TTS only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
}

/// `[tts.local]`: which local voice speaks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalTtsSettings {
    /// `auto` (the default), `piper` or `espeak`.
    pub voice: LocalVoice,
    /// A Piper `.onnx` voice (its `.onnx.json` next to it); without it, the
    /// fetched `en_US-joe-medium` from the models folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_path: Option<String>,
}

/// The local voices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalVoice {
    /// Piper when its files are present (and the language is English), else espeak-ng.
    #[default]
    Auto,
    /// The Piper neural voice; an error at startup when it cannot load.
    Piper,
    /// The `espeak-ng` program's own (robotic) voice.
    Espeak,
}

/// `[stt]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SttSection {
    /// The provider in use.
    pub provider: SttProvider,
    /// Mock settings.
    pub mock: MockSttSettings,
    /// Deepgram settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deepgram: Option<DeepgramSttSettings>,
    /// OpenAI-compatible batch transcription settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_transcribe: Option<OpenAiTranscribeSettings>,
    /// Local model settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalModelSettings>,
}

impl SttSection {
    pub(super) fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        match self.provider {
            SttProvider::Deepgram => require(&self.deepgram, "stt.deepgram", "deepgram")?,
            SttProvider::OpenaiTranscribe => require(
                &self.openai_transcribe,
                "stt.openai_transcribe",
                "openai_transcribe",
            )?,
            // `[stt.local]` is optional: without it, the fetched Whisper model.
            SttProvider::Local | SttProvider::Mock => {}
        }
        if let Some(d) = &mut self.deepgram {
            let selected = self.provider == SttProvider::Deepgram;
            resolve(&mut d.api_key, "stt.deepgram.api_key", env, selected)?;
        }
        if let Some(key) = self
            .openai_transcribe
            .as_mut()
            .and_then(|t| t.api_key.as_mut())
        {
            let selected = self.provider == SttProvider::OpenaiTranscribe;
            resolve(key, "stt.openai_transcribe.api_key", env, selected)?;
        }
        Ok(())
    }
}

/// `[llm.mock]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MockLlmSettings {
    /// From the request to the first token, in ms.
    pub first_token_ms: u32,
    /// Between tokens, in ms.
    pub token_interval_ms: u32,
    /// What the mock answers every turn (one word per token).
    pub answer: String,
    /// Scripted tool calls: the first rule whose `when_heard` the caller's
    /// last words contain makes the mock call that tool (as a real model's
    /// streamed tool call), for tests and demos of tools without a model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MockToolRule>,
    /// The answer after a tool result; `{result}` is replaced by the result.
    pub tool_result_answer: String,
}

/// One `[[llm.mock.tool_calls]]` rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockToolRule {
    /// Words the caller's last turn must contain (case-insensitive).
    pub when_heard: String,
    /// The tool to call.
    pub tool: String,
    /// Its arguments, a JSON object as text.
    #[serde(default = "empty_json_object")]
    pub arguments: String,
}

fn empty_json_object() -> String {
    "{}".to_owned()
}

impl Default for MockLlmSettings {
    fn default() -> Self {
        Self {
            first_token_ms: 350,
            token_interval_ms: 30,
            answer: "Okay, got it.".to_owned(),
            tool_calls: Vec::new(),
            tool_result_answer: "Here is what I found: {result}".to_owned(),
        }
    }
}

impl MockLlmSettings {
    fn check(&self) -> Result<(), AgentError> {
        for (i, rule) in self.tool_calls.iter().enumerate() {
            let parsed = serde_json::from_str::<serde_json::Value>(&rule.arguments);
            if !parsed.is_ok_and(|v| v.is_object()) {
                return Err(AgentError::InvalidValue {
                    key: format!("llm.mock.tool_calls[{i}].arguments"),
                    value: rule.arguments.clone(),
                    allowed: "a JSON object".to_owned(),
                });
            }
            if rule.when_heard.trim().is_empty() {
                return Err(AgentError::InvalidValue {
                    key: format!("llm.mock.tool_calls[{i}].when_heard"),
                    value: "\"\"".to_owned(),
                    allowed: "a non-empty string".to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// `[llm.local]`: the pace of the built-in rules agent's words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalLlmSettings {
    /// From the request to the first word, in ms.
    pub first_token_ms: u32,
    /// Between words, in ms.
    pub word_interval_ms: u32,
}

impl Default for LocalLlmSettings {
    fn default() -> Self {
        Self {
            first_token_ms: 150,
            word_interval_ms: 25,
        }
    }
}

/// `[llm.openai_compatible]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiCompatibleSettings {
    /// Model name (`gpt-4o-mini`, `openai/gpt-6-luna`, ...).
    pub model: String,
    /// API key, `"${OPENAI_API_KEY}"`.
    pub api_key: SecretSetting,
    /// Base URL of the API.
    #[serde(default = "default_openai_base_url")]
    pub base_url: String,
    /// Sampling temperature, 0 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Bound on the answer's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The field `max_tokens` travels in: `max_tokens` or
    /// `max_completion_tokens`; unset: `max_completion_tokens` for OpenAI's own
    /// API, `max_tokens` for every other server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<String>,
    /// `reasoning_effort`: none, minimal, low, medium, high or xhigh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Time from the request to the first token, in ms (reasoning deltas
    /// restart it). Raise it for reasoning models.
    #[serde(default = "default_first_token_timeout_ms")]
    pub first_token_timeout_ms: u32,
    /// OpenRouter provider routing: upstreams in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openrouter_order: Option<Vec<String>>,
    /// OpenRouter provider routing: whether other upstreams may serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openrouter_allow_fallbacks: Option<bool>,
}

fn default_openai_base_url() -> String {
    "https://api.openai.com/v1".to_owned()
}

/// The first-token timeout unless set, in ms.
pub(super) const DEFAULT_FIRST_TOKEN_TIMEOUT_MS: u32 = 4_000;

fn default_first_token_timeout_ms() -> u32 {
    DEFAULT_FIRST_TOKEN_TIMEOUT_MS
}

/// Values `reasoning_effort` may take (OpenAI's and OpenRouter's documented set).
pub const REASONING_EFFORTS: [&str; 6] = brisvox_providers::openai_llm::OPENAI_REASONING_EFFORTS;

/// `[llm]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmSection {
    /// The provider in use.
    pub provider: LlmProvider,
    /// Mock settings.
    pub mock: MockLlmSettings,
    /// Local rules agent settings.
    pub local: LocalLlmSettings,
    /// OpenAI-compatible settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_compatible: Option<OpenAiCompatibleSettings>,
}

impl LlmSection {
    pub(super) fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        self.mock.check()?;
        if self.provider == LlmProvider::OpenaiCompatible {
            require(
                &self.openai_compatible,
                "llm.openai_compatible",
                "openai_compatible",
            )?;
        }
        let selected = self.provider == LlmProvider::OpenaiCompatible;
        let Some(o) = &mut self.openai_compatible else {
            return Ok(());
        };
        resolve(
            &mut o.api_key,
            "llm.openai_compatible.api_key",
            env,
            selected,
        )?;
        if let Some(t) = o.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(AgentError::invalid(
                "llm.openai_compatible.temperature",
                t,
                "a number from 0 to 2",
            ));
        }
        if let Some(e) = &o.reasoning_effort
            && let Err(error) =
                brisvox_providers::openai_llm::check_reasoning_effort(&o.base_url, &o.model, e)
        {
            return Err(AgentError::invalid(
                "llm.openai_compatible.reasoning_effort",
                e,
                &error.to_string(),
            ));
        }
        if let Some(f) = &o.max_tokens_field
            && !matches!(f.as_str(), "max_tokens" | "max_completion_tokens")
        {
            return Err(AgentError::invalid(
                "llm.openai_compatible.max_tokens_field",
                f,
                "max_tokens or max_completion_tokens",
            ));
        }
        if !(100..=600_000).contains(&o.first_token_timeout_ms) {
            return Err(AgentError::invalid(
                "llm.openai_compatible.first_token_timeout_ms",
                o.first_token_timeout_ms,
                "100 to 600000",
            ));
        }
        Ok(())
    }
}

/// `[tts.mock]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MockTtsSettings {
    /// From the request to the first audio byte, in ms.
    pub first_byte_ms: u32,
}

impl Default for MockTtsSettings {
    fn default() -> Self {
        Self { first_byte_ms: 150 }
    }
}

/// `[tts.cartesia]`, `[tts.elevenlabs]`, `[tts.deepgram_aura]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorTtsSettings {
    /// Model name (`sonic-3.6`, `eleven_flash_v2_5`, `aura-2-thalia-en`).
    pub model: String,
    /// Voice id (Deepgram Aura: the voice is part of the model name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    /// API key, `"${CARTESIA_API_KEY}"` and so on.
    pub api_key: SecretSetting,
    /// Endpoint override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// `[tts]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtsSection {
    /// The provider in use.
    pub provider: TtsProvider,
    /// Mock settings.
    pub mock: MockTtsSettings,
    /// Cartesia settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cartesia: Option<VendorTtsSettings>,
    /// ElevenLabs settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elevenlabs: Option<VendorTtsSettings>,
    /// Deepgram Aura settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deepgram_aura: Option<VendorTtsSettings>,
    /// Local voice settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalTtsSettings>,
}

impl TtsSection {
    pub(super) fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        let p = self.provider;
        match p {
            TtsProvider::Cartesia => require(&self.cartesia, "tts.cartesia", p.as_str())?,
            TtsProvider::Elevenlabs => require(&self.elevenlabs, "tts.elevenlabs", p.as_str())?,
            TtsProvider::DeepgramAura => {
                require(&self.deepgram_aura, "tts.deepgram_aura", p.as_str())?
            }
            // `[tts.local]` is optional: its defaults pick the voice.
            TtsProvider::Local | TtsProvider::Mock => {}
        }
        let vendors = [
            (
                &mut self.cartesia,
                "tts.cartesia.api_key",
                TtsProvider::Cartesia,
            ),
            (
                &mut self.elevenlabs,
                "tts.elevenlabs.api_key",
                TtsProvider::Elevenlabs,
            ),
            (
                &mut self.deepgram_aura,
                "tts.deepgram_aura.api_key",
                TtsProvider::DeepgramAura,
            ),
        ];
        for (table, key, provider) in vendors {
            if let Some(v) = table {
                resolve(&mut v.api_key, key, env, p == provider)?;
            }
        }
        // Cartesia and ElevenLabs have no default voice: an empty id fails
        // every call (Cartesia's `voice.id`, ElevenLabs' `{voice_id}` path).
        let voiced = [
            (&self.cartesia, "tts.cartesia.voice"),
            (&self.elevenlabs, "tts.elevenlabs.voice"),
        ];
        for (table, key) in voiced {
            if let Some(v) = table
                && v.voice.as_deref().is_none_or(|id| id.trim().is_empty())
            {
                return Err(AgentError::invalid(key, "\"\"", "the vendor's voice id"));
            }
        }
        Ok(())
    }
}
