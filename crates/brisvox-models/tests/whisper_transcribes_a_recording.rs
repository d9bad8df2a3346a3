//! Whisper tiny.en on ONNX Runtime (the graphs of scripts/whisper-to-onnx.py)
//! transcribes recorded speech, with and without a draft (right or wrong). Needs
//! `scripts/fetch-models.sh --whisper`; skips without the model unless `CI`
//! is set (CI runs without the Whisper model, so this runs in
//! scripts/test-local-stt.sh and on developer machines).

use std::path::PathBuf;

use brisvox_models::runtime;
use brisvox_models::whisper::{WHISPER_DIR, Whisper, WhisperSettings, missing_files};

fn model_dir() -> Option<PathBuf> {
    let dir = runtime::model_dir_candidates()
        .into_iter()
        .map(|d| d.join(WHISPER_DIR))
        .find(|d| missing_files(d).is_none());
    if dir.is_none() {
        assert!(
            !runtime::models_required(),
            "the Whisper model is missing: run scripts/fetch-models.sh --whisper"
        );
        eprintln!("skipped: no Whisper model (scripts/fetch-models.sh --whisper)");
    }
    dir
}

fn fixture(name: &str) -> Vec<f32> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/{name}.wav"));
    let audio = brisvox_audio::wav::read_wav(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(audio.spec.sample_rate_hz, 16_000);
    audio
        .samples
        .iter()
        .map(|&s| f32::from(s) / 32_768.0)
        .collect()
}

#[test]
fn a_librivox_sentence_is_transcribed_the_same_with_any_draft() {
    let Some(dir) = model_dir() else { return };
    let whisper = Whisper::load(WhisperSettings::new(dir)).unwrap();
    let audio = fixture("librivox_0930");
    let full = whisper.transcribe(&audio, &[]).unwrap();
    assert_eq!(full.text, "He might even have been made amiable himself.");
    assert_eq!(whisper.tokenizer().decode(&full.tokens), full.text);
    // Its own transcript, the start of it, or another sentence's as the draft.
    let other = whisper.transcribe(&fixture("librivox_0880"), &[]).unwrap();
    for draft in [&full.tokens[..], &full.tokens[..3], &other.tokens[..]] {
        let again = whisper.transcribe(&audio, draft).unwrap();
        assert_eq!(again.text, full.text, "draft {draft:?}");
    }
}

#[test]
fn silence_gives_no_words() {
    let Some(dir) = model_dir() else { return };
    let whisper = Whisper::load(WhisperSettings::new(dir)).unwrap();
    let t = whisper.transcribe(&vec![0.0; 16_000], &[]).unwrap();
    assert!(t.text.split_whitespace().count() <= 1, "{:?}", t.text);
}
