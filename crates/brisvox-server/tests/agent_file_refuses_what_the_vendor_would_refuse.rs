//! Settings a vendor would refuse on the first call are refused by `brisvox
//! check` instead: an empty Cartesia or ElevenLabs voice, a `reasoning_effort`
//! OpenAI does not document (`max`), `none` for an OpenAI model before
//! gpt-5.1, any effort for a non-reasoning OpenAI model, an unknown
//! `max_tokens_field`. (docs/providers/openai.md and cartesia.md cite the pages.)

mod common;

use common::{check_agent as check, invalid_key};

const LLM: &str = "[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\napi_key = \"${OPENAI_API_KEY}\"\n";

#[test]
fn an_empty_voice_id_is_refused() {
    for vendor in ["cartesia", "elevenlabs"] {
        for voice in ["", "voice = \"  \"\n"] {
            let text = format!(
                "[tts]\nprovider = \"{vendor}\"\n[tts.{vendor}]\nmodel = \"m\"\n{voice}api_key = \"${{K}}\""
            );
            assert_eq!(invalid_key(&text), format!("tts.{vendor}.voice"));
        }
    }
}

#[test]
fn undocumented_or_unsupported_efforts_are_refused() {
    for (model, base, effort) in [
        ("gpt-5.1", "https://api.openai.com/v1", "max"),
        ("gpt-5-mini", "https://api.openai.com/v1", "none"),
        ("gpt-4o-mini", "https://api.openai.com/v1", "low"),
        ("openai/gpt-5.1", "https://openrouter.ai/api/v1", "max"),
    ] {
        let text = format!(
            "{LLM}model = \"{model}\"\nbase_url = \"{base}\"\nreasoning_effort = \"{effort}\""
        );
        assert_eq!(
            invalid_key(&text),
            "llm.openai_compatible.reasoning_effort",
            "{model} {effort}"
        );
    }
    for (model, base, effort) in [
        ("gpt-5.1", "https://api.openai.com/v1", "none"),
        ("gpt-5-mini", "https://api.openai.com/v1", "minimal"),
        ("openai/gpt-5-mini", "https://openrouter.ai/api/v1", "none"),
    ] {
        let text = format!(
            "{LLM}model = \"{model}\"\nbase_url = \"{base}\"\nreasoning_effort = \"{effort}\""
        );
        assert!(check(&text).is_ok(), "{model} {effort}");
    }
}

#[test]
fn the_limit_field_and_first_token_timeout_are_checked() {
    let text = format!("{LLM}model = \"m\"\nmax_tokens_field = \"max_new_tokens\"");
    assert_eq!(invalid_key(&text), "llm.openai_compatible.max_tokens_field");
    let text = format!("{LLM}model = \"m\"\nfirst_token_timeout_ms = 0");
    assert_eq!(
        invalid_key(&text),
        "llm.openai_compatible.first_token_timeout_ms"
    );
}
