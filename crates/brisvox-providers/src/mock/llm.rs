//! The mock LLM: scripted answers streamed token by token on tokio time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::lock;
use std::time::Duration;

use tokio::time::Instant;

use super::{DetRng, Fault, FaultPlan, Latency, streams, wait_until};
use crate::{BoxFuture, LlmEvent, LlmProvider, LlmRequest, LlmStream, ProviderError};

/// How many past requests [`MockLlm::requests`] keeps (oldest dropped first).
pub const LLM_HISTORY_CAPACITY: usize = 64;

/// Bytes of tool-call arguments per streamed piece.
const TOOL_ARGUMENT_PIECE_BYTES: usize = 16;

/// A function that answers a request.
type Responder = Arc<dyn Fn(&LlmRequest) -> MockAnswer + Send + Sync>;

/// Timing and shape of the mock's answers.
#[derive(Debug, Clone, PartialEq)]
pub struct MockLlmConfig {
    /// Seed of every latency and random fault draw.
    pub seed: u64,
    /// Delay from the request to the first token.
    pub first_token: Latency,
    /// Delay between tokens (drawn per gap).
    pub token_interval: Latency,
    /// Words per text token; 0 streams the whole answer as one token.
    pub words_per_token: usize,
    /// The answer when no responder is set and the queue is empty.
    pub default_answer: String,
}

impl Default for MockLlmConfig {
    /// First token at 350 ms, a token every 30 ms, one word per token, seed 0.
    fn default() -> Self {
        MockLlmConfig {
            seed: 0,
            first_token: Latency::Fixed(350),
            token_interval: Latency::Fixed(30),
            words_per_token: 1,
            default_answer: "Okay, got it.".to_owned(),
        }
    }
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum MockAnswer {
    /// Text, split into tokens by [`MockLlmConfig::words_per_token`].
    Text(String),
    /// One tool call: a first piece with id and name, then the arguments in pieces.
    ToolCall {
        /// The tool's name.
        name: String,
        /// Its arguments, a JSON text.
        arguments: String,
    },
    /// Text (possibly empty), then one or more tool calls in one response, as
    /// the OpenAI-compatible adapter yields them: the text's tokens, then each
    /// call's pieces under its own index (0, 1, ...).
    ToolCalls {
        /// Said before the calls (tokens as for [`MockAnswer::Text`]).
        text: String,
        /// The calls, in index order.
        calls: Vec<MockToolCall>,
    },
}

/// One tool call of a [`MockAnswer::ToolCalls`].
#[derive(Debug, Clone, PartialEq)]
pub struct MockToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments, a JSON text.
    pub arguments: String,
}

impl MockToolCall {
    /// A call of `name` with `arguments` (a JSON text).
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        MockToolCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

impl From<String> for MockAnswer {
    fn from(text: String) -> Self {
        MockAnswer::Text(text)
    }
}

impl From<&str> for MockAnswer {
    fn from(text: &str) -> Self {
        MockAnswer::Text(text.to_owned())
    }
}

/// What the mock has been asked, counted since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmStats {
    /// Requests started ([`LlmProvider::stream`] calls).
    pub started: u64,
    /// Requests that streamed to `Done`.
    pub completed: u64,
    /// Requests that ended with an error.
    pub failed: u64,
    /// Requests dropped or cancelled before their end.
    pub cancelled: u64,
    /// [`LlmProvider::warm_up`] calls.
    pub warm_ups: u64,
}

#[derive(Default)]
struct Counters {
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    warm_ups: AtomicU64,
}

#[derive(Default)]
struct Script {
    answers: VecDeque<MockAnswer>,
    responder: Option<Responder>,
    faults: FaultPlan,
    history: VecDeque<LlmRequest>,
}

struct Inner {
    config: Mutex<MockLlmConfig>,
    script: Mutex<Script>,
    counters: Arc<Counters>,
}

/// A scripted LLM. Cheap to clone; clones share the script and the counters.
///
/// Answers come from the responder if one is set, else from the queue, else
/// [`MockLlmConfig::default_answer`]. Request `i` (0-based, in call order) takes
/// its delays from the seed and `i` alone, and its fault from the plan.
#[derive(Clone)]
pub struct MockLlm {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("stats", &self.stats())
            .finish()
    }
}

impl MockLlm {
    /// A mock with `config`, no script and no faults.
    pub fn new(config: MockLlmConfig) -> Self {
        MockLlm {
            inner: Arc::new(Inner {
                config: Mutex::new(config),
                script: Mutex::new(Script::default()),
                counters: Arc::new(Counters::default()),
            }),
        }
    }

    /// Replaces the configuration (applies to requests started afterwards).
    pub fn set_config(&self, config: MockLlmConfig) {
        *lock(&self.inner.config) = config;
    }

    /// Queues an answer for a later request.
    pub fn push_answer(&self, answer: impl Into<MockAnswer>) {
        lock(&self.inner.script).answers.push_back(answer.into());
    }

    /// Answers every request with `responder(request)` (the queue is then unused).
    pub fn set_responder(&self, responder: impl Fn(&LlmRequest) -> String + Send + Sync + 'static) {
        self.set_answer_responder(move |req| MockAnswer::Text(responder(req)));
    }

    /// Like [`MockLlm::set_responder`], for answers that may be tool calls.
    pub fn set_answer_responder(
        &self,
        responder: impl Fn(&LlmRequest) -> MockAnswer + Send + Sync + 'static,
    ) {
        lock(&self.inner.script).responder = Some(Arc::new(responder));
    }

    /// Plans failures by request index.
    pub fn set_faults(&self, faults: FaultPlan) {
        lock(&self.inner.script).faults = faults;
    }

    /// The counters.
    pub fn stats(&self) -> LlmStats {
        let c = &self.inner.counters;
        LlmStats {
            started: c.started.load(Ordering::Relaxed),
            completed: c.completed.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            cancelled: c.cancelled.load(Ordering::Relaxed),
            warm_ups: c.warm_ups.load(Ordering::Relaxed),
        }
    }

    /// The last [`LLM_HISTORY_CAPACITY`] requests, oldest first.
    pub fn requests(&self) -> Vec<LlmRequest> {
        lock(&self.inner.script).history.iter().cloned().collect()
    }

    /// The first-token delay request `index` draws (before any fault), for tests.
    pub fn first_token_delay(&self, index: u64) -> Duration {
        let config = lock(&self.inner.config);
        let mut rng = DetRng::for_stream(config.seed, streams::LLM_FIRST_TOKEN, index);
        config.first_token.sample(&mut rng)
    }

    fn take_answer(
        &self,
        index: u64,
        request: &LlmRequest,
        default: &str,
    ) -> (MockAnswer, Option<Fault>) {
        let mut script = lock(&self.inner.script);
        if script.history.len() == LLM_HISTORY_CAPACITY {
            script.history.pop_front();
        }
        script.history.push_back(request.clone());
        let seed = lock(&self.inner.config).seed;
        let fault = script.faults.fault_for(seed, index);
        let answer = match &script.responder {
            Some(responder) => responder(request),
            None => script
                .answers
                .pop_front()
                .unwrap_or_else(|| MockAnswer::Text(default.to_owned())),
        };
        (answer, fault)
    }
}

impl Default for MockLlm {
    fn default() -> Self {
        Self::new(MockLlmConfig::default())
    }
}

impl LlmProvider for MockLlm {
    fn warm_up(&self) -> BoxFuture<'_, Result<(), ProviderError>> {
        self.inner.counters.warm_ups.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(())))
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        let index = self.inner.counters.started.fetch_add(1, Ordering::Relaxed);
        let config = lock(&self.inner.config).clone();
        let (answer, fault) = self.take_answer(index, &request, &config.default_answer);
        let guard = RunGuard {
            counters: self.inner.counters.clone(),
            ended: false,
        };
        if let Some(Fault::Refuse(error)) = fault {
            guard.end(Outcome::Failed);
            return LlmStream::failed(error);
        }
        let run = Run::new(&config, index, &request, &answer, fault, guard);
        LlmStream::new(futures_util::stream::unfold(run, Run::step))
    }
}

/// Counts a run as cancelled if it is dropped before its end.
struct RunGuard {
    counters: Arc<Counters>,
    ended: bool,
}

/// How a run ended.
enum Outcome {
    Completed,
    Failed,
}

impl RunGuard {
    fn end(mut self, outcome: Outcome) {
        self.ended = true;
        let counter = match outcome {
            Outcome::Completed => &self.counters.completed,
            Outcome::Failed => &self.counters.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if !self.ended {
            self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One request's stream state.
struct Run {
    items: VecDeque<LlmEvent>,
    next_at: Instant,
    gaps: DetRng,
    token_interval: Latency,
    fault: Option<Fault>,
    delivered: u32,
    usage: Option<LlmEvent>,
    guard: Option<RunGuard>,
}

impl Run {
    fn new(
        config: &MockLlmConfig,
        index: u64,
        request: &LlmRequest,
        answer: &MockAnswer,
        fault: Option<Fault>,
        guard: RunGuard,
    ) -> Self {
        let mut first = DetRng::for_stream(config.seed, streams::LLM_FIRST_TOKEN, index);
        let mut delay = config.first_token.sample(&mut first);
        if let Some(fault) = &fault {
            delay = fault.first_delay(delay);
        }
        let items = answer_items(answer, config.words_per_token, index);
        let usage = LlmEvent::Usage {
            input_tokens: estimate_tokens(request),
            output_tokens: u32::try_from(items.len()).unwrap_or(u32::MAX),
        };
        Run {
            items,
            next_at: Instant::now() + delay,
            gaps: DetRng::for_stream(config.seed, streams::LLM_TOKEN_GAP, index),
            token_interval: config.token_interval,
            fault,
            delivered: 0,
            usage: Some(usage),
            guard: Some(guard),
        }
    }

    async fn step(mut self) -> Option<(LlmEvent, Run)> {
        let guard = self.guard.take()?;
        if !self.items.is_empty() {
            wait_until(self.next_at).await;
        }
        if let Some(error) = self.fault_now().await {
            guard.end(Outcome::Failed);
            return Some((LlmEvent::Error(error), self));
        }
        if let Some(item) = self.items.pop_front() {
            self.delivered += 1;
            self.next_at += self.token_interval.sample(&mut self.gaps);
            self.guard = Some(guard);
            return Some((item, self));
        }
        if let Some(usage) = self.usage.take() {
            self.guard = Some(guard);
            return Some((usage, self));
        }
        guard.end(Outcome::Completed);
        Some((LlmEvent::Done, self))
    }

    /// The error the planned fault produces now, if it is due; a due stall never returns.
    async fn fault_now(&self) -> Option<ProviderError> {
        match &self.fault {
            Some(Fault::FailAfter { items, error }) if self.delivered >= *items => {
                Some(error.clone())
            }
            Some(Fault::DisconnectAfter { items }) if self.delivered >= *items => {
                Some(ProviderError::disconnected("mock: stream dropped"))
            }
            Some(Fault::StallAfter { items }) if self.delivered >= *items => {
                std::future::pending::<()>().await;
                None
            }
            _ => None,
        }
    }
}

/// The answer's stream items: text tokens or tool-call pieces.
fn answer_items(answer: &MockAnswer, words_per_token: usize, index: u64) -> VecDeque<LlmEvent> {
    match answer {
        MockAnswer::Text(text) => split_tokens(text, words_per_token)
            .into_iter()
            .map(LlmEvent::TextDelta)
            .collect(),
        MockAnswer::ToolCall { name, arguments } => {
            tool_call_items(0, &format!("call_{index}"), name, arguments).collect()
        }
        MockAnswer::ToolCalls { text, calls } => {
            let mut items: VecDeque<LlmEvent> = split_tokens(text, words_per_token)
                .into_iter()
                .map(LlmEvent::TextDelta)
                .collect();
            for (i, call) in (0u32..).zip(calls) {
                let id = format!("call_{index}_{i}");
                items.extend(tool_call_items(i, &id, &call.name, &call.arguments));
            }
            items
        }
    }
}

/// One call's pieces: the first with id and name, then the arguments in
/// [`TOOL_ARGUMENT_PIECE_BYTES`]-character pieces.
fn tool_call_items(
    index: u32,
    id: &str,
    name: &str,
    arguments: &str,
) -> impl Iterator<Item = LlmEvent> {
    let first = LlmEvent::ToolCallDelta {
        index,
        id: Some(id.to_owned()),
        name: Some(name.to_owned()),
        arguments_delta: String::new(),
    };
    let chars: Vec<char> = arguments.chars().collect();
    let pieces: Vec<LlmEvent> = chars
        .chunks(TOOL_ARGUMENT_PIECE_BYTES)
        .map(|piece| LlmEvent::ToolCallDelta {
            index,
            id: None,
            name: None,
            arguments_delta: piece.iter().collect(),
        })
        .collect();
    std::iter::once(first).chain(pieces)
}

/// `text` in tokens of `words_per_token` words, each word keeping the
/// whitespace after it ("Okay, " "got " "it."); 0 keeps the text whole.
pub(crate) fn split_tokens(text: &str, words_per_token: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    if words_per_token == 0 {
        return vec![text.to_owned()];
    }
    let mut tokens = Vec::new();
    let (mut start, mut words, mut in_space) = (0, 0, false);
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            in_space = false;
            words += 1;
            if words == words_per_token {
                tokens.push(text[start..i].to_owned());
                (start, words) = (i, 0);
            }
        }
    }
    tokens.push(text[start..].to_owned());
    tokens
}

/// About four characters per token, over every message.
fn estimate_tokens(request: &LlmRequest) -> u32 {
    let chars: usize = request
        .messages
        .iter()
        .map(|m| m.text.chars().count())
        .sum();
    u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_their_trailing_whitespace_and_concatenate_back() {
        let text = "Okay, got it.  Anything else?";
        assert_eq!(
            split_tokens(text, 1),
            ["Okay, ", "got ", "it.  ", "Anything ", "else?"]
        );
        assert_eq!(
            split_tokens(text, 2),
            ["Okay, got ", "it.  Anything ", "else?"]
        );
        assert_eq!(split_tokens(text, 0), [text]);
        assert!(split_tokens("", 1).is_empty());
        for n in 0..5 {
            assert_eq!(split_tokens(text, n).concat(), text);
        }
    }
}
