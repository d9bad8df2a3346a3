//! A local neural voice: Piper (VITS) voices such as `en_US-joe-medium`, run
//! on ONNX Runtime.
//!
//! This module is the synthesis core: the voice's JSON ([`VoiceConfig`]),
//! phonemes to ids ([`VoiceConfig::phoneme_ids`]) and the model
//! ([`PiperVoice`], on its own inference pool). The phonemes themselves come
//! from the `espeak-ng` program, run by the TTS provider in
//! `brisvox-providers` (`local::PiperTts`) as a separate process, so no
//! espeak-ng code is linked here.

mod config;
mod voice;

pub use config::{BOS, EOS, PAD, PhonemeIds, VoiceConfig, VoiceConfigError};
pub use voice::{
    PIPER_CONFIG_FILE, PIPER_VOICE_FILE, PiperError, PiperSettings, PiperVoice, SynthesisJob,
    json_next_to, resample, to_pcm16, voice_files_present,
};
