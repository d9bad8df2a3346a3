//! `[stt] provider = "local"`: Whisper tiny.en on this machine, through
//! `brisvox-providers`' [`LocalStt`] (recognition at the VAD stop on its own
//! threads).
//!
//! The recognizer is compiled only with the cargo feature `local-stt`
//! (CTranslate2 is built from C++ source, which takes many minutes), so CI
//! builds without it; `scripts/run.sh` builds with it. Without the feature the
//! provider is refused at startup with an error naming the feature and that
//! command. The model is `models/whisper-tiny.en/` (`scripts/fetch-models.sh
//! --whisper`), or the folder in `[stt.local] model_path`.
//!
//! With no agent file, [`prefer_local_stt`] switches the embedded defaults'
//! mock STT to the local one when this build has the feature and the model is
//! present, and logs why when it does not.

use std::path::PathBuf;
use std::sync::Arc;

use brisvox_providers::local::{LocalSttError, WHISPER_MODEL_DIR, check_whisper_model_dir};

use crate::agent::{AgentSettings, Language, SttProvider};
use crate::setup_error::EngineSetupError;

/// Whether this build has the local recognizer (the cargo feature `local-stt`).
pub const BUILT: bool = cfg!(feature = "local-stt");

/// What a build without the feature offers instead, and how to get it.
const NOT_BUILT_AVAILABLE: &str = "mock, deepgram, openai_transcribe; `local` needs a binary built with the cargo feature `local-stt` (scripts/run.sh builds one)";

/// The Whisper model folder for `agent`: `[stt.local] model_path`, else
/// `whisper-tiny.en` in the first models folder that has one (the same search
/// as the other models: `BRISVOX_MODELS_DIR`, or `models/` above the current
/// directory, the executable or the source tree), else in the first candidate.
pub fn model_dir(agent: &AgentSettings) -> PathBuf {
    if let Some(local) = &agent.stt.local {
        return PathBuf::from(&local.model_path);
    }
    let candidates = brisvox_models::runtime::model_dir_candidates();
    candidates
        .iter()
        .map(|dir| dir.join(WHISPER_MODEL_DIR))
        .find(|dir| dir.is_dir())
        .or_else(|| candidates.first().map(|dir| dir.join(WHISPER_MODEL_DIR)))
        .unwrap_or_else(|| PathBuf::from("models").join(WHISPER_MODEL_DIR))
}

/// Why `agent` cannot use the local STT on this build and machine, if it cannot.
pub fn unavailable_because(agent: &AgentSettings) -> Option<String> {
    if !BUILT {
        return Some(LocalSttError::NotBuilt.to_string());
    }
    if agent.language != Language::En {
        return Some(
            "the local STT (Whisper tiny.en) understands English only: set language = \"en\" or choose another [stt] provider"
                .to_owned(),
        );
    }
    check_whisper_model_dir(&model_dir(agent))
        .err()
        .map(|e| e.to_string())
}

/// With no agent file: use the local STT instead of the mock when it can run,
/// and log the choice either way.
pub fn prefer_local_stt(agent: &mut AgentSettings) {
    if agent.stt.provider != SttProvider::Mock {
        return;
    }
    match unavailable_because(agent) {
        None => {
            agent.stt.provider = SttProvider::Local;
            tracing::info!(model = %model_dir(agent).display(), "STT: local Whisper tiny.en");
        }
        Some(reason) => {
            tracing::info!(%reason, "STT: mock (the local STT is not available)");
        }
    }
}

/// Builds the local STT provider, loading the model (blocking: at startup).
///
/// Without the cargo feature this is [`EngineSetupError::ProviderUnavailable`]
/// naming the feature and `scripts/run.sh`; a language other than English or
/// an incomplete model folder is [`EngineSetupError::LocalProgram`].
pub fn build(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    if !BUILT {
        return Err(EngineSetupError::ProviderUnavailable {
            section: "stt",
            provider: SttProvider::Local.as_str().to_owned(),
            available: NOT_BUILT_AVAILABLE,
        });
    }
    if let Some(reason) = unavailable_because(agent) {
        return Err(EngineSetupError::LocalProgram { reason });
    }
    load(agent)
}

#[cfg(feature = "local-stt")]
fn load(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    use brisvox_providers::local::{LocalStt, LocalSttOptions, WhisperConfig, WhisperRecognizer};

    let fail = |e: LocalSttError| EngineSetupError::LocalProgram {
        reason: e.to_string(),
    };
    let dir = model_dir(agent);
    let recognizer = WhisperRecognizer::load(&dir, &WhisperConfig::default()).map_err(fail)?;
    let stt = LocalStt::new(Arc::new(recognizer), LocalSttOptions::default()).map_err(fail)?;
    tracing::info!(model = %dir.display(), "local STT loaded");
    Ok(Arc::new(stt))
}

#[cfg(not(feature = "local-stt"))]
fn load(
    _agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    // Unreachable in practice: `build` refuses first when the feature is off.
    Err(EngineSetupError::LocalProgram {
        reason: LocalSttError::NotBuilt.to_string(),
    })
}
