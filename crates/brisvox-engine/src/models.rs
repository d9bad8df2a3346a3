//! What a call runs on besides its transport: the providers and the models.
//!
//! - The VAD is a [`VadSource`]: the batched Silero service (production) or an
//!   energy detector (tests, the simulator). Both feed the same sans-IO stop
//!   rule ([`VadDetector`](brisvox_models::vad::detector::VadDetector)), so
//!   starts, stops and backdating behave the same.
//! - The end-of-turn verdict is a [`VerdictSource`]: Smart Turn through a
//!   [`SmartTurnService`] shared by every call (production: its own threaded
//!   pool; deterministic tests: an inline pool), Smart Turn on a given pool (a
//!   service of the call's own is built around it), or a fixed verdict (tests,
//!   the simulator's "always complete").

use std::sync::Arc;

use brisvox_models::pool::InferencePool;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnService};
use brisvox_models::vad::service::VadService;
use brisvox_providers::{LlmProvider, SttProvider, TtsProvider};

use crate::tools::ToolExecutor;
use crate::turn::Verdict;

/// The three providers of a call, and the tools its model may call.
#[derive(Clone)]
pub struct Providers {
    /// Speech-to-text.
    pub stt: Arc<dyn SttProvider>,
    /// The language model.
    pub llm: Arc<dyn LlmProvider>,
    /// Text-to-speech.
    pub tts: Arc<dyn TtsProvider>,
    /// The call's tools; `None` offers the model none.
    pub tools: Option<Arc<dyn ToolExecutor>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers").finish_non_exhaustive()
    }
}

/// Where speech probabilities come from.
#[derive(Clone)]
pub enum VadSource {
    /// Silero through the batched VAD service (one stream per call). With an
    /// inline pool the outcome of a window is ready when it is submitted.
    Silero(VadService),
    /// RMS energy against
    /// [`EngineConfig::energy_vad`](crate::EngineConfig::energy_vad): no model.
    Energy,
}

impl std::fmt::Debug for VadSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VadSource::Silero(_) => f.write_str("VadSource::Silero"),
            VadSource::Energy => f.write_str("VadSource::Energy"),
        }
    }
}

/// Where end-of-turn verdicts come from.
#[derive(Clone)]
pub enum VerdictSource {
    /// Smart Turn run on `pool` (its Normal line) over the call's 8 s ring,
    /// through a [`SmartTurnService`] of the call's own
    /// ([`SmartTurnService::with_pool`]): its snapshot buffer stays with the
    /// call. Prefer [`VerdictSource::Service`] to share buffers and counters.
    SmartTurn {
        /// The loaded model.
        model: Arc<SmartTurn>,
        /// The pool that runs analyses: threaded in production, inline for
        /// deterministic paused-clock tests.
        pool: InferencePool,
    },
    /// Smart Turn through a service shared by the calls: snapshot buffers come
    /// from its free list (held only while an analysis runs), and refused or
    /// late analyses are failed verdicts, counted in
    /// [`SmartTurnService::stats`] over all calls.
    Service(SmartTurnService),
    /// Every stop gets this verdict at once.
    Fixed(Verdict),
}

impl std::fmt::Debug for VerdictSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerdictSource::SmartTurn { .. } => f.write_str("VerdictSource::SmartTurn"),
            VerdictSource::Service(_) => f.write_str("VerdictSource::Service"),
            VerdictSource::Fixed(v) => write!(f, "VerdictSource::Fixed({v:?})"),
        }
    }
}

/// The models of a call.
#[derive(Debug, Clone)]
pub struct Models {
    /// The VAD.
    pub vad: VadSource,
    /// The end-of-turn verdicts.
    pub verdict: VerdictSource,
}

impl Models {
    /// The energy VAD and a fixed "complete" verdict: no model files needed.
    pub fn energy_and_complete() -> Self {
        Models {
            vad: VadSource::Energy,
            verdict: VerdictSource::Fixed(Verdict::Complete { probability: 1.0 }),
        }
    }
}
