//! A literal API key or token in the agent file is refused, naming the key.

use brisvox_server::agent::{AgentError, AgentSettings};

#[test]
fn literal_keys_and_tokens() {
    let cases = [
        (
            "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"dg-secret-1\"",
            "stt.deepgram.api_key",
        ),
        (
            "[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"m\"\napi_key = \"sk-abc\"",
            "llm.openai_compatible.api_key",
        ),
        // Refused even in a table of a provider that is not selected.
        (
            "[tts.cartesia]\nmodel = \"sonic\"\napi_key = \"ck-1\"",
            "tts.cartesia.api_key",
        ),
        (
            "[server.auth.metrics]\ntoken = \"hunter2\"",
            "server.auth.metrics.token",
        ),
    ];
    for (text, key) in cases {
        let e = AgentSettings::from_toml_str(text, &|_| Some("x".into())).unwrap_err();
        assert!(
            matches!(e, AgentError::LiteralSecret { key: ref k } if k == key),
            "{text}: {e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(key) && msg.contains("environment variable"),
            "{msg}"
        );
        assert!(!msg.contains("dg-secret") && !msg.contains("sk-abc") && !msg.contains("hunter2"));
    }
}
