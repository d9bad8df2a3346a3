//! An unknown key anywhere in the agent file is an error that names it.

use brisvox_server::agent::{AgentError, AgentSettings};

fn parse_err(text: &str) -> String {
    match AgentSettings::from_toml_str(text, &|_| Some("x".into())) {
        Err(e @ AgentError::Parse { .. }) => e.to_string(),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn top_level_section_and_provider_tables() {
    let cases = [
        ("promt = \"hi\"", "promt"),
        ("[vad]\nthreshold = 0.5", "threshold"),
        ("[limits]\nmax_call = 3", "max_call"),
        ("[stt.mock]\nfinal_latency = 3", "final_latency"),
        (
            "[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"m\"\napi_key = \"${K}\"\nreasoning = \"none\"",
            "reasoning",
        ),
        (
            "[server.auth.call]\ntoken = \"${T}\"\nheader = \"x\"",
            "header",
        ),
        ("[telefony]\nx = 1", "telefony"),
        ("[telephony]\nx = 1", "x"),
        ("[telephony.twilio]\nauthtoken = \"${T}\"", "authtoken"),
    ];
    for (text, key) in cases {
        let msg = parse_err(text);
        assert!(
            msg.contains(&format!("unknown field `{key}`")),
            "{text}\n=> {msg}"
        );
        assert!(
            msg.contains("expected"),
            "the allowed keys are listed: {msg}"
        );
    }
}
