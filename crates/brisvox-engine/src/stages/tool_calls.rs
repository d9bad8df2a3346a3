//! The tool calls in flight of one call, polled by the LLM stage.
//!
//! [`ToolCalls::start`] hands each call to the executor, bounded by the
//! per-call timeout; [`ToolCalls::next`] yields them as they finish, in any
//! order, whatever the turn they belong to (a late result is still recorded).
//! Nothing is spawned: the futures live here and are dropped with the call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_providers::{BoxFuture, ToolCall, ToolDefinition};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::now;
use crate::tools::{ToolCounters, ToolExecutor, ToolInvocation, ToolOutcome, ToolSettings};

/// What the conversation holds in a call's place until its result arrives.
/// The model reads it only when the caller interrupted before the result
/// came (a later request); the result replaces it when it arrives.
pub(crate) const PENDING_RESULT: &str =
    r#"{"error":"no result yet: the caller spoke before this tool finished"}"#;

/// A finished tool call.
#[derive(Debug)]
pub(crate) struct ToolDone {
    pub(crate) epoch: Epoch,
    pub(crate) call_id: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) outcome: ToolOutcome,
    pub(crate) timed_out: bool,
    pub(crate) latency: Duration,
}

/// The executor, the settings and the calls in flight.
pub(crate) struct ToolCalls {
    executor: Option<Arc<dyn ToolExecutor>>,
    settings: ToolSettings,
    running: FuturesUnordered<BoxFuture<'static, ToolDone>>,
    counters: ToolCounters,
}

impl ToolCalls {
    pub(crate) fn new(executor: Option<Arc<dyn ToolExecutor>>, settings: ToolSettings) -> Self {
        ToolCalls {
            executor,
            settings,
            running: FuturesUnordered::new(),
            counters: ToolCounters::default(),
        }
    }

    pub(crate) fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    /// The tools to offer in round `round` (none past the round limit).
    pub(crate) fn offer(&self, round: u32) -> Arc<[ToolDefinition]> {
        match &self.executor {
            Some(executor) if round < self.settings.max_rounds => executor.definitions(),
            _ => Arc::from([]),
        }
    }

    /// Starts every call of one round of `epoch`.
    pub(crate) fn start(&mut self, epoch: Epoch, calls: &[ToolCall]) {
        self.counters.rounds += 1;
        for call in calls {
            self.counters.started += 1;
            let invocation = ToolInvocation {
                call_id: Arc::clone(&call.id),
                name: Arc::clone(&call.name),
                arguments: Arc::clone(&call.arguments),
                epoch,
            };
            let work = match &self.executor {
                Some(executor) => executor.invoke(invocation.clone()),
                None => {
                    let outcome = ToolOutcome::error(format!("unknown tool {}", call.name));
                    Box::pin(std::future::ready(outcome))
                }
            };
            self.running
                .push(Box::pin(bounded(invocation, work, self.settings.timeout)));
        }
    }

    /// Counts a finished call; returns it unchanged.
    pub(crate) fn count(&mut self, done: &ToolDone, late: bool) {
        if done.outcome.is_error {
            self.counters.failed += 1;
        }
        if done.timed_out {
            self.counters.timed_out += 1;
        }
        if late {
            self.counters.late += 1;
        }
    }

    /// A completion asked for tools after the round limit.
    pub(crate) fn count_over_limit(&mut self) {
        self.counters.over_limit += 1;
    }

    pub(crate) fn counters(&self) -> ToolCounters {
        self.counters
    }

    /// The next call to finish; never when none runs.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a call is taken out only when it is returned.
    pub(crate) async fn next(&mut self) -> ToolDone {
        match self.running.next().await {
            Some(done) => done,
            None => std::future::pending().await,
        }
    }
}

/// `work` for `invocation`, cut to an error result after `timeout`.
async fn bounded(
    invocation: ToolInvocation,
    work: BoxFuture<'static, ToolOutcome>,
    timeout: Duration,
) -> ToolDone {
    let started: Instant = now();
    let (outcome, timed_out) = match tokio::time::timeout(timeout, work).await {
        Ok(outcome) => (outcome, false),
        Err(_) => {
            let ms = timeout.as_millis();
            let message = format!("tool {} timed out after {ms} ms", invocation.name);
            (ToolOutcome::error(message), true)
        }
    };
    ToolDone {
        epoch: invocation.epoch,
        call_id: invocation.call_id,
        name: invocation.name,
        outcome,
        timed_out,
        latency: now().saturating_duration_since(started),
    }
}

/// The round's calls with an id each: a provider that gave none (or a
/// repeated one) gets `call_<epoch>_<round>_<index>`, so every result can be
/// matched to its call.
pub(crate) fn with_ids(mut calls: Vec<ToolCall>, epoch: Epoch, round: u32) -> Vec<ToolCall> {
    for i in 0..calls.len() {
        let repeated = calls[..i].iter().any(|c| c.id == calls[i].id);
        if calls[i].id.is_empty() || repeated {
            calls[i].id = Arc::from(format!("call_{}_{round}_{i}", epoch.0));
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: Arc::from(id),
            name: Arc::from("t"),
            arguments: Arc::from("{}"),
        }
    }

    #[test]
    fn missing_and_repeated_ids_are_made_unique() {
        let calls = with_ids(vec![call(""), call("a"), call("a")], Epoch(3), 1);
        let ids: Vec<&str> = calls.iter().map(|c| &*c.id).collect();
        assert_eq!(ids, ["call_3_1_0", "a", "call_3_1_2"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_over_its_timeout_is_an_error_result() {
        let invocation = ToolInvocation {
            call_id: Arc::from("c"),
            name: Arc::from("slow"),
            arguments: Arc::from("{}"),
            epoch: Epoch(1),
        };
        let never: BoxFuture<'static, ToolOutcome> = Box::pin(std::future::pending());
        let done = bounded(invocation, never, Duration::from_millis(250)).await;
        assert!(done.timed_out && done.outcome.is_error);
        assert_eq!(done.latency, Duration::from_millis(250));
        assert!(done.outcome.content.contains("timed out after 250 ms"));
    }
}
