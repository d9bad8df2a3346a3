//! A value outside what a key allows is an error naming the key and what is
//! allowed.

use brisvox_server::agent::{AgentError, AgentSettings};

fn err(text: &str) -> AgentError {
    AgentSettings::from_toml_str(text, &|_| Some("x".into())).unwrap_err()
}

#[test]
fn unknown_choices_list_the_allowed_ones() {
    let cases = [
        ("language = \"fr\"", ["fr", "en", "tr"]),
        (
            "[stt]\nprovider = \"whisper\"",
            ["whisper", "deepgram", "local"],
        ),
        (
            "[tts]\nprovider = \"polly\"",
            ["polly", "cartesia", "deepgram_aura"],
        ),
        ("[turn]\npolicy = \"smart\"", ["smart", "adaptive", "fixed"]),
    ];
    for (text, words) in cases {
        let msg = err(text).to_string();
        for w in words {
            assert!(msg.contains(w), "{text}: {msg} lacks {w}");
        }
    }
}

#[test]
fn out_of_range_values_name_the_key() {
    let cases = [
        ("[vad]\nstart_threshold = 1.5", "vad.start_threshold"),
        ("[vad]\nstop_threshold = 0.9", "vad.stop_threshold"),
        ("[limits]\nmax_calls = 0", "limits.max_calls"),
        (
            "[limits]\nshed_target_load_percent = 100",
            "limits.shed_target_load_percent",
        ),
        (
            "[limits]\nidle_prompt_after_s = 30\nidle_end_after_s = 10",
            "limits.idle_end_after_s",
        ),
        ("[server]\nbind = \"localhost\"", "server.bind"),
        (
            "[server]\nmax_message_bytes = 10",
            "server.max_message_bytes",
        ),
        (
            "[server.failed_auth]\nwindow_s = 0",
            "server.failed_auth.window_s",
        ),
        (
            "[server.failed_auth]\nmax_addresses = 1",
            "server.failed_auth.max_addresses",
        ),
        ("prompt = \"  \"", "prompt"),
        (
            "[turn]\npolicy = \"fixed\"\nsilence_ms = 20",
            "turn.silence_ms",
        ),
    ];
    for (text, key) in cases {
        match err(text) {
            AgentError::InvalidValue {
                key: k, allowed, ..
            } => {
                assert_eq!(k, key, "{text}");
                assert!(!allowed.is_empty());
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn keys_of_the_other_policy_and_missing_provider_tables() {
    assert!(matches!(
        err("[turn]\npolicy = \"adaptive\"\nsilence_ms = 500"),
        AgentError::NotForPolicy {
            key: "turn.silence_ms",
            policy: "fixed"
        }
    ));
    let e = err("[tts]\nprovider = \"elevenlabs\"");
    assert!(
        matches!(e, AgentError::MissingSection { ref key, .. } if key == "tts.elevenlabs"),
        "{e:?}"
    );
    assert!(e.to_string().contains("[tts.elevenlabs]"));
    let wrong_type = err("[limits]\nmax_calls = \"many\"").to_string();
    assert!(wrong_type.contains("max_calls"), "{wrong_type}");
}
