//! Tools the model may call during a response, and how the engine runs them.
//!
//! A call gets at most one [`ToolExecutor`] (in [`Providers::tools`](crate::Providers)):
//! the server builds one per call from the agent file's webhook tools, the
//! agent link, or both; tests pass their own. The engine only knows the trait:
//!
//! 1. Each completion offers the executor's [`ToolExecutor::definitions`] (read
//!    anew for every request, so an agent may change them during the call).
//! 2. When the model streams tool calls, the LLM stage assembles them, speaks
//!    the text that came before them, records the assistant's tool-call message
//!    and starts every call at once ([`ToolExecutor::invoke`]); calls run in
//!    parallel, polled by the LLM stage itself (nothing is spawned, so nothing
//!    outlives the call).
//! 3. Each call is bounded by [`ToolSettings::timeout`]: a timeout, an unknown
//!    tool or an executor error becomes an error result the model reads
//!    ([`ToolOutcome::error`]), never a hung turn.
//! 4. When every result is in, the next completion is requested with the
//!    results in the conversation; at most [`ToolSettings::max_rounds`] rounds
//!    of calls per turn, after which the model is asked once more without tools.
//! 5. A barge-in (the turn's epoch goes stale) cancels the pending completion.
//!    Results that arrive later are recorded in the conversation (replacing a
//!    placeholder kept in the call's place) and never spoken.

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::{BoxFuture, ToolDefinition};

/// One tool call the model made, as handed to the executor.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInvocation {
    /// The call's id (the provider's, or one the engine made when it gave none).
    pub call_id: Arc<str>,
    /// The tool's name.
    pub name: Arc<str>,
    /// The arguments, a JSON text as the model wrote it (may be invalid JSON:
    /// the executor decides).
    pub arguments: Arc<str>,
    /// The turn the call belongs to.
    pub epoch: Epoch,
}

/// What a tool call gave: a text for the model (usually JSON), and whether it
/// is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model reads as the tool's result.
    pub content: String,
    /// Whether the call failed (the content then says why).
    pub is_error: bool,
}

impl ToolOutcome {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutcome {
            content: content.into(),
            is_error: false,
        }
    }

    /// A failed call: the model reads `{"error": message}`.
    pub fn error(message: impl AsRef<str>) -> Self {
        ToolOutcome {
            content: serde_json::json!({ "error": message.as_ref() }).to_string(),
            is_error: true,
        }
    }
}

/// Runs the tools of one call.
///
/// Object-safe: the engine holds `Arc<dyn ToolExecutor>`. `invoke` must not
/// block: it returns a future the LLM stage polls (and drops at the end of
/// the call or after [`ToolSettings::timeout`]).
pub trait ToolExecutor: Send + Sync {
    /// The tools the model may call now.
    fn definitions(&self) -> Arc<[ToolDefinition]>;

    /// Runs one call. An unknown tool is an error outcome, not a panic.
    fn invoke(&self, call: ToolInvocation) -> BoxFuture<'static, ToolOutcome>;
}

/// A short phrase said while tools run longer than a delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFiller {
    /// How long the tools may run before the filler is said.
    pub after: Duration,
    /// What is said ("One moment.").
    pub text: String,
}

/// How the engine runs tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSettings {
    /// Most rounds of tool calls per user turn; the completion after the last
    /// round is requested without tools.
    pub max_rounds: u32,
    /// Longest a single call may run; then the model reads an error result.
    pub timeout: Duration,
    /// Said once per turn while tools run longer than its delay; `None` (the
    /// default) says nothing.
    pub filler: Option<ToolFiller>,
}

impl Default for ToolSettings {
    /// 5 rounds, 10 s per call, no filler.
    fn default() -> Self {
        ToolSettings {
            max_rounds: 5,
            timeout: Duration::from_secs(10),
            filler: None,
        }
    }
}

/// Tokens the LLM provider reported for one call, summed over its completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmUsage {
    /// Completions requested.
    pub requests: u64,
    /// Prompt tokens, as reported.
    pub input_tokens: u64,
    /// Completion tokens, as reported.
    pub output_tokens: u64,
}

/// What happened to the tool calls of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolCounters {
    /// Calls handed to the executor.
    pub started: u64,
    /// Calls whose outcome was an error (executor error, unknown tool, timeout).
    pub failed: u64,
    /// Calls cut by [`ToolSettings::timeout`] (also counted in `failed`).
    pub timed_out: u64,
    /// Results that arrived after their turn was interrupted (recorded, not spoken).
    pub late: u64,
    /// Rounds of tool calls (completions that ended in calls).
    pub rounds: u64,
    /// Completions that asked for tools after the round limit (calls dropped).
    pub over_limit: u64,
}
