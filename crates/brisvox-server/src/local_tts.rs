//! `[tts] provider = "local"`: which local voice speaks, and the Piper voice
//! from `brisvox-models` wired into `brisvox-providers`' [`PiperTts`].
//!
//! `[tts.local] voice`:
//! - `auto` (default): the Piper voice `en_US-joe-medium` when its files are in
//!   the models folder and the language is English, else `espeak-ng`'s own
//!   voice; an explicit `model_path` that does not load is an error;
//! - `piper`: the Piper voice, or an error at startup;
//! - `espeak`: `espeak-ng`'s voice.
//!
//! Both need the `espeak-ng` program (Piper for its phonemes). The choice is
//! logged once, when the handler is built.

use std::path::PathBuf;
use std::sync::Arc;

use brisvox_models::piper::{PiperSettings, PiperVoice, voice_files_present};
use brisvox_providers::local::{EspeakConfig, EspeakTts, PhonemeVoice, PiperConfig, PiperTts};
use brisvox_providers::{BoxFuture, ProviderError, TtsProvider};

use crate::agent::{AgentSettings, Language, LocalVoice};
use crate::setup_error::EngineSetupError;

/// The Piper model as a [`PhonemeVoice`]: syntheses on the voice's own pool.
#[derive(Debug)]
pub struct PiperPhonemeVoice {
    voice: Arc<PiperVoice>,
    name: String,
}

impl PiperPhonemeVoice {
    /// Wraps a loaded voice.
    pub fn new(voice: Arc<PiperVoice>) -> Self {
        let stem = voice
            .model_path()
            .file_stem()
            .map_or_else(|| "voice".into(), |s| s.to_string_lossy());
        let name = format!("piper:{stem}");
        PiperPhonemeVoice { voice, name }
    }
}

impl PhonemeVoice for PiperPhonemeVoice {
    fn name(&self) -> &str {
        &self.name
    }

    fn espeak_voice(&self) -> &str {
        &self.voice.config().espeak_voice
    }

    fn speak(
        &self,
        phonemes: &str,
        rate_hz: u32,
    ) -> BoxFuture<'static, Result<Vec<i16>, ProviderError>> {
        let job = self.voice.synthesize(phonemes, rate_hz);
        Box::pin(async move {
            let failed = |e: brisvox_models::piper::PiperError| ProviderError::Server {
                status: 500,
                reason: e.to_string().into(),
            };
            job.map_err(failed)?.await.map_err(failed)
        })
    }
}

/// What `[tts] provider = "local"` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalVoiceChoice {
    /// The Piper voice at this model path.
    Piper(PathBuf),
    /// `espeak-ng`'s voice (its name), and why.
    Espeak {
        /// The espeak-ng voice (`en-us`, `tr`).
        voice: &'static str,
        /// Why this one (for the log).
        why: &'static str,
    },
}

/// Decides the local voice from the agent file and the files present.
pub fn choose_voice(agent: &AgentSettings) -> Result<LocalVoiceChoice, EngineSetupError> {
    let local = agent.tts.local.clone().unwrap_or_default();
    let present = voice_files_present(&piper_settings(local.model_path.as_deref()));
    choose_voice_given(agent, present)
}

/// [`choose_voice`] when the default Piper voice files are (or are not)
/// present in the models folder.
pub fn choose_voice_given(
    agent: &AgentSettings,
    piper_files_present: bool,
) -> Result<LocalVoiceChoice, EngineSetupError> {
    let local = agent.tts.local.clone().unwrap_or_default();
    let espeak_voice = match agent.language {
        Language::En => "en-us",
        Language::Tr => "tr",
    };
    let settings = piper_settings(local.model_path.as_deref());
    let piper = || -> Result<LocalVoiceChoice, EngineSetupError> {
        let (model, _) = settings.resolve_paths().map_err(model_error)?;
        Ok(LocalVoiceChoice::Piper(model))
    };
    match local.voice {
        LocalVoice::Espeak => Ok(LocalVoiceChoice::Espeak {
            voice: espeak_voice,
            why: "[tts.local] voice = \"espeak\"",
        }),
        LocalVoice::Piper if agent.language != Language::En => Err(EngineSetupError::Model {
            what: "Piper voice",
            reason: "the local Piper voice speaks English only; use voice = \"espeak\" for this language".to_owned(),
        }),
        LocalVoice::Piper => piper(),
        LocalVoice::Auto if agent.language != Language::En => Ok(LocalVoiceChoice::Espeak {
            voice: espeak_voice,
            why: "the Piper voice speaks English only",
        }),
        LocalVoice::Auto if local.model_path.is_some() => piper(),
        LocalVoice::Auto if piper_files_present => piper(),
        LocalVoice::Auto => Ok(LocalVoiceChoice::Espeak {
            voice: espeak_voice,
            why: "the Piper voice files are not in the models folder (scripts/fetch-models.sh fetches them)",
        }),
    }
}

fn piper_settings(model_path: Option<&str>) -> PiperSettings {
    PiperSettings {
        model_path: model_path.map(PathBuf::from),
        ..PiperSettings::default()
    }
}

fn model_error(e: impl std::fmt::Display) -> EngineSetupError {
    EngineSetupError::Model {
        what: "Piper voice",
        reason: e.to_string(),
    }
}

fn program_error(e: impl std::fmt::Display) -> EngineSetupError {
    EngineSetupError::LocalProgram {
        reason: e.to_string(),
    }
}

/// Builds the local TTS the agent file asks for (loading the Piper voice,
/// about a second) and checks the `espeak-ng` program; logs the choice once.
pub fn build(agent: &AgentSettings) -> Result<Arc<dyn TtsProvider>, EngineSetupError> {
    match choose_voice(agent)? {
        LocalVoiceChoice::Piper(model) => {
            let local = agent.tts.local.clone().unwrap_or_default();
            let settings = piper_settings(local.model_path.as_deref());
            let voice = PiperVoice::load(settings).map_err(model_error)?;
            let tts = PiperTts::new(
                Arc::new(PiperPhonemeVoice::new(Arc::new(voice))),
                PiperConfig::default(),
            );
            tts.probe_blocking().map_err(program_error)?;
            tracing::info!(voice = tts.voice_name(), model = %model.display(), "local TTS: the Piper voice");
            Ok(Arc::new(tts))
        }
        LocalVoiceChoice::Espeak { voice, why } => {
            let tts = EspeakTts::new(EspeakConfig {
                voice: voice.to_owned(),
                ..EspeakConfig::default()
            });
            tts.probe_blocking().map_err(program_error)?;
            tracing::info!(voice, why, "local TTS: espeak-ng");
            Ok(Arc::new(tts))
        }
    }
}
