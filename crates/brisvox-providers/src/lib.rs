//! brisvox-providers: the STT, LLM and TTS interfaces the engine talks to, and
//! mock providers for deterministic tests and benchmarks.
//!
//! # The model
//!
//! - **Sessions are channel pairs.** A streaming STT or TTS provider's `connect`
//!   returns a session: bounded input and event queues between the engine and a
//!   provider task that speaks the vendor's protocol. The engine side
//!   ([`SttSession`], [`TtsSession`]) splits into a sender (cheap to clone) and an
//!   event receiver, so the audio-in task, the turn driver and the TTS stage can
//!   each own the half they use. Every receive is cancel safe and meant for
//!   `tokio::select!`; sending audio never waits (a full queue hands the failure
//!   back as [`SendError::Full`]); every queue has a named capacity.
//! - **LLM completions are streams.** [`LlmProvider::stream`] returns at once an
//!   [`LlmStream`] of [`LlmEvent`]s for one [`LlmRequest`]. The stream runs only
//!   while it is polled; dropping or cancelling it stops the request at once.
//! - **Epochs and contexts.** Each TTS response is a context ([`ContextId`]: the
//!   turn's [`brisvox_core::Epoch`] plus a sequence). A barge-in calls
//!   [`TtsSender::cancel`], which never waits; from then on the session yields no
//!   audio of that context, not even audio queued before the cancel.
//! - **Errors.** Every provider failure is a [`ProviderError`] that says whether a
//!   retry may help ([`ProviderError::is_retryable`]) and never carries a secret
//!   (see the [`error`] module for the rule).
//! - **Mocks.** [`mock`] holds [`mock::MockStt`], [`mock::MockLlm`] and
//!   [`mock::MockTts`]: scripted providers on tokio time with seeded latency
//!   distributions and failure injection. On tokio's paused clock they are exact
//!   and the same seed gives the same trace.
//!
//! Real vendor adapters (one module per vendor) come later; they implement the
//! same traits over the same session types.

pub mod cartesia;
pub mod deepgram;
pub mod elevenlabs;
pub mod error;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod llm;
pub mod local;
pub mod mock;
pub mod openai_llm;
pub mod openai_transcribe;
pub mod retries;
pub mod stt;
pub mod tts;
pub mod vendors;
pub mod words;

use std::future::Future;
use std::pin::Pin;

pub use error::{ErrorKind, ProviderError, SendError};
pub use llm::{
    LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, Role, ToolCall, ToolCallAssembler,
    ToolDefinition,
};
pub use stt::{SttAudio, SttConfig, SttEvent, SttEvents, SttProvider, SttSender, SttSession};
pub use tts::{ContextId, TtsConfig, TtsEvent, TtsEvents, TtsProvider, TtsSender, TtsSession};
pub use words::WordTiming;

/// A boxed, sendable future: what the providers' `connect` methods return, so
/// the traits stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
