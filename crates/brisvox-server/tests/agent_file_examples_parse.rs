//! The committed example agent files parse and check, with their secrets
//! resolved from the environment.

use brisvox_server::agent::{AgentSettings, LlmProvider, SttProvider, TtsProvider, TurnPolicy};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn env(name: &str) -> Option<String> {
    Some(format!("value-of-{name}"))
}

#[test]
fn complete_example_with_real_providers() {
    let path = std::path::Path::new(ROOT).join("examples/agent.toml");
    let s = AgentSettings::load(&path, &env).unwrap();
    assert_eq!(s.stt.provider, SttProvider::Deepgram);
    assert_eq!(s.llm.provider, LlmProvider::OpenaiCompatible);
    assert_eq!(s.tts.provider, TtsProvider::Cartesia);
    assert!(!s.uses_mock());
    let key = s.stt.deepgram.as_ref().unwrap().api_key.secret().unwrap();
    assert_eq!(key.expose(), "value-of-DEEPGRAM_API_KEY");
    let llm = s.llm.openai_compatible.as_ref().unwrap();
    // gpt-4o-mini is not a reasoning model: OpenAI refuses reasoning_effort.
    assert_eq!(llm.reasoning_effort, None);
    assert_eq!(llm.temperature, Some(0.6));
    assert_eq!(s.turn.policy, TurnPolicy::Adaptive);
    assert_eq!(s.limits.max_calls, 200);
    let auth = s.server.auth.twilio.as_ref().unwrap();
    assert_eq!(
        auth.token.secret().unwrap().expose(),
        "value-of-BRISVOX_TWILIO_TOKEN"
    );
    // A provider that is not selected does not need its variable.
    let aura = s.tts.deepgram_aura.as_ref().unwrap();
    assert!(aura.api_key.secret().is_none());
}

#[test]
fn mock_example_and_no_file_select_mocks() {
    let path = std::path::Path::new(ROOT).join("examples/agent-mock.toml");
    let s = AgentSettings::load(&path, &|_| None).unwrap();
    assert!(s.uses_mock());
    assert_eq!(s.llm.mock.first_token_ms, 200);
    assert_eq!(
        s.llm.mock.token_interval_ms, 30,
        "unset keys keep their defaults"
    );
    let defaults = AgentSettings::mock_defaults();
    assert_eq!(defaults.providers().stt, "mock");
    assert_eq!(defaults.providers().llm, "mock");
    assert_eq!(defaults.providers().tts, "mock");
}
