//! Voice activity detection: the Silero VAD model, its batched service and the
//! sans-IO stop rule.
//!
//! - [`silero`]: the model (one shared ONNX Runtime session set per process) and the
//!   per-stream recurrent state; single windows and explicit batches.
//! - [`service`]: runs the windows of many streams as one batched model run on the
//!   inference pool's High line and hands each stream its probability.
//! - [`linger`]: when a batch job waits a few milliseconds for more windows
//!   (the adaptive linger; sans-IO).
//! - [`detector`]: turns one probability per window into speech start / stop /
//!   falling events. No clock, no I/O.
//! - [`window`]: cuts a stream's PCM16 frames into numbered f32 windows.
//!
//! A call's VAD, put together: frames -> [`window::WindowAssembler`] ->
//! [`service::VadStream::submit`] -> the stream's sink gets
//! [`service::WindowOutcome`] `{ seq, probability }` -> [`detector::VadDetector::handle_seq`]
//! -> [`detector::VadEvent`]s.

pub mod detector;
mod fold;
pub mod linger;
mod native;
pub mod service;
pub mod silero;
pub mod window;

use crate::pool::PoolError;
use crate::runtime::RuntimeError;

/// Why a VAD window produced no probability.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum VadError {
    /// The model or ONNX Runtime could not be loaded or failed to run.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A window had the wrong number of samples for its rate.
    #[error("a Silero window at {rate_hz} Hz takes {expected} samples, got {actual}")]
    WindowLength {
        /// The stream's sample rate.
        rate_hz: u32,
        /// Samples a window must have.
        expected: usize,
        /// Samples given.
        actual: usize,
    },
    /// A state or window of one sample rate met a batch or service of another.
    #[error("sample rate mismatch: expected {expected_hz} Hz, got {actual_hz} Hz")]
    RateMismatch {
        /// The rate of the batch or service.
        expected_hz: u32,
        /// The rate offered.
        actual_hz: u32,
    },
    /// More rows than the batch was built for.
    #[error("the batch is full ({capacity} rows)")]
    BatchFull {
        /// The batch's row capacity.
        capacity: usize,
    },
    /// The model file could not be read, or its batch-folded graph not built from it.
    #[error("Silero model {path}: {reason}")]
    ModelFile {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The model's inputs or outputs are not what this code was written for.
    #[error("unexpected Silero model interface: {0}")]
    ModelInterface(String),
    /// The service's window queue is full (reject newest).
    #[error("the VAD service queue is full ({capacity} windows waiting)")]
    QueueFull {
        /// The queue's capacity in windows.
        capacity: usize,
    },
    /// The inference pool refused or dropped the batch job.
    #[error(transparent)]
    Pool(#[from] PoolError),
}

impl From<ort::Error> for VadError {
    fn from(e: ort::Error) -> Self {
        VadError::Runtime(RuntimeError::from(e))
    }
}
