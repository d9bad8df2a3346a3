//! Mock providers: scripted, on tokio time, with seeded latencies and failures.
//!
//! Every delay is drawn from a [`Latency`] with a [`DetRng`] seeded from the
//! mock's seed and the index of the request (LLM), utterance (STT) or context
//! (TTS), so a delay depends on nothing but the seed and that index: two runs
//! with one seed give the same trace even if tasks interleave differently.
//! Sampled delays are whole milliseconds (tokio's timer resolution), so on the
//! paused clock (`#[tokio::test(start_paused = true)]`) they are exact.
//!
//! Failures are planned with a [`FaultPlan`]: a [`Fault`] at given indices or
//! with a seeded probability.

mod fault;
mod latency;
mod llm;
mod stt;
mod tts;

pub use fault::{Fault, FaultPlan};
pub use latency::{DetRng, Latency, MAX_LATENCY_MS};
pub use llm::{LLM_HISTORY_CAPACITY, LlmStats, MockAnswer, MockLlm, MockLlmConfig, MockToolCall};
pub use stt::{MAX_PENDING_FINALS, MockStt, MockSttConfig, SttStats, TimedWord};
pub use tts::{MAX_OPEN_CONTEXTS, MockTts, MockTtsConfig, TTS_TEXT_HISTORY_CAPACITY, TtsStats};

use tokio::time::Instant;

/// Sleeps until `deadline`, or returns at once if it has passed (a sleep on a due
/// deadline can cost a whole OS timer tick on some platforms).
///
/// # Cancel safety
///
/// Cancel safe: it only waits.
pub(crate) async fn wait_until(deadline: Instant) {
    if deadline > Instant::now() {
        tokio::time::sleep_until(deadline).await;
    }
}

/// Random-stream ids: each kind of draw has its own stream per index.
pub(crate) mod streams {
    pub(crate) const LLM_FIRST_TOKEN: u64 = 1;
    pub(crate) const LLM_TOKEN_GAP: u64 = 2;
    pub(crate) const STT_FINAL: u64 = 3;
    pub(crate) const TTS_FIRST_BYTE: u64 = 4;
    pub(crate) const CONNECT: u64 = 5;
    pub(crate) const FAULT: u64 = 6;
}

/// Locks a mock's shared state. Poison-proof: every critical section of the
/// mocks leaves the data consistent, so a panicking test thread does not
/// poison the mock for the others.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
