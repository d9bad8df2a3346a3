//! With `[tts] provider = "local"` and no `[tts.local]`, a models folder
//! without the Piper voice gives espeak-ng's voice (and says why), and with
//! the voice present gives Piper; `voice = "espeak"` wins either way.

use brisvox_server::agent::AgentSettings;
use brisvox_server::local_tts::{self, LocalVoiceChoice};

fn agent(extra: &str) -> AgentSettings {
    let text = format!("[tts]\nprovider = \"local\"\n{extra}");
    AgentSettings::from_toml_str(&text, &|_| None).unwrap()
}

#[test]
fn no_voice_files_means_espeak_and_says_how_to_fetch_them() {
    match local_tts::choose_voice_given(&agent(""), false).unwrap() {
        LocalVoiceChoice::Espeak { voice, why } => {
            assert_eq!(voice, "en-us");
            assert!(why.contains("fetch-models"), "{why}");
        }
        other => panic!("expected espeak-ng, got {other:?}"),
    }
}

#[test]
fn voice_files_present_means_piper_unless_espeak_is_asked_for() {
    let given = agent("[tts.local]\nmodel_path = \"voices/joe.onnx\"\n");
    let choice = local_tts::choose_voice_given(&given, true).unwrap();
    assert_eq!(choice, LocalVoiceChoice::Piper("voices/joe.onnx".into()));
    let espeak = agent("[tts.local]\nvoice = \"espeak\"\n");
    let choice = local_tts::choose_voice_given(&espeak, true).unwrap();
    assert!(
        matches!(choice, LocalVoiceChoice::Espeak { .. }),
        "{choice:?}"
    );
}
