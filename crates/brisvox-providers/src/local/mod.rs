//! Local providers that need no key and no network, for demos and tests.
//!
//! - [`LocalRulesLlm`]: a built-in rules agent (not a language model) that
//!   echoes what it heard and answers a few intents, streamed word by word with
//!   a realistic delay.
//! - [`EspeakTts`]: speech from the `espeak-ng` program (Debian package
//!   `espeak-ng`), run as a separate process per text chunk.
//! - [`PiperTts`]: a neural voice (Piper) speaking phonemes from `espeak-ng`
//!   ([`phonemes`]) through a [`PhonemeVoice`].
//! - [`LocalStt`]: speech recognition on the provider's own threads, while
//!   the caller speaks and at the VAD stop, over a [`Recognizer`] (the server
//!   wires in Whisper tiny.en on ONNX Runtime from `brisvox-models`, which
//!   this crate does not depend on).

mod chunk_session;
mod llm;
pub mod phonemes;
mod piper;
mod stt;
mod stt_session;
mod tts;

pub use llm::{Intent, LocalLlmConfig, LocalRulesLlm, MAX_ECHO_WORDS, detect_intents, reply};
pub use piper::{
    LEAD_IN_KEEP_MS, LEAD_IN_THRESHOLD, PhonemeVoice, PiperConfig, PiperStats, PiperTts,
    without_lead_in,
};
pub use stt::{
    LocalStt, LocalSttError, LocalSttOptions, LocalSttStats, RECOGNIZER_RATE_HZ, Recognized,
    Recognizer, RecognizerError,
};
pub use tts::{ESPEAK_PACKAGE, EspeakConfig, EspeakStats, EspeakTts, LocalTtsError};
