//! `[stt] provider = "local"` (Whisper tiny.en on ONNX Runtime): a model
//! folder that lacks files is refused at startup with their names and the
//! command that fetches them; a language other than English is refused; with
//! no agent file the mock STT stays when the local one cannot run.

use brisvox_server::agent::{AgentSettings, SttProvider};
use brisvox_server::engine::EngineCallHandler;

/// An agent with the local STT and no models for the VAD or the turn analyzer.
fn agent(extra: &str) -> AgentSettings {
    let text = format!(
        "[stt]\nprovider = \"local\"\n{extra}\n[vad]\ndetector = \"energy\"\n[turn]\nanalyzer = \"always_complete\"\n"
    );
    AgentSettings::from_toml_str(&text, &|_| None).expect("the agent file parses")
}

fn setup_error(agent: &AgentSettings) -> String {
    match EngineCallHandler::new(agent) {
        Ok(_) => panic!("the engine accepted an STT it cannot run"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_incomplete_model_folder_names_the_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("encoder.onnx"), b"not a model").unwrap();
    let extra = format!(
        "[stt.local]\nmodel_path = {:?}\n",
        dir.path().display().to_string()
    );
    let error = setup_error(&agent(&extra));
    assert!(error.contains("decoder.onnx"), "{error}");
    assert!(error.contains("tokenizer.json"), "{error}");
    assert!(!error.contains("encoder.onnx"), "{error}");
    assert!(
        error.contains("scripts/fetch-models.sh --whisper"),
        "{error}"
    );
}

#[test]
fn a_language_other_than_english_is_refused() {
    let mut settings = agent("");
    settings.language = brisvox_server::agent::Language::Tr;
    let error = setup_error(&settings);
    assert!(error.contains("English only"), "{error}");
}

#[test]
fn the_defaults_keep_the_mock_stt_when_the_local_one_cannot_run() {
    let mut defaults = AgentSettings::mock_defaults();
    defaults.stt.local = Some(brisvox_server::agent::LocalModelSettings {
        model_path: "/nonexistent/whisper".to_owned(),
        voice: None,
    });
    brisvox_server::local_stt::prefer_local_stt(&mut defaults);
    assert_eq!(defaults.stt.provider, SttProvider::Mock);
}
