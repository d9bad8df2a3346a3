//! Smart Turn v3.2: the end-of-turn model, from caller audio to a verdict.
//!
//! The pieces, in the order the audio goes through them:
//!
//! - [`features`]: Whisper-style log-mel features of the last 8 s, in Rust,
//!   bit-for-bit the numbers Pipecat's numpy reference gives (goldens in
//!   `tests/golden/smart_turn/`).
//! - [`model`]: the ONNX Runtime session(s), loaded once per process, with the
//!   execution settings that reproduce the reference probabilities; its
//!   attention softmax runs on our own kernel, bit for bit ONNX Runtime's
//!   (`qsoftmax.rs`), its keys and values enter their attention products as
//!   int8 (`qsigned.rs`), and its GELUs and projections are lookup tables that
//!   ONNX Runtime fills at load (`qlookup.rs`).
//! - [`ring`]: each call's last 8 s of audio, and where the current turn began,
//!   so a snapshot covers the span Pipecat would analyse.
//! - [`service`]: the executor, a pool of its own so analyses never hold up the
//!   VAD's pool; refused and late analyses are failures, counted.

pub mod features;
pub mod model;
mod qlookup;
mod qsigned;
mod qsoftmax;
pub mod ring;
pub mod service;

pub use features::{
    FEATURES_LEN, FeatureError, FeatureExtractor, N_FRAMES, N_MELS, SAMPLE_RATE_HZ, WINDOW_SAMPLES,
};
pub use model::{
    COMPLETE_THRESHOLD, DEFAULT_INTRA_THREADS, GraphOptimization, SessionOptions, SmartTurn,
    SmartTurnConfig, SmartTurnError, SoftmaxKernel, Verdict,
};
pub use ring::{
    DEFAULT_PRE_SPEECH_MS, FRAME_SAMPLES, RING_SAMPLES, SmartTurnRing, snapshot_buffer,
};
pub use service::{
    DEFAULT_EXECUTOR_THREADS, PendingVerdict, SmartTurnService, SmartTurnServiceConfig,
    SmartTurnStats,
};
