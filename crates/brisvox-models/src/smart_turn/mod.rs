//! Smart Turn v3.2: the end-of-turn model, from caller audio to a verdict.
//!
//! The pieces, in the order the audio goes through them:
//!
//! - [`features`]: Whisper-style log-mel features of the last 8 s, in Rust,
//!   bit-for-bit the numbers Pipecat's numpy reference gives (goldens in
//!   `tests/golden/smart_turn/`).

pub mod features;

pub use features::{
    FEATURES_LEN, FeatureError, FeatureExtractor, N_FRAMES, N_MELS, SAMPLE_RATE_HZ, WINDOW_SAMPLES,
};
