//! The LLM stage: the conversation, one streaming completion per user turn.
//!
//! The conversation is a list of [`Message`]s whose text is `Arc<str>`, so the
//! request built for each turn copies pointers, not text. A response streams
//! its text deltas to the segmenter, tagged with the turn's epoch; it marks
//! `LlmRequestSent` when the request is handed to the provider and
//! `LlmFirstToken` on its first delta. It ends with an `End` to the segmenter
//! however it ends (done, failed, timed out), so the turn driver always learns
//! that it finished; a failure is counted (before or after the first token),
//! the apology is said when one is configured, and the call goes on. When the epoch floor passes the response's epoch
//! (barge-in, turn taken back) the stream is cancelled at once and nothing more
//! of it is sent. What was generated before a cancel stays in the conversation.
//!
//! `Respond` requests a completion over the conversation as it stands,
//! without a user message (the agent link's `respond`).
//!
//! `Speak` (greeting, say, idle prompt) bypasses the model: its text goes to
//! the segmenter as one delta and is recorded as an assistant message.
//!
//! What the caller heard ([`Spoken`]): `Heard` (from the playout book, after
//! a barge-in) cuts the interrupted answer in the conversation to the words
//! the caller heard; `Resume` (a false interruption) speaks the words not
//! heard and restores the whole answer.
//!
//! Tool calls ([`crate::tools`] states the rules): a completion that ends in
//! tool calls flushes the text said before them to the segmenter (it is
//! spoken), records the assistant's tool-call message with a placeholder
//! result per call, and starts the calls ([`ToolCalls`]). The response stays
//! open (no `End`) while they run; when the last result of the round is in,
//! the next completion of the same response is requested. Results replace
//! their placeholder whenever they arrive, even after a barge-in (then they
//! are recorded, not spoken: no completion is requested for a stale epoch).
//! A filler, when configured, is said once per turn while tools run past its
//! delay. Token usage is summed per call and returned when the stage ends.
//!
//! The inbox is read only between responses: the driver starts a response only
//! when the previous one finished or went stale, and staleness is checked first.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;
use brisvox_providers::{
    ErrorKind, LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ProviderError, Role,
    ToolCall, ToolCallAssembler,
};
use tokio::sync::{mpsc, watch};

use super::inbox::{LlmInput, SegInput};
use super::speculative::{SpecRun, next_spec_event};
use super::spoken::Spoken;
use super::tool_calls::{PENDING_RESULT, ToolCalls, ToolDone, with_ids};
use super::{SharedTimeline, forward, mark, now, shutdown, sleep_until, stale_opt};
use crate::events::{EngineEvent, EventBus};
use crate::report::{FailureBook, ProviderStage, SpeculationCounters};
use crate::tools::{LlmUsage, ToolCounters, ToolExecutor, ToolSettings};

/// A response being streamed, or waiting for its tool calls.
struct Active {
    epoch: Epoch,
    /// The completion streaming; `None` while the round's tools run.
    stream: Option<LlmStream>,
    /// Text of the current completion.
    answer: String,
    first_token: bool,
    /// When the stream counts as stalled; `None` while tools run.
    deadline: Option<Instant>,
    calls: ToolCallAssembler,
    /// Completions of this response so far, less one (0 for the first).
    round: u32,
    /// Whether the current completion was offered tools.
    tools_offered: bool,
    /// Calls of this round still running.
    pending_tools: usize,
    /// When the filler is due, while tools run.
    filler_at: Option<Instant>,
}

impl Active {
    /// Completion `round` of `epoch`'s response on `stream`.
    fn new(epoch: Epoch, stream: Option<LlmStream>, round: u32, tools_offered: bool) -> Self {
        Active {
            epoch,
            stream,
            answer: String::new(),
            first_token: round > 0,
            deadline: None,
            calls: ToolCallAssembler::default(),
            round,
            tools_offered,
            pending_tools: 0,
            filler_at: None,
        }
    }
}

/// What the LLM stage counted when it ends.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LlmReport {
    pub(crate) usage: LlmUsage,
    pub(crate) tools: ToolCounters,
    pub(crate) speculation: SpeculationCounters,
}

/// The LLM stage actor.
pub(crate) struct LlmStage {
    provider: Arc<dyn LlmProvider>,
    inbox: mpsc::Receiver<LlmInput>,
    segmenter: mpsc::Sender<SegInput>,
    system: Message,
    history: Vec<Message>,
    max_history: usize,
    stall_limit: Duration,
    active: Option<Active>,
    timeline: SharedTimeline,
    failures: Arc<FailureBook>,
    failed_responses: Arc<AtomicU64>,
    floor: watch::Receiver<Epoch>,
    shutdown: watch::Receiver<bool>,
    tools: ToolCalls,
    events: EventBus,
    usage: LlmUsage,
    /// The turn whose filler was said (once per turn).
    filler_said: Option<Epoch>,
    /// What recent answers said and what of them was heard.
    spoken: Spoken,
    /// The speculative run.
    spec: Option<SpecRun>,
    spec_counters: SpeculationCounters,
    /// Bumped at every change of `history`.
    history_version: u64,
    /// Said when a completion fails ([`crate::EngineConfig::apology`]).
    apology: Option<Arc<str>>,
}

/// What the LLM stage is built from.
pub(crate) struct LlmParts {
    pub(crate) provider: Arc<dyn LlmProvider>,
    pub(crate) inbox: mpsc::Receiver<LlmInput>,
    pub(crate) segmenter: mpsc::Sender<SegInput>,
    pub(crate) system_prompt: Arc<str>,
    pub(crate) max_history: usize,
    pub(crate) stall_limit: Duration,
    pub(crate) timeline: SharedTimeline,
    pub(crate) failures: Arc<FailureBook>,
    pub(crate) failed_responses: Arc<AtomicU64>,
    pub(crate) floor: watch::Receiver<Epoch>,
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) tools: Option<Arc<dyn ToolExecutor>>,
    pub(crate) tool_settings: ToolSettings,
    pub(crate) events: EventBus,
    pub(crate) apology: Option<Arc<str>>,
}

impl LlmStage {
    /// Builds the actor.
    pub(crate) fn new(parts: LlmParts) -> Self {
        LlmStage {
            provider: parts.provider,
            inbox: parts.inbox,
            segmenter: parts.segmenter,
            system: Message::system(parts.system_prompt),
            history: Vec::new(),
            max_history: parts.max_history,
            stall_limit: parts.stall_limit,
            active: None,
            timeline: parts.timeline,
            failures: parts.failures,
            failed_responses: parts.failed_responses,
            floor: parts.floor,
            shutdown: parts.shutdown,
            tools: ToolCalls::new(parts.tools, parts.tool_settings),
            events: parts.events,
            usage: LlmUsage::default(),
            filler_said: None,
            spoken: Spoken::default(),
            spec: None,
            spec_counters: SpeculationCounters::default(),
            history_version: 0,
            apology: parts.apology,
        }
    }

    /// Serves responses until the call shuts down; returns what it counted.
    /// The provider's connection is warmed at once, without waiting for it
    /// (a failed warm-up only means the first request opens the connection).
    pub(crate) async fn run(mut self) -> LlmReport {
        let provider = Arc::clone(&self.provider);
        let warm_up = tokio::spawn(async move {
            let _ = provider.warm_up().await;
        });
        loop {
            let (epoch, deadline, filler_at) = match &self.active {
                Some(a) => (Some(a.epoch), a.deadline, a.filler_at),
                None => (None, None, None),
            };
            tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => break,
                () = stale_opt(&mut self.floor, epoch) => self.on_stale(),
                done = self.tools.next() => self.on_tool_done(done).await,
                event = next_event(&mut self.active) => self.on_event(event).await,
                () = sleep_until(deadline), if deadline.is_some() => {
                    self.on_stall().await;
                }
                () = sleep_until(filler_at), if filler_at.is_some() => self.on_filler().await,
                event = next_spec_event(&mut self.spec), if self.active.is_none() => {
                    if let Some(run) = self.spec.as_mut() {
                        run.hold(event);
                    }
                }
                input = self.inbox.recv(), if self.active.is_none() => match input {
                    Some(input) => self.on_input(input).await,
                    None => break,
                },
            }
        }
        if let Some(mut active) = self.active.take()
            && let Some(stream) = active.stream.as_mut()
        {
            stream.cancel();
        }
        warm_up.abort();
        self.drop_spec(false);
        LlmReport {
            usage: self.usage,
            tools: self.tools.counters(),
            speculation: self.spec_counters,
        }
    }

    async fn on_input(&mut self, input: LlmInput) {
        match input {
            LlmInput::Start { epoch, user_text } => self.start(epoch, user_text).await,
            LlmInput::Respond { epoch } => {
                self.drop_spec(false);
                self.request(epoch, 0);
            }
            LlmInput::Speculate { epoch, text } => self.speculate(epoch, text),
            LlmInput::Withdraw { epoch } => {
                if self.spec.as_ref().is_some_and(|run| run.epoch == epoch) {
                    self.drop_spec(true);
                }
            }
            LlmInput::Speak { epoch, text } => {
                self.remember(Message::assistant(text.as_str()));
                self.spoken.said(epoch, &text);
                self.say_whole(epoch, text).await;
            }
            LlmInput::Heard { epoch, words } => {
                self.history_version += 1;
                self.spoken.truncate(&mut self.history, epoch, words);
            }
            LlmInput::Resume { interrupted, epoch } => {
                self.history_version += 1;
                let rest = self.spoken.rest(&mut self.history, interrupted);
                self.say_whole(epoch, rest.unwrap_or_default()).await;
            }
            LlmInput::Context(update) => self.update_context(update),
        }
    }

    /// A context update: the prompt, then the conversation's messages.
    fn update_context(&mut self, update: crate::controls::ContextUpdate) {
        if let Some(prompt) = update.system_prompt {
            self.system = Message::system(prompt);
        }
        if let Some(messages) = update.messages {
            if messages.replace {
                self.history.clear();
            }
            for message in messages.items {
                self.remember(message);
            }
        }
    }

    /// Answers the turn: commits the speculative run when it was started for
    /// these words on this conversation, else requests a completion.
    async fn start(&mut self, epoch: Epoch, user_text: String) {
        let version = self.history_version;
        let hit = self
            .spec
            .as_ref()
            .is_some_and(|run| run.matches(epoch, &user_text, version));
        if !hit {
            self.drop_spec(false);
            self.remember(Message::user(user_text));
            self.request(epoch, 0);
            mark(&self.timeline, epoch, TurnEvent::LlmRequestSent, now());
            return;
        }
        let Some(run) = self.spec.take() else {
            return;
        };
        self.spec_counters.committed += 1;
        self.remember(Message::user(user_text));
        let (stream, held) = run.commit();
        self.active = Some(Active::new(
            epoch,
            stream,
            0,
            !self.tools.offer(0).is_empty(),
        ));
        if let Some(a) = self.active.as_mut() {
            a.deadline = Some(now() + self.stall_limit);
        }
        mark(&self.timeline, epoch, TurnEvent::LlmRequestSent, now());
        let ended = held
            .last()
            .is_some_and(|e| matches!(e, LlmEvent::Done | LlmEvent::Error(_)));
        for event in held {
            self.on_event(Some(event)).await;
        }
        if !ended && self.active.as_ref().is_some_and(|a| a.stream.is_none()) {
            // The run's stream was gone without its end: end the response.
            self.on_event(None).await;
        }
    }

    /// Starts a speculative run for `text` (a newer candidate replaces the
    /// last one, which counts as discarded).
    fn speculate(&mut self, epoch: Epoch, text: String) {
        self.drop_spec(false);
        let mut messages = self.messages();
        messages.push(Message::user(text.as_str()));
        let tools = self.tools.offer(0);
        let stream = self
            .provider
            .stream(LlmRequest::new(messages).with_tools(tools));
        self.usage.requests += 1;
        self.spec_counters.started += 1;
        self.spec = Some(SpecRun::new(epoch, text, self.history_version, stream));
    }

    /// Cancels the speculative run, if any, counting it as withdrawn or discarded.
    fn drop_spec(&mut self, withdrawn: bool) {
        if let Some(run) = self.spec.take() {
            if withdrawn {
                self.spec_counters.withdrawn += 1;
            } else {
                self.spec_counters.discarded += 1;
            }
            run.drop_counted(&mut self.spec_counters);
        }
    }

    /// The system prompt and the conversation so far.
    fn messages(&self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(self.history.len() + 2);
        messages.push(self.system.clone());
        messages.extend(self.history.iter().cloned());
        messages
    }

    /// `text` to the segmenter as one delta (none when empty), then the end.
    async fn say_whole(&mut self, epoch: Epoch, text: String) {
        if !text.trim().is_empty() {
            let delta = SegInput::Delta { epoch, text };
            if !forward(&self.segmenter, delta, epoch, &mut self.floor).await {
                return;
            }
        }
        let end = SegInput::End { epoch };
        forward(&self.segmenter, end, epoch, &mut self.floor).await;
    }

    /// Requests completion `round` of `epoch`'s response over the conversation.
    fn request(&mut self, epoch: Epoch, round: u32) {
        let messages = self.messages();
        let tools = self.tools.offer(round);
        let tools_offered = !tools.is_empty();
        let stream = self
            .provider
            .stream(LlmRequest::new(messages).with_tools(tools));
        self.usage.requests += 1;
        let mut active = Active::new(epoch, Some(stream), round, tools_offered);
        active.deadline = Some(now() + self.stall_limit);
        self.active = Some(active);
    }

    async fn on_event(&mut self, event: Option<LlmEvent>) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let epoch = active.epoch;
        match event {
            Some(LlmEvent::TextDelta(text)) => {
                self.first_token(epoch);
                if let Some(active) = self.active.as_mut() {
                    active.answer.push_str(&text);
                }
                let delta = SegInput::Delta { epoch, text };
                forward(&self.segmenter, delta, epoch, &mut self.floor).await;
            }
            Some(event @ LlmEvent::ToolCallDelta { .. }) => {
                self.first_token(epoch);
                if let Some(active) = self.active.as_mut() {
                    active.calls.push(&event);
                }
            }
            Some(LlmEvent::Usage {
                input_tokens,
                output_tokens,
            }) => {
                self.usage.input_tokens += u64::from(input_tokens);
                self.usage.output_tokens += u64::from(output_tokens);
            }
            Some(LlmEvent::Error(error)) => self.fail(&error).await,
            Some(LlmEvent::Done) | None => self.on_completion_end().await,
            Some(_) => {}
        }
        if let Some(active) = self.active.as_mut()
            && active.stream.is_some()
        {
            active.deadline = Some(now() + self.stall_limit);
        }
    }

    /// Marks the response's first token (text or tool call), once.
    fn first_token(&mut self, epoch: Epoch) {
        if let Some(active) = self.active.as_mut()
            && !active.first_token
        {
            active.first_token = true;
            mark(&self.timeline, epoch, TurnEvent::LlmFirstToken, now());
        }
    }

    /// A completion ended: the response ends, or its tool calls start.
    async fn on_completion_end(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if active.calls.is_empty() {
            return self.end_response().await;
        }
        let calls = std::mem::take(&mut active.calls).finish();
        if !active.tools_offered {
            // Past the round limit (or no tools at all): the calls are dropped.
            self.tools.count_over_limit();
            return self.end_response().await;
        }
        let calls = with_ids(calls, active.epoch, active.round);
        self.start_tools(calls).await;
    }

    /// Records the assistant's calls with a placeholder result each, starts
    /// them and flushes the text said before them.
    async fn start_tools(&mut self, calls: Vec<ToolCall>) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let epoch = active.epoch;
        active.stream = None;
        active.deadline = None;
        active.pending_tools = calls.len();
        if self.filler_said != Some(epoch) {
            let filler = self.tools.settings().filler.as_ref();
            active.filler_at = filler.map(|f| now() + f.after);
        }
        let text = std::mem::take(&mut active.answer);
        self.spoken.said(epoch, &text);
        self.remember(Message::assistant_with_tool_calls(text, calls.clone()));
        for call in &calls {
            self.remember(Message::tool_result(Arc::clone(&call.id), PENDING_RESULT));
            self.events.emit(EngineEvent::ToolCallStarted {
                epoch,
                call_id: call.id.to_string(),
                name: call.name.to_string(),
                arguments: call.arguments.to_string(),
            });
        }
        mark(&self.timeline, epoch, TurnEvent::ToolCallStart, now());
        self.tools.start(epoch, &calls);
        let flush = SegInput::Flush { epoch };
        forward(&self.segmenter, flush, epoch, &mut self.floor).await;
    }

    /// A call finished: its result replaces its placeholder; the last of a
    /// live round requests the next completion.
    async fn on_tool_done(&mut self, done: ToolDone) {
        let live = self
            .active
            .as_ref()
            .is_some_and(|a| a.epoch == done.epoch && a.stream.is_none());
        self.tools.count(&done, !live);
        if let Some(slot) = self
            .history
            .iter_mut()
            .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&*done.call_id))
        {
            *slot = Message::tool_result(Arc::clone(&done.call_id), done.outcome.content.as_str());
            self.history_version += 1;
        }
        mark(&self.timeline, done.epoch, TurnEvent::ToolCallEnd, now());
        self.events.emit(EngineEvent::ToolCallFinished {
            epoch: done.epoch,
            call_id: done.call_id.to_string(),
            name: done.name.to_string(),
            is_error: done.outcome.is_error,
            latency: done.latency,
            late: !live,
        });
        let Some(active) = self.active.as_mut().filter(|_| live) else {
            return;
        };
        active.pending_tools = active.pending_tools.saturating_sub(1);
        if active.pending_tools == 0 {
            let (epoch, round) = (active.epoch, active.round);
            self.request(epoch, round + 1);
        }
    }

    /// Tools run past the filler's delay: say it (once per turn).
    async fn on_filler(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.filler_at = None;
        let epoch = active.epoch;
        let Some(filler) = self.tools.settings().filler.clone() else {
            return;
        };
        self.filler_said = Some(epoch);
        let delta = SegInput::Delta {
            epoch,
            text: filler.text,
        };
        if forward(&self.segmenter, delta, epoch, &mut self.floor).await {
            let flush = SegInput::Flush { epoch };
            forward(&self.segmenter, flush, epoch, &mut self.floor).await;
        }
    }

    /// The stream went quiet for longer than the limit.
    async fn on_stall(&mut self) {
        let waited = self.stall_limit.as_millis() as u64;
        let waiting_for = match &self.active {
            Some(a) if a.first_token => "next token",
            _ => "first token",
        };
        let error = ProviderError::Timeout {
            waiting_for,
            after_ms: waited,
        };
        if let Some(stream) = self.active.as_mut().and_then(|a| a.stream.as_mut()) {
            stream.cancel();
        }
        self.fail(&error).await;
    }

    async fn fail(&mut self, error: &ProviderError) {
        let stage = match &self.active {
            Some(a) if a.first_token => ProviderStage::LlmAfterFirstToken,
            _ => ProviderStage::LlmBeforeFirstToken,
        };
        if error.kind() != ErrorKind::Cancelled {
            self.failures.count(stage, error.kind());
            self.failed_responses.fetch_add(1, Ordering::Relaxed);
            self.apologise().await;
        }
        self.end_response().await;
    }

    /// Says the apology, when one is set, at the end of the failed answer
    /// (and keeps it in the answer, so the conversation has it).
    async fn apologise(&mut self) {
        let (Some(apology), Some(active)) = (&self.apology, self.active.as_mut()) else {
            return;
        };
        let epoch = active.epoch;
        let text = if active.answer.is_empty() || active.answer.ends_with(char::is_whitespace) {
            apology.to_string()
        } else {
            format!(" {apology}")
        };
        active.answer.push_str(&text);
        let delta = SegInput::Delta { epoch, text };
        forward(&self.segmenter, delta, epoch, &mut self.floor).await;
    }

    /// The response ended: keep what was said, tell the segmenter.
    async fn end_response(&mut self) {
        let Some(active) = self.active.take() else {
            return;
        };
        if !active.answer.is_empty() {
            self.spoken.said(active.epoch, &active.answer);
            self.remember(Message::assistant(active.answer));
        }
        let end = SegInput::End {
            epoch: active.epoch,
        };
        forward(&self.segmenter, end, active.epoch, &mut self.floor).await;
    }

    /// The response's epoch went stale: cancel at once, keep what was generated.
    fn on_stale(&mut self) {
        if let Some(mut active) = self.active.take() {
            if let Some(stream) = active.stream.as_mut() {
                stream.cancel();
            }
            if !active.answer.is_empty() {
                self.spoken.said(active.epoch, &active.answer);
                self.remember(Message::assistant(active.answer));
            }
        }
    }

    /// Appends `message`, dropping the oldest beyond the limit; the history
    /// never starts with a tool result (its call was dropped).
    fn remember(&mut self, message: Message) {
        self.history_version += 1;
        self.history.push(message);
        let mut drop = self.history.len().saturating_sub(self.max_history);
        while self.history.get(drop).is_some_and(|m| m.role == Role::Tool) {
            drop += 1;
        }
        self.history.drain(..drop);
    }
}

/// The active stream's next event; never without a response.
///
/// # Cancel safety
///
/// Cancel safe: [`LlmStream::next`] is.
async fn next_event(active: &mut Option<Active>) -> Option<LlmEvent> {
    match active.as_mut().and_then(|a| a.stream.as_mut()) {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}
