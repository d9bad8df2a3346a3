//! brisvox-models: model inference for the call engine.
//!
//! Silero VAD (batched across calls), Smart Turn v3.2, the Piper voice and Whisper run through ONNX Runtime
//! (the `ort` crate, loading the library extracted from the pinned onnxruntime
//! wheel) on dedicated OS-thread pools, never on tokio workers.

pub mod mel;
mod onnx_wire;
pub mod piper;
pub mod pool;
pub mod runtime;
pub mod smart_turn;
pub mod vad;
pub mod whisper;
