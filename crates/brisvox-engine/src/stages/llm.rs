//! The LLM stage: the conversation, one streaming completion per user turn.
//!
//! The conversation is a list of [`Message`]s whose text is `Arc<str>`, so the
//! request built for each turn copies pointers, not text. A response streams
//! its text deltas to the segmenter, tagged with the turn's epoch; it marks
//! `LlmRequestSent` when the request is handed to the provider and
//! `LlmFirstToken` on its first delta. It ends with an `End` to the segmenter
//! however it ends (done, failed, timed out), so the turn driver always learns
//! that it finished; a failure is counted (before or after the first token) and
//! the call goes on. When the epoch floor passes the response's epoch
//! (barge-in, turn taken back) the stream is cancelled at once and nothing more
//! of it is sent. What was generated before a cancel stays in the conversation.
//!
//! `Speak` (greeting, say, idle prompt) bypasses the model: its text goes to
//! the segmenter as one delta and is recorded as an assistant message.
//!
//! The inbox is read only between responses: the driver starts a response only
//! when the previous one finished or went stale, and staleness is checked first.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;
use brisvox_providers::{
    ErrorKind, LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ProviderError,
};
use tokio::sync::{mpsc, watch};

use super::segmenter::SegInput;
use super::{SharedTimeline, forward, mark, now, shutdown, sleep_until, stale_opt};
use crate::report::{FailureBook, ProviderStage};

/// What the driver asks of the LLM stage.
#[derive(Debug)]
pub(crate) enum LlmInput {
    /// Answer the caller's `user_text` in `epoch`.
    Start { epoch: Epoch, user_text: String },
    /// Say `text` in `epoch` without the model.
    Speak { epoch: Epoch, text: String },
}

/// A response being streamed.
struct Active {
    epoch: Epoch,
    stream: LlmStream,
    answer: String,
    first_token: bool,
    deadline: Instant,
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
        }
    }

    /// Serves responses until the call shuts down.
    pub(crate) async fn run(mut self) {
        loop {
            let (epoch, deadline) = match &self.active {
                Some(a) => (Some(a.epoch), Some(a.deadline)),
                None => (None, None),
            };
            tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => break,
                () = stale_opt(&mut self.floor, epoch) => self.on_stale(),
                event = next_event(&mut self.active) => self.on_event(event).await,
                () = sleep_until(deadline), if deadline.is_some() => {
                    self.on_stall().await;
                }
                input = self.inbox.recv(), if self.active.is_none() => match input {
                    Some(input) => self.on_input(input).await,
                    None => break,
                },
            }
        }
        if let Some(mut active) = self.active.take() {
            active.stream.cancel();
        }
    }

    async fn on_input(&mut self, input: LlmInput) {
        match input {
            LlmInput::Start { epoch, user_text } => {
                self.remember(Message::user(user_text));
                let mut messages = Vec::with_capacity(self.history.len() + 1);
                messages.push(self.system.clone());
                messages.extend(self.history.iter().cloned());
                let stream = self.provider.stream(LlmRequest::new(messages));
                mark(&self.timeline, epoch, TurnEvent::LlmRequestSent, now());
                self.active = Some(Active {
                    epoch,
                    stream,
                    answer: String::new(),
                    first_token: false,
                    deadline: now() + self.stall_limit,
                });
            }
            LlmInput::Speak { epoch, text } => {
                self.remember(Message::assistant(text.as_str()));
                let delta = SegInput::Delta { epoch, text };
                if forward(&self.segmenter, delta, epoch, &mut self.floor).await {
                    let end = SegInput::End { epoch };
                    forward(&self.segmenter, end, epoch, &mut self.floor).await;
                }
            }
        }
    }

    async fn on_event(&mut self, event: Option<LlmEvent>) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let epoch = active.epoch;
        match event {
            Some(LlmEvent::TextDelta(text)) => {
                if !active.first_token {
                    active.first_token = true;
                    mark(&self.timeline, epoch, TurnEvent::LlmFirstToken, now());
                }
                active.answer.push_str(&text);
                active.deadline = now() + self.stall_limit;
                let delta = SegInput::Delta { epoch, text };
                forward(&self.segmenter, delta, epoch, &mut self.floor).await;
            }
            Some(LlmEvent::Error(error)) => self.fail(&error).await,
            Some(LlmEvent::Done) | None => self.end_response().await,
            // Tool calls are not served yet; usage is not reported.
            Some(_) => active.deadline = now() + self.stall_limit,
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
        if let Some(active) = self.active.as_mut() {
            active.stream.cancel();
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
        }
        self.end_response().await;
    }

    /// The response ended: keep what was said, tell the segmenter.
    async fn end_response(&mut self) {
        let Some(active) = self.active.take() else {
            return;
        };
        if !active.answer.is_empty() {
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
            active.stream.cancel();
            if !active.answer.is_empty() {
                self.remember(Message::assistant(active.answer));
            }
        }
    }

    fn remember(&mut self, message: Message) {
        if self.history.len() == self.max_history {
            self.history.remove(0);
        }
        self.history.push(message);
    }
}

/// The active stream's next event; never without a response.
///
/// # Cancel safety
///
/// Cancel safe: [`LlmStream::next`] is.
async fn next_event(active: &mut Option<Active>) -> Option<LlmEvent> {
    match active {
        Some(active) => active.stream.next().await,
        None => std::future::pending().await,
    }
}
