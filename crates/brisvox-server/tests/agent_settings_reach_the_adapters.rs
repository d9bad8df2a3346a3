//! Every LLM and TTS setting the agent file accepts reaches the adapter: the
//! temperature and the limit (in the field the server documents) reach the
//! request body, the first-token timeout the adapter and the engine's own
//! limit, and the agent's language the TTS and STT configs.

use std::time::Duration;

use brisvox_providers::openai_llm::OpenAiLlm;
use brisvox_providers::{LlmRequest, Message};
use brisvox_server::agent::AgentSettings;
use brisvox_server::engine::engine_config;
use brisvox_server::providers::openai_llm_config;

fn agent(extra: &str) -> AgentSettings {
    let text = format!(
        "language = \"tr\"\n[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"gpt-4o-mini\"\napi_key = \"${{OPENAI_API_KEY}}\"\ntemperature = 0.25\nmax_tokens = 90\nfirst_token_timeout_ms = 20000\n{extra}"
    );
    AgentSettings::from_toml_str(&text, &|_| Some("k".into())).unwrap()
}

fn body(a: &AgentSettings) -> serde_json::Value {
    let s = a.llm.openai_compatible.as_ref().unwrap();
    let llm = OpenAiLlm::new(openai_llm_config(s).unwrap());
    llm.request_body(&LlmRequest::new(vec![Message::user("hi")]))
}

#[test]
fn temperature_and_limit_reach_the_request() {
    let b = body(&agent(""));
    assert_eq!(b["temperature"].as_f64(), Some(0.25));
    // OpenAI's own API: `max_completion_tokens`.
    assert_eq!(b["max_completion_tokens"], 90);
    assert!(b.get("max_tokens").is_none());
    let b = body(&agent("base_url = \"https://openrouter.ai/api/v1\""));
    assert_eq!(b["max_tokens"], 90);
    let b = body(&agent(
        "base_url = \"https://openrouter.ai/api/v1\"\nmax_tokens_field = \"max_completion_tokens\"",
    ));
    assert_eq!(b["max_completion_tokens"], 90);
}

#[test]
fn timeout_and_language_reach_the_adapter_and_the_engine() {
    let a = agent("");
    let s = a.llm.openai_compatible.as_ref().unwrap();
    assert_eq!(openai_llm_config(s).unwrap().first_token_timeout_ms, 20_000);
    let config = engine_config(&a, 8_000);
    assert!(config.limits.llm_first_token >= Duration::from_secs(20));
    assert_eq!(config.tts.language.as_deref(), Some("tr"));
    assert_eq!(config.stt.language.as_deref(), Some("tr"));
}
