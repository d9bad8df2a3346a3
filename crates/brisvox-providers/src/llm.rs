//! Streaming LLM completion: a provider turns a request into a stream of deltas.
//!
//! [`LlmRequest`] is the whole conversation the model sees; it is built once per
//! turn and cheap to clone (texts are `Arc<str>`, tool schemas `Arc` JSON), so a
//! speculative start and the final request can share it. [`LlmStream`] yields
//! [`LlmEvent`]s and is polled by the engine: it makes progress only while it is
//! polled, and dropping it (or calling [`LlmStream::cancel`]) stops the request
//! at once.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::ProviderError;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Instructions (the agent's prompt).
    System,
    /// The caller.
    User,
    /// The agent.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said (may be empty for an assistant message that only calls tools).
    pub text: Arc<str>,
    /// Tool calls the assistant made in this message.
    pub tool_calls: Arc<[ToolCall]>,
    /// For [`Role::Tool`]: the id of the call this message answers.
    pub tool_call_id: Option<Arc<str>>,
}

impl Message {
    /// A message of `role` with `text` and nothing else.
    pub fn new(role: Role, text: impl Into<Arc<str>>) -> Self {
        Message {
            role,
            text: text.into(),
            tool_calls: Arc::from([]),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(text: impl Into<Arc<str>>) -> Self {
        Self::new(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<Arc<str>>) -> Self {
        Self::new(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<Arc<str>>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// An assistant message that made tool calls.
    pub fn assistant_tool_calls(calls: impl Into<Arc<[ToolCall]>>) -> Self {
        Message {
            tool_calls: calls.into(),
            ..Self::new(Role::Assistant, "")
        }
    }

    /// An assistant message that said `text` and then made tool calls.
    pub fn assistant_with_tool_calls(
        text: impl Into<Arc<str>>,
        calls: impl Into<Arc<[ToolCall]>>,
    ) -> Self {
        Message {
            tool_calls: calls.into(),
            ..Self::new(Role::Assistant, text)
        }
    }

    /// A tool's result, answering the call `call_id`.
    pub fn tool_result(call_id: impl Into<Arc<str>>, text: impl Into<Arc<str>>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, text)
        }
    }
}

/// A complete tool call made by the assistant (as kept in the conversation).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's id for the call.
    pub id: Arc<str>,
    /// The tool's name.
    pub name: Arc<str>,
    /// The arguments, a JSON text as the model wrote it.
    pub arguments: Arc<str>,
}

/// Joins [`LlmEvent::ToolCallDelta`] pieces into complete [`ToolCall`]s.
#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: Vec<(u32, String, String, String)>,
}

impl ToolCallAssembler {
    /// Takes one event; anything but a tool-call delta is ignored.
    pub fn push(&mut self, event: &LlmEvent) {
        let LlmEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments_delta,
        } = event
        else {
            return;
        };
        let pos = match self.calls.iter().position(|c| c.0 == *index) {
            Some(pos) => pos,
            None => {
                self.calls
                    .push((*index, String::new(), String::new(), String::new()));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if let Some(id) = id {
            call.1.clone_from(id);
        }
        if let Some(name) = name {
            call.2.push_str(name);
        }
        call.3.push_str(arguments_delta);
    }

    /// Whether no piece has been taken.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls so far, by index.
    pub fn finish(mut self) -> Vec<ToolCall> {
        self.calls.sort_by_key(|c| c.0);
        self.calls
            .into_iter()
            .map(|(_, id, name, args)| ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.into(),
            })
            .collect()
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: Arc<str>,
    /// What it does, for the model.
    pub description: Arc<str>,
    /// JSON Schema of its arguments.
    pub parameters: Arc<serde_json::Value>,
}

/// Everything one completion needs. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct LlmRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Arc<[ToolDefinition]>,
    /// The vendor's model name, or `None` for the adapter's default.
    pub model: Option<Arc<str>>,
    /// Upper bound on output tokens, or `None` for the provider's default.
    pub max_tokens: Option<u32>,
    /// Sampling temperature, or `None` for the provider's default.
    pub temperature: Option<f32>,
}

impl LlmRequest {
    /// A request over `messages` with no tools and provider defaults.
    pub fn new(messages: Vec<Message>) -> Self {
        LlmRequest {
            messages,
            ..Default::default()
        }
    }

    /// The same request with these tools.
    #[must_use]
    pub fn with_tools(mut self, tools: impl Into<Arc<[ToolDefinition]>>) -> Self {
        self.tools = tools.into();
        self
    }

    /// The same request with an output token limit.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The text of the last user message, if any.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| &*m.text)
    }
}

/// What a completion stream yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LlmEvent {
    /// More answer text.
    TextDelta(String),
    /// A piece of a tool call. Pieces with the same `index` belong to one call;
    /// the first piece carries `id` and `name`, `arguments_delta` pieces
    /// concatenate to the JSON arguments.
    ToolCallDelta {
        /// Which call of this response (0, 1, ...).
        index: u32,
        /// The call's id, on its first piece.
        id: Option<String>,
        /// The tool's name, on its first piece.
        name: Option<String>,
        /// More of the arguments' JSON text.
        arguments_delta: String,
    },
    /// The model is reasoning (text that is never spoken: OpenRouter's
    /// `delta.reasoning`, `delta.reasoning_content` elsewhere). Carries only its
    /// length; it tells the engine the request is alive before the first token.
    ReasoningDelta {
        /// Bytes of reasoning text in the chunk.
        bytes: u32,
    },
    /// Token counts, as the provider reports them (usually just before `Done`).
    Usage {
        /// Prompt tokens.
        input_tokens: u32,
        /// Completion tokens.
        output_tokens: u32,
    },
    /// The answer is complete; the stream ends.
    Done,
    /// The request failed; the stream ends.
    Error(ProviderError),
}

/// A streaming LLM service. Object-safe: the engine holds `Arc<dyn LlmProvider>`.
pub trait LlmProvider: Send + Sync {
    /// Starts a completion. Connection and request errors arrive as the stream's
    /// first event ([`LlmEvent::Error`]), so this never waits.
    fn stream(&self, request: LlmRequest) -> LlmStream;

    /// Prepares for the first request (opens the connection), so the first
    /// turn does not pay for it. The engine calls it at call start and does
    /// not wait for it; the default does nothing.
    fn warm_up(&self) -> crate::BoxFuture<'_, Result<(), ProviderError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The boxed event stream inside an [`LlmStream`].
pub type BoxLlmEventStream = Pin<Box<dyn Stream<Item = LlmEvent> + Send>>;

/// One completion in flight.
///
/// Ends (yields `None`) after [`LlmEvent::Done`] or [`LlmEvent::Error`], or once
/// cancelled. Dropping it cancels the request: nothing keeps running.
pub struct LlmStream {
    inner: Option<BoxLlmEventStream>,
}

impl std::fmt::Debug for LlmStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmStream")
            .field("finished", &self.inner.is_none())
            .finish()
    }
}

impl LlmStream {
    /// Wraps a provider's event stream.
    pub fn new(events: impl Stream<Item = LlmEvent> + Send + 'static) -> Self {
        LlmStream {
            inner: Some(Box::pin(events)),
        }
    }

    /// A stream that yields `error` and ends (a request refused before it started).
    pub fn failed(error: ProviderError) -> Self {
        Self::new(futures_util::stream::iter([LlmEvent::Error(error)]))
    }

    /// The next event, or `None` once the stream has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is consumed only when this returns it.
    pub async fn next(&mut self) -> Option<LlmEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Stops the request now: the provider's stream is dropped (closing its
    /// connection) and [`LlmStream::next`] yields `None` from here on.
    pub fn cancel(&mut self) {
        self.inner = None;
    }

    /// Whether the stream has ended (finished, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        self.inner.is_none()
    }
}

impl Stream for LlmStream {
    type Item = LlmEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LlmEvent>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let item = std::task::ready!(inner.as_mut().poll_next(cx));
        if matches!(item, None | Some(LlmEvent::Done | LlmEvent::Error(_))) {
            self.inner = None;
        }
        Poll::Ready(item)
    }
}
