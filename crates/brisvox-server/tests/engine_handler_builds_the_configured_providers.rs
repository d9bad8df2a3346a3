//! The engine behind `brisvox serve` builds the providers the agent file names:
//! the OpenAI-compatible LLM, Cartesia and ElevenLabs with keys from the
//! environment, and a clear error for a provider this build does not run or a
//! vendor section that is missing. (Energy VAD and a fixed verdict: no model files.)

use brisvox_server::agent::AgentSettings;
use brisvox_server::engine::EngineCallHandler;

fn env(name: &str) -> Option<String> {
    name.ends_with("_API_KEY")
        .then(|| format!("test-key-for-{name}"))
}

fn agent(providers: &str) -> AgentSettings {
    let text = format!(
        "{providers}\n[vad]\ndetector = \"energy\"\n[turn]\nanalyzer = \"always_complete\"\n"
    );
    AgentSettings::from_toml_str(&text, &env).expect("a valid agent file")
}

#[test]
fn vendor_llm_and_tts_are_built_from_their_sections() {
    for tts in [
        "[tts]\nprovider = \"cartesia\"\n[tts.cartesia]\nmodel = \"sonic-3.6\"\nvoice = \"v1\"\napi_key = \"${CARTESIA_API_KEY}\"",
        "[tts]\nprovider = \"elevenlabs\"\n[tts.elevenlabs]\nmodel = \"eleven_flash_v2_5\"\nvoice = \"v2\"\napi_key = \"${ELEVENLABS_API_KEY}\"",
    ] {
        let a = agent(&format!(
            "[llm]\nprovider = \"openai_compatible\"\n[llm.openai_compatible]\nmodel = \"gpt-4o-mini\"\napi_key = \"${{OPENAI_API_KEY}}\"\nbase_url = \"http://127.0.0.1:9/v1\"\n{tts}"
        ));
        let handler = EngineCallHandler::new(&a).expect("providers build");
        let shown = format!("{handler:?}");
        assert!(!shown.contains("test-key-for"), "no key in Debug: {shown}");
    }
}

#[test]
fn deepgram_stt_and_aura_are_built_from_their_sections() {
    let a = agent(
        "[stt]\nprovider = \"deepgram\"\n[stt.deepgram]\napi_key = \"${DEEPGRAM_API_KEY}\"\n\
         [tts]\nprovider = \"deepgram_aura\"\n[tts.deepgram_aura]\nmodel = \"aura-2-thalia-en\"\napi_key = \"${DEEPGRAM_API_KEY}\"",
    );
    EngineCallHandler::new(&a).expect("providers build");
}

#[test]
fn batch_transcription_is_built_with_or_without_a_key() {
    for key in ["api_key = \"${OPENAI_API_KEY}\"\n", ""] {
        let a = agent(&format!(
            "[stt]\nprovider = \"openai_transcribe\"\n[stt.openai_transcribe]\n{key}base_url = \"http://127.0.0.1:9/v1\""
        ));
        EngineCallHandler::new(&a).expect("provider builds");
    }
}
