//! The providers the agent file names, built once at startup: the STT, the
//! LLM and the TTS of every call (mock, vendor adapters with keys from the
//! environment, or the local ones).

use std::sync::Arc;

use brisvox_engine::Providers;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::deepgram::aura::{DeepgramAura, DeepgramAuraOptions};
use brisvox_providers::deepgram::stt::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::local::{LocalLlmConfig, LocalRulesLlm};
use brisvox_providers::mock::Latency;
use brisvox_providers::mock::{
    MockLlm, MockLlmConfig, MockStt, MockSttConfig, MockTts, MockTtsConfig,
};
use brisvox_providers::openai_llm::{MaxTokensField, OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::vendors::ApiKey;

use crate::agent::{AgentSettings, Language, LlmProvider, SttProvider, TtsProvider};
use crate::setup_error::EngineSetupError;

/// The providers the agent file names.
pub fn build_providers(agent: &AgentSettings) -> Result<Providers, EngineSetupError> {
    Ok(Providers {
        tools: None,
        stt: build_stt(agent)?,
        llm: build_llm(agent)?,
        tts: build_tts(agent)?,
    })
}

pub(crate) fn language_code(language: Language) -> &'static str {
    match language {
        Language::En => "en",
        Language::Tr => "tr",
    }
}

fn fixed_ms(n: u32) -> Latency {
    Latency::Fixed(u64::from(n))
}

/// The key of a vendor section. The agent file check guarantees that a
/// vendor section has its `api_key` resolved from the environment.
fn api_key(
    setting: &crate::secret::SecretSetting,
    section: &'static str,
) -> Result<ApiKey, EngineSetupError> {
    setting
        .secret()
        .map(|s| ApiKey::new(s.expose()))
        .ok_or(EngineSetupError::MissingSection { section })
}

pub(crate) fn build_stt(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    match agent.stt.provider {
        SttProvider::Mock => Ok(Arc::new(mock_stt(&agent.stt.mock, 0))),
        SttProvider::Deepgram => {
            let section = "stt.deepgram";
            let s = agent
                .stt
                .deepgram
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            let mut options = DeepgramSttOptions::default();
            options.model = s.model.clone();
            if let Some(url) = &s.base_url {
                options.url = url.clone();
            }
            options.language = Some(language_code(agent.language).to_owned());
            options.keyterms.clone_from(&s.keyterms);
            let key = api_key(&s.api_key, section)?;
            Ok(Arc::new(DeepgramStt::new(key.expose(), options)))
        }
        SttProvider::OpenaiTranscribe => {
            let section = "stt.openai_transcribe";
            let s = agent
                .stt
                .openai_transcribe
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            let mut options = OpenAiTranscribeOptions::default();
            options.model = s.model.clone();
            options.base_url = s.base_url.clone();
            options.language = Some(language_code(agent.language).to_owned());
            let key = match &s.api_key {
                Some(k) => Some(api_key(k, section)?.expose().to_owned()),
                None => None,
            };
            Ok(Arc::new(OpenAiTranscribe::new(key, options)))
        }
        SttProvider::Local => crate::local_stt::build(agent),
    }
}

/// The mock STT of `[stt.mock]`, its random draws from `seed`.
pub(crate) fn mock_stt(s: &crate::agent::MockSttSettings, seed: u64) -> MockStt {
    let stt = MockStt::new(MockSttConfig {
        seed,
        final_latency: fixed_ms(s.final_latency_ms),
        ..MockSttConfig::default()
    });
    stt.set_transcriber(|i| format!("mock transcript {}", i + 1));
    stt
}

/// The mock TTS of `[tts.mock]`, its random draws from `seed`.
pub(crate) fn mock_tts(s: &crate::agent::MockTtsSettings, seed: u64) -> MockTts {
    MockTts::new(MockTtsConfig {
        seed,
        first_byte: fixed_ms(s.first_byte_ms),
        ..MockTtsConfig::default()
    })
}

/// The mock LLM of `[llm.mock]`, with its scripted tool calls, its random
/// draws from `seed`. `answer` may name `{system}` (the system prompt it was
/// sent) and `{last}` (the text of the last message), so tests see what
/// context reached the model.
pub(crate) fn mock_llm(s: &crate::agent::MockLlmSettings, seed: u64) -> MockLlm {
    let llm = MockLlm::new(MockLlmConfig {
        seed,
        first_token: fixed_ms(s.first_token_ms),
        token_interval: fixed_ms(s.token_interval_ms),
        default_answer: s.answer.clone(),
        ..MockLlmConfig::default()
    });
    let echoes = ["{system}", "{last}"].iter().any(|p| s.answer.contains(p));
    if s.tool_calls.is_empty() && !echoes {
        return llm;
    }
    let (rules, answer, after_tool) = (
        s.tool_calls.clone(),
        s.answer.clone(),
        s.tool_result_answer.clone(),
    );
    llm.set_answer_responder(move |request| {
        use brisvox_providers::Role;
        use brisvox_providers::mock::{MockAnswer, MockToolCall};
        let last = request.messages.last();
        if let Some(last) = last
            && last.role == Role::Tool
        {
            return MockAnswer::Text(after_tool.replace("{result}", &last.text));
        }
        // A rule answers the caller's words: the conversation ends with them.
        let heard = match last {
            Some(m) if m.role == Role::User => m.text.to_lowercase(),
            _ => String::new(),
        };
        match rules
            .iter()
            .find(|r| !heard.is_empty() && heard.contains(&r.when_heard.to_lowercase()))
        {
            Some(rule) => MockAnswer::ToolCalls {
                text: String::new(),
                calls: vec![MockToolCall::new(&rule.tool, &rule.arguments)],
            },
            None => MockAnswer::Text(echo(&answer, request)),
        }
    });
    llm
}

/// `answer` with `{system}` and `{last}` filled in from `request`.
fn echo(answer: &str, request: &brisvox_providers::LlmRequest) -> String {
    use brisvox_providers::Role;
    let system = request
        .messages
        .first()
        .filter(|m| m.role == Role::System)
        .map_or("", |m| &*m.text);
    let last = request.messages.last().map_or("", |m| &*m.text);
    answer.replace("{system}", system).replace("{last}", last)
}

pub(crate) fn build_llm(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::LlmProvider>, EngineSetupError> {
    match agent.llm.provider {
        LlmProvider::Mock => Ok(Arc::new(mock_llm(&agent.llm.mock, 0))),
        LlmProvider::OpenaiCompatible => {
            let section = "llm.openai_compatible";
            let s = agent
                .llm
                .openai_compatible
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            Ok(Arc::new(OpenAiLlm::new(openai_llm_config(s)?)))
        }
        LlmProvider::Local => Ok(Arc::new(LocalRulesLlm::new(LocalLlmConfig {
            first_token_ms: u64::from(agent.llm.local.first_token_ms),
            word_interval_ms: u64::from(agent.llm.local.word_interval_ms),
            ..LocalLlmConfig::default()
        }))),
    }
}

/// The adapter settings of `[llm.openai_compatible]`: every key of the
/// section reaches the request (temperature, the limit in the field the
/// server documents, reasoning effort, the first-token timeout, routing).
pub fn openai_llm_config(
    s: &crate::agent::OpenAiCompatibleSettings,
) -> Result<OpenAiLlmConfig, EngineSetupError> {
    let section = "llm.openai_compatible";
    let mut config = OpenAiLlmConfig::new(api_key(&s.api_key, section)?, s.model.clone())
        .with_base_url(s.base_url.clone());
    if let Some(order) = &s.openrouter_order {
        config = config
            .with_provider_routing(order.clone(), s.openrouter_allow_fallbacks.unwrap_or(true));
    }
    if let Some(effort) = &s.reasoning_effort {
        config = config.with_reasoning_effort(effort.clone());
    }
    if let Some(max) = s.max_tokens {
        let field = match s.max_tokens_field.as_deref() {
            Some("max_tokens") => MaxTokensField::MaxTokens,
            Some(_) => MaxTokensField::MaxCompletionTokens,
            None => MaxTokensField::for_base_url(&s.base_url),
        };
        config = config.with_max_tokens(max, field);
    }
    if let Some(t) = s.temperature {
        config = config.with_temperature(t);
    }
    let chunk_ms = config.chunk_timeout_ms;
    Ok(config.with_timeouts(u64::from(s.first_token_timeout_ms), chunk_ms))
}

pub(crate) fn build_tts(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::TtsProvider>, EngineSetupError> {
    let vendor = |s: &Option<crate::agent::VendorTtsSettings>, section: &'static str| {
        s.clone()
            .ok_or(EngineSetupError::MissingSection { section })
    };
    match agent.tts.provider {
        TtsProvider::Mock => Ok(Arc::new(mock_tts(&agent.tts.mock, 0))),
        TtsProvider::Cartesia => {
            let section = "tts.cartesia";
            let s = vendor(&agent.tts.cartesia, section)?;
            let voice = s.voice.clone().unwrap_or_default();
            let mut config = CartesiaConfig::new(api_key(&s.api_key, section)?, s.model, voice);
            if let Some(url) = s.base_url {
                config = config.with_url(url);
            }
            Ok(Arc::new(CartesiaTts::new(config)))
        }
        TtsProvider::Elevenlabs => {
            let section = "tts.elevenlabs";
            let s = vendor(&agent.tts.elevenlabs, section)?;
            let voice = s.voice.clone().unwrap_or_default();
            let mut config = ElevenLabsConfig::new(api_key(&s.api_key, section)?, s.model, voice);
            if let Some(url) = s.base_url {
                config = config.with_base_url(url);
            }
            Ok(Arc::new(ElevenLabsTts::new(config)))
        }
        TtsProvider::DeepgramAura => {
            let section = "tts.deepgram_aura";
            let s = vendor(&agent.tts.deepgram_aura, section)?;
            let mut options = DeepgramAuraOptions::default();
            options.model = s.model;
            if let Some(url) = s.base_url {
                options.url = url;
            }
            let key = api_key(&s.api_key, section)?;
            Ok(Arc::new(DeepgramAura::new(key.expose(), options)))
        }
        TtsProvider::Local => crate::local_tts::build(agent),
    }
}
