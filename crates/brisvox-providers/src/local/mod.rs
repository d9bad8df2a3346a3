//! Local providers that need no key and no network, for demos and tests.
//!
//! - [`LocalRulesLlm`]: a built-in rules agent (not a language model) that
//!   echoes what it heard and answers a few intents, streamed word by word with
//!   a realistic delay.
//! - [`EspeakTts`]: speech from the `espeak-ng` program (Debian package
//!   `espeak-ng`), run as a separate process per text chunk.
//! - [`PiperTts`]: a neural voice (Piper) speaking phonemes from `espeak-ng`
//!   ([`phonemes`]) through a [`PhonemeVoice`].
//! - [`LocalStt`]: speech recognition at the VAD stop on the provider's own
//!   threads, over a [`Recognizer`]; with the cargo feature `local-stt`,
//!   [`WhisperRecognizer`] (Whisper tiny.en through CTranslate2).

mod chunk_session;
mod llm;
pub mod phonemes;
mod piper;
mod stt;
mod tts;
#[cfg(feature = "local-stt")]
mod whisper;

pub use llm::{Intent, LocalLlmConfig, LocalRulesLlm, MAX_ECHO_WORDS, detect_intents, reply};
pub use piper::{PhonemeVoice, PiperConfig, PiperStats, PiperTts};
pub use stt::{
    LOCAL_STT_FEATURE, LOCAL_STT_RUN_COMMAND, LocalStt, LocalSttError, LocalSttOptions,
    LocalSttStats, RECOGNIZER_RATE_HZ, Recognizer, RecognizerError, WHISPER_MODEL_DIR,
    WHISPER_MODEL_FILES, check_whisper_model_dir,
};
pub use tts::{ESPEAK_PACKAGE, EspeakConfig, EspeakStats, EspeakTts, LocalTtsError};
#[cfg(feature = "local-stt")]
pub use whisper::{WhisperConfig, WhisperRecognizer};
