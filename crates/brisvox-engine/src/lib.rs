//! brisvox-engine: one call, from caller audio in to a spoken answer out.
//!
//! The decisions live in sans-IO cores driven by `handle_*(now, ..)` and
//! `poll_*()`; the async stage tasks only move events in and out of them.
//!
//! - [`turn`]: the turn machine (listening, user speaking, paused, awaiting the
//!   verdict and the final, bot thinking, bot speaking, barge-in).
//! - [`run_call`]: the assembled call. Stages (actors, one bounded inbox each):
//!   AudioIn (transport reader: Smart Turn ring, VAD, STT audio) → TurnDriver
//!   (the turn machine, verdicts, actions) ← STT stage (transcripts); LLM stage
//!   → segmenter stage → TTS stage (normaliser, framer) → output stage (pacer)
//!   → transport. Every response item carries its turn's epoch; a barge-in
//!   raises the epoch floor and every stage drops older items on sight.
//! - [`edge`]: the call's one edge between a route and the engine
//!   ([`CallEdge`]: [`CallSource`] in, [`CallSink`] out, [`Control`]s, the
//!   [`CallContext`]); [`events`]: the [`EventBus`] the engine emits into.
//! - [`EngineConfig`], [`CallReport`], [`Providers`], [`Models`].
//! - [`sim`]: a simulated caller and a recording sink for deterministic tests.
//!
//! Time: the stages read tokio's clock (`tokio::time::Instant::now()`), so on a
//! paused clock a call is deterministic (with an inline pool or no models).

pub mod call;
pub mod config;
pub mod controls;
pub mod edge;
pub mod events;
/// Waits polled only after they woke (in `brisvox-core`, so providers use it too).
pub use brisvox_core::gate;
pub mod models;
pub mod playout;
pub mod recording;
pub mod report;
pub mod sim;
pub mod tools;
pub mod turn;

mod frame_queue;
mod stages;

pub use call::{CallError, run_call};
pub use config::{
    EarlyAnalysisConfig, EnergyVadConfig, EngineConfig, EngineConfigError, ProviderLimits,
    QueueCapacities,
};
pub use controls::{ContextUpdate, MessagesUpdate};
pub use edge::{
    AudioQueueReceiver, AudioQueueSink, CallContext, CallEdge, CallSink, CallSource, Control,
    DtmfDigit, Inbound, InboundQueue, InboundRefused, InboundSender, Metadata,
    PlayoutConfirmations, QueuedAudio, TransportClosed, audio_queue, inbound_queue,
};
pub use events::{EngineEvent, EventBus, EventObserver, EventReceiver};
pub use models::{Models, Providers, VadSource, VerdictSource};
pub use report::{
    CallEnd, CallReport, EarlyAnalysisCounters, FailureCount, ProviderStage, SpeculationCounters,
};
pub use tools::{
    LlmUsage, ToolCounters, ToolExecutor, ToolFiller, ToolInvocation, ToolOutcome, ToolSettings,
};
