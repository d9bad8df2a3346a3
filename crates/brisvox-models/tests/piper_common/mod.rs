//! Shared by the Piper tests: the voice from the models folder (skipped with a
//! printed reason when it is missing and CI is unset; a failure under CI), and
//! the piper-phonemize goldens.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, OnceLock};

use brisvox_models::piper::{PiperSettings, PiperVoice};
use brisvox_models::runtime;

/// The shared voice, or `None` (skipped) when it is missing and CI is unset.
pub fn voice_or_skip(test: &str) -> Option<Arc<PiperVoice>> {
    static VOICE: OnceLock<Result<Arc<PiperVoice>, String>> = OnceLock::new();
    let loaded = VOICE.get_or_init(|| {
        PiperVoice::load(PiperSettings::default())
            .map(Arc::new)
            .map_err(|e| e.to_string())
    });
    match loaded {
        Ok(v) => Some(Arc::clone(v)),
        Err(e) if !runtime::models_required() => {
            eprintln!("SKIPPED {test} (Piper voice or ONNX Runtime missing, CI unset): {e}");
            None
        }
        Err(e) => panic!("CI is set and the Piper voice does not load: {e}"),
    }
}

/// One sentence as piper-phonemize gives it.
#[derive(Debug, Clone)]
pub struct GoldenSentence {
    pub phonemes: String,
    pub ids: Vec<i64>,
}

/// One text and its sentences.
#[derive(Debug, Clone)]
pub struct GoldenCase {
    pub text: String,
    pub sentences: Vec<GoldenSentence>,
}

/// `tests/golden/piper/ids.json` (made by scripts/goldens/make-piper-goldens.sh).
pub fn goldens() -> Vec<GoldenCase> {
    let text = include_str!("../golden/piper/ids.json");
    let doc: serde_json::Value = serde_json::from_str(text).expect("goldens are JSON");
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| GoldenCase {
            text: c["text"].as_str().expect("text").to_owned(),
            sentences: c["sentences"]
                .as_array()
                .expect("sentences")
                .iter()
                .map(|s| GoldenSentence {
                    phonemes: s["phonemes"].as_str().expect("phonemes").to_owned(),
                    ids: s["ids"]
                        .as_array()
                        .expect("ids")
                        .iter()
                        .map(|i| i.as_i64().expect("id"))
                        .collect(),
                })
                .collect(),
        })
        .collect()
}
