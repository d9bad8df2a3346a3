//! OpenAI-compatible Chat Completions over HTTP server-sent events (OpenAI,
//! OpenRouter, and any server that speaks the same streaming protocol).
//!
//! [`OpenAiLlm::stream`] posts `{base_url}/chat/completions` with `stream: true`
//! and `stream_options.include_usage`, then turns each `data: {...}` chunk into
//! [`LlmEvent`]s: `choices[0].delta.content` into [`LlmEvent::TextDelta`],
//! `delta.tool_calls[]` pieces into [`LlmEvent::ToolCallDelta`] (join them with
//! [`ToolCallAssembler`]), the final usage chunk into [`LlmEvent::Usage`] and
//! `data: [DONE]` into [`LlmEvent::Done`].
//!
//! # Driving
//!
//! The returned [`LlmStream`] owns the HTTP response: it makes progress only
//! while polled, and dropping or cancelling it drops the response body, which
//! closes the HTTP/1.1 connection or resets the HTTP/2 stream at once.
//!
//! # Connections
//!
//! Every [`OpenAiLlm`] of the process shares one `reqwest::Client`
//! ([`shared_client`]): HTTP/2 when the server offers it over TLS, idle
//! connections kept warm for [`POOL_IDLE_TIMEOUT`], adaptive flow-control
//! windows. [`OpenAiLlm::warm_up`] opens a connection before the first turn.
//!
//! # Retries
//!
//! A 429, a 5xx, a refused connection or a drop is retried only before the
//! first token (text or tool call) has been yielded, at most
//! [`OpenAiLlmConfig::max_attempts`] attempts in all, with exponential backoff
//! (a `Retry-After` is honoured up to [`MAX_RETRY_AFTER`]). After the first
//! token an error ends the stream: a retry would repeat words already spoken.
//!
//! # Upstream log
//!
//! The first chunk's `provider` (OpenRouter's upstream) and `model` fields are
//! logged once per response at INFO as `llm upstream`.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::error::redact_url;
pub use crate::llm::ToolCallAssembler;
use crate::vendors::{ApiKey, safe_code, status_error};
use crate::{LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ProviderError, Role};

/// OpenAI's API root.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// OpenRouter's API root (same protocol, plus provider routing).
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
/// How long an idle pooled connection is kept open.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// TCP + TLS connect timeout of the shared client.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest `Retry-After` we wait before a retry; a longer one ends the request.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(2);
/// The longest SSE line we accept, in bytes (a chunk is one line).
pub const MAX_SSE_LINE_BYTES: usize = 1 << 20;

/// Which field carries the output token limit.
///
/// OpenAI's Chat Completions reference marks `max_tokens` deprecated "in favor
/// of `max_completion_tokens`, and is not compatible with o-series models"
/// (<https://platform.openai.com/docs/api-reference/chat/create>); OpenRouter
/// and most compatible servers document `max_tokens`
/// (<https://openrouter.ai/docs/api-reference/parameters>).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_tokens` (OpenRouter and most compatible servers).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI's current name; needed by its reasoning models).
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field an API root documents: `max_completion_tokens` for OpenAI's
    /// own API (`api.openai.com`), `max_tokens` for every other server.
    pub fn for_base_url(base_url: &str) -> Self {
        if is_openai_api(base_url) {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }
}

/// Whether `base_url` is OpenAI's own API (not a compatible server).
pub fn is_openai_api(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// Why a `reasoning_effort` value is refused for a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReasoningEffortError {
    /// Not a value the server documents.
    #[error("`{value}` is not a reasoning_effort this server documents (one of {allowed})")]
    Unknown {
        /// The value given.
        value: String,
        /// The documented values, comma-separated.
        allowed: &'static str,
    },
    /// OpenAI's non-reasoning chat models (gpt-4o, gpt-4.1, gpt-3.5) refuse
    /// the parameter.
    #[error("model `{model}` is not a reasoning model: OpenAI refuses reasoning_effort for it")]
    NotReasoningModel {
        /// The model named.
        model: String,
    },
    /// gpt-5.1 takes none, low, medium and high only.
    #[error(
        "model `{model}` takes reasoning_effort none, low, medium or high (OpenAI's reference)"
    )]
    NotForGpt51 {
        /// The model named.
        model: String,
    },
    /// OpenAI documents `none` only from gpt-5.1 on.
    #[error("reasoning_effort `none` is refused by OpenAI models before gpt-5.1 (model `{model}`)")]
    NoneBeforeGpt51 {
        /// The model named.
        model: String,
    },
}

/// `reasoning_effort` values OpenAI documents: "Currently supported values are
/// none, minimal, low, medium, high, and xhigh"
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort>).
pub const OPENAI_REASONING_EFFORTS: [&str; 6] =
    ["none", "minimal", "low", "medium", "high", "xhigh"];

/// Checks `effort` for `model` on the server at `base_url`.
///
/// OpenAI's own API: one of [`OPENAI_REASONING_EFFORTS`], `none` only for
/// gpt-5.1 and later ("All models before gpt-5.1 default to medium reasoning
/// effort, and do not support none", same page), gpt-5.1 itself only none,
/// low, medium and high ("The supported reasoning values for gpt-5.1 are
/// none, low, medium, and high"), and none at all for the non-reasoning chat
/// models (gpt-4o, gpt-4.1, gpt-3.5). Other servers (OpenRouter
/// documents the same six values, "Can be xhigh, high, medium, low, minimal or
/// none", <https://openrouter.ai/docs/use-cases/reasoning-tokens>): one of the
/// six; the model's own limits are the server's to enforce.
pub fn check_reasoning_effort(
    base_url: &str,
    model: &str,
    effort: &str,
) -> Result<(), ReasoningEffortError> {
    if !OPENAI_REASONING_EFFORTS.contains(&effort) {
        return Err(ReasoningEffortError::Unknown {
            value: effort.to_owned(),
            allowed: "none, minimal, low, medium, high, xhigh",
        });
    }
    let m = model.to_ascii_lowercase();
    let chat_only = ["gpt-4", "gpt-3.5", "chatgpt-4o"]
        .iter()
        .any(|p| m.starts_with(p));
    if is_openai_api(base_url) && chat_only {
        return Err(ReasoningEffortError::NotReasoningModel {
            model: model.to_owned(),
        });
    }
    let gpt51 = m == "gpt-5.1" || m.starts_with("gpt-5.1-");
    if is_openai_api(base_url) && gpt51 && matches!(effort, "minimal" | "xhigh") {
        return Err(ReasoningEffortError::NotForGpt51 {
            model: model.to_owned(),
        });
    }
    if effort == "none" && is_openai_api(base_url) && openai_model_predates_gpt51(model) {
        return Err(ReasoningEffortError::NoneBeforeGpt51 {
            model: model.to_owned(),
        });
    }
    Ok(())
}

/// o-series and gpt-5 models before gpt-5.1 (`o1`, `o3-mini`, `gpt-5`,
/// `gpt-5-mini`, `gpt-5-2025-08-07`); later ones (`gpt-5.1`, `gpt-5.2`,
/// `gpt-6`) and unknown names pass.
fn openai_model_predates_gpt51(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let o_series = m.len() > 1 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
    // `gpt-5.1` and later versions continue with a dot, not a dash.
    let gpt5_base = m == "gpt-5" || m.starts_with("gpt-5-");
    o_series || gpt5_base
}

/// Settings of an [`OpenAiLlm`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiLlmConfig {
    /// API root without the trailing `/chat/completions`, e.g. [`OPENAI_BASE_URL`].
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`; never logged.
    pub api_key: ApiKey,
    /// Model used when the request names none.
    pub model: String,
    /// Output token limit used when the request sets none.
    pub max_tokens: Option<u32>,
    /// The field the limit is sent in.
    pub max_tokens_field: MaxTokensField,
    /// Sampling temperature used when the request sets none; `None`: not sent.
    pub temperature: Option<f32>,
    /// `reasoning_effort` ("none", "low", ...), sent only when set.
    pub reasoning_effort: Option<String>,
    /// OpenRouter `provider.order`: upstream slugs to try, in order. Empty: not sent.
    pub provider_order: Vec<String>,
    /// OpenRouter `provider.allow_fallbacks`; `None`: not sent.
    pub allow_fallbacks: Option<bool>,
    /// Time allowed from sending the request to the first token (text or
    /// tool call), in milliseconds, retries included. A reasoning delta
    /// (`delta.reasoning` / `delta.reasoning_content`) counts as liveness: the
    /// time restarts from it.
    pub first_token_timeout_ms: u64,
    /// Time allowed between two chunks once the answer has started, in ms.
    pub chunk_timeout_ms: u64,
    /// Attempts in all (1 = no retry) for failures before the first token.
    pub max_attempts: u32,
    /// Backoff before the first retry, in ms; doubled on each further retry.
    pub retry_backoff_ms: u64,
}

impl OpenAiLlmConfig {
    /// OpenAI's endpoint with `model` and defaults: usage on, the limit in
    /// `max_completion_tokens`, 4 s to the first token, 10 s between chunks,
    /// 3 attempts from 200 ms backoff.
    pub fn new(api_key: ApiKey, model: impl Into<String>) -> Self {
        OpenAiLlmConfig {
            base_url: OPENAI_BASE_URL.to_owned(),
            api_key,
            model: model.into(),
            max_tokens: None,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            temperature: None,
            reasoning_effort: None,
            provider_order: Vec::new(),
            allow_fallbacks: None,
            first_token_timeout_ms: 4_000,
            chunk_timeout_ms: 10_000,
            max_attempts: 3,
            retry_backoff_ms: 200,
        }
    }

    /// OpenRouter's endpoint with `model` (e.g. `openai/gpt-4o-mini`).
    pub fn openrouter(api_key: ApiKey, model: impl Into<String>) -> Self {
        Self::new(api_key, model).with_base_url(OPENROUTER_BASE_URL)
    }

    /// The same settings with another API root (a proxy, a fake server); the
    /// limit's field becomes the one that root documents
    /// ([`MaxTokensField::for_base_url`]) until [`Self::with_max_tokens`] names one.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self.max_tokens_field = MaxTokensField::for_base_url(&self.base_url);
        self
    }

    /// The same settings with a default sampling temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The same settings pinned to OpenRouter upstreams `order`, with or
    /// without fallbacks to others.
    #[must_use]
    pub fn with_provider_routing(mut self, order: Vec<String>, allow_fallbacks: bool) -> Self {
        self.provider_order = order;
        self.allow_fallbacks = Some(allow_fallbacks);
        self
    }

    /// The same settings with `reasoning_effort`.
    #[must_use]
    pub fn with_reasoning_effort(mut self, effort: impl Into<String>) -> Self {
        self.reasoning_effort = Some(effort.into());
        self
    }

    /// The same settings with a default output token limit.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32, field: MaxTokensField) -> Self {
        self.max_tokens = Some(max_tokens);
        self.max_tokens_field = field;
        self
    }

    /// The same settings with other timeouts (milliseconds).
    #[must_use]
    pub fn with_timeouts(mut self, first_token_ms: u64, chunk_ms: u64) -> Self {
        self.first_token_timeout_ms = first_token_ms;
        self.chunk_timeout_ms = chunk_ms;
        self
    }

    /// The same settings with another retry policy.
    #[must_use]
    pub fn with_retries(mut self, max_attempts: u32, backoff_ms: u64) -> Self {
        self.max_attempts = max_attempts.max(1);
        self.retry_backoff_ms = backoff_ms;
        self
    }
}

/// The process-wide HTTP client every [`OpenAiLlm`] uses.
pub fn shared_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(32)
            .tcp_nodelay(true)
            .http2_adaptive_window(true)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .http2_keep_alive_while_idle(true)
            .build()
            // Only fails if the TLS backend cannot initialise (rustls with ring
            // and bundled roots is always available): a broken build, not input.
            .expect("building the shared HTTP client")
    })
}

/// An OpenAI-compatible streaming chat model.
#[derive(Debug, Clone)]
pub struct OpenAiLlm {
    config: Arc<OpenAiLlmConfig>,
    endpoint: Arc<str>,
    client: reqwest::Client,
}

impl OpenAiLlm {
    /// An adapter over the [`shared_client`].
    pub fn new(config: OpenAiLlmConfig) -> Self {
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        OpenAiLlm {
            config: Arc::new(config),
            endpoint: endpoint.into(),
            client: shared_client().clone(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &OpenAiLlmConfig {
        &self.config
    }

    /// Opens a connection to the API (a `GET {base_url}/models`) so the first
    /// turn does not pay for TCP and TLS. Any HTTP answer counts as success.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future abandons the request.
    pub async fn warm_up(&self) -> Result<(), ProviderError> {
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let auth = self.config.api_key.header_value("Bearer ")?;
        let timeout = Duration::from_millis(self.config.first_token_timeout_ms);
        let send = self.client.get(&url).header(AUTHORIZATION, auth).send();
        match tokio::time::timeout(timeout, send).await {
            Err(_) => Err(ProviderError::Timeout {
                waiting_for: "warm-up response",
                after_ms: self.config.first_token_timeout_ms,
            }),
            Ok(Err(e)) => Err(request_error(&e, &url)),
            Ok(Ok(response)) => {
                // Read the small body so the connection returns to the pool.
                let _ = response.bytes().await;
                Ok(())
            }
        }
    }

    /// The JSON body sent for `request` (exposed for tests and docs).
    pub fn request_body(&self, request: &LlmRequest) -> Value {
        build_body(&self.config, request)
    }
}

impl LlmProvider for OpenAiLlm {
    fn warm_up(&self) -> crate::BoxFuture<'_, Result<(), ProviderError>> {
        Box::pin(OpenAiLlm::warm_up(self))
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        let body = match serde_json::to_vec(&build_body(&self.config, &request)) {
            Ok(body) => body,
            Err(_) => {
                return LlmStream::failed(ProviderError::protocol("request not serialisable"));
            }
        };
        let run = Run {
            client: self.client.clone(),
            config: self.config.clone(),
            endpoint: self.endpoint.clone(),
            body: body.into(),
            started: Instant::now(),
            alive_at: None,
            attempt: 0,
            response: None,
            lines: SseLines::default(),
            pending: VecDeque::new(),
            decoder: ChunkDecoder::default(),
            ended: false,
        };
        LlmStream::new(futures_util::stream::unfold(run, |mut run| async move {
            let event = run.next_event().await?;
            Some((event, run))
        }))
    }
}

fn build_body(config: &OpenAiLlmConfig, request: &LlmRequest) -> Value {
    let model = request.model.as_deref().unwrap_or(&config.model);
    let mut body = json!({
        "model": model,
        "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    // `body` is the object just built above.
    let map = body.as_object_mut().expect("body is an object");
    if let Some(max) = request.max_tokens.or(config.max_tokens) {
        let field = match config.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        map.insert(field.into(), json!(max));
    }
    if let Some(t) = request.temperature.or(config.temperature) {
        map.insert("temperature".into(), json!(t));
    }
    if let Some(effort) = &config.reasoning_effort {
        map.insert("reasoning_effort".into(), json!(effort));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": &*t.name, "description": &*t.description, "parameters": &*t.parameters,
                }})
            })
            .collect();
        map.insert("tools".into(), Value::Array(tools));
    }
    let mut provider = serde_json::Map::new();
    if !config.provider_order.is_empty() {
        provider.insert("order".into(), json!(config.provider_order));
    }
    if let Some(allow) = config.allow_fallbacks {
        provider.insert("allow_fallbacks".into(), json!(allow));
    }
    if !provider.is_empty() {
        map.insert("provider".into(), Value::Object(provider));
    }
    body
}

fn message_json(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": &*m.text}),
        Role::User => json!({"role": "user", "content": &*m.text}),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": &*m.text})
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": &*c.id, "type": "function",
                        "function": {"name": &*c.name, "arguments": &*c.arguments}})
                })
                .collect();
            let content = if m.text.is_empty() {
                Value::Null
            } else {
                json!(&*m.text)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or(""),
            "content": &*m.text,
        }),
    }
}

/// One completion's state: the stream `unfold`s over it.
struct Run {
    client: reqwest::Client,
    config: Arc<OpenAiLlmConfig>,
    endpoint: Arc<str>,
    /// The serialised request, shared by retries.
    body: Arc<[u8]>,
    started: Instant,
    /// When the last reasoning delta arrived (restarts the first-token wait).
    alive_at: Option<Instant>,
    attempt: u32,
    response: Option<reqwest::Response>,
    lines: SseLines,
    pending: VecDeque<LlmEvent>,
    decoder: ChunkDecoder,
    ended: bool,
}

impl Run {
    /// The next event, or `None` after the last.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe on its own (a chunk being read would be lost); it is only
    /// driven by the stream, which is dropped as a whole.
    async fn next_event(&mut self) -> Option<LlmEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if matches!(event, LlmEvent::Done | LlmEvent::Error(_)) {
                    self.ended = true;
                    self.pending.clear();
                    self.response = None;
                }
                return Some(event);
            }
            if self.ended {
                return None;
            }
            if let Err(error) = self.step().await {
                if self.may_retry(&error) {
                    if let Err(error) = self.back_off(&error).await {
                        self.pending.push_back(LlmEvent::Error(error));
                    }
                } else {
                    self.pending.push_back(LlmEvent::Error(error));
                }
            }
        }
    }

    /// Opens the response if needed, then reads one body chunk into `pending`.
    async fn step(&mut self) -> Result<(), ProviderError> {
        if self.response.is_none() {
            self.response = Some(self.open().await?);
        }
        let deadline = self.chunk_deadline();
        // Set just above.
        let response = self.response.as_mut().expect("response is open");
        let chunk = match tokio::time::timeout_at(deadline.0, response.chunk()).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    waiting_for: deadline.1,
                    after_ms: deadline.2,
                });
            }
            Ok(Err(_)) => return Err(ProviderError::disconnected("response body interrupted")),
            Ok(Ok(None)) => return Err(ProviderError::disconnected("stream ended before [DONE]")),
            Ok(Ok(Some(chunk))) => chunk,
        };
        self.lines.push(&chunk)?;
        let reasoning_before = self.decoder.reasoning_deltas;
        while let Some(data) = self.lines.next_data() {
            self.decoder.decode(&data, &mut self.pending)?;
            if self.decoder.done {
                break;
            }
        }
        if self.decoder.reasoning_deltas > reasoning_before {
            self.alive_at = Some(Instant::now());
        }
        Ok(())
    }

    fn chunk_deadline(&self) -> (Instant, &'static str, u64) {
        if self.decoder.first_token_seen {
            let ms = self.config.chunk_timeout_ms;
            (Instant::now() + Duration::from_millis(ms), "next chunk", ms)
        } else {
            let ms = self.config.first_token_timeout_ms;
            let from = self.alive_at.unwrap_or(self.started).max(self.started);
            (from + Duration::from_millis(ms), "first token", ms)
        }
    }

    async fn open(&mut self) -> Result<reqwest::Response, ProviderError> {
        self.attempt += 1;
        let auth = self.config.api_key.header_value("Bearer ")?;
        let send = self
            .client
            .post(&*self.endpoint)
            .header(AUTHORIZATION, auth)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(reqwest::Body::from(self.body.to_vec()))
            .send();
        let (deadline, waiting_for, after_ms) = self.chunk_deadline();
        let response = match tokio::time::timeout_at(deadline, send).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    waiting_for,
                    after_ms,
                });
            }
            Ok(Err(e)) => return Err(request_error(&e, &self.endpoint)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if status == 200 {
            return Ok(response);
        }
        let retry_after_ms = retry_after_ms(&response);
        let code = error_code(response).await;
        Err(match (status, code) {
            (401 | 403 | 429, _) | (_, None) => status_error(status, retry_after_ms),
            (_, Some(code)) => ProviderError::Server {
                status,
                reason: code.into(),
            },
        })
    }

    fn may_retry(&self, error: &ProviderError) -> bool {
        !self.decoder.first_token_seen
            && error.is_retryable()
            && self.attempt < self.config.max_attempts
            && !matches!(
                error,
                ProviderError::Timeout {
                    waiting_for: "first token",
                    ..
                }
            )
    }

    /// Resets the attempt and waits the backoff; fails if the backoff would
    /// pass the first-token deadline or the server asked for too long a wait.
    async fn back_off(&mut self, error: &ProviderError) -> Result<(), ProviderError> {
        self.response = None;
        self.lines = SseLines::default();
        self.decoder = ChunkDecoder::default();
        self.pending.clear();
        let exp = self.config.retry_backoff_ms << (self.attempt - 1).min(6);
        let wait = match error {
            ProviderError::RateLimited {
                retry_after_ms: Some(ms),
            } => {
                if Duration::from_millis(*ms) > MAX_RETRY_AFTER {
                    return Err(error.clone());
                }
                (*ms).max(exp)
            }
            _ => exp,
        };
        let resume = Instant::now() + Duration::from_millis(wait);
        let deadline = self.started + Duration::from_millis(self.config.first_token_timeout_ms);
        if resume >= deadline {
            return Err(error.clone());
        }
        tracing::debug!(attempt = self.attempt, wait_ms = wait, kind = ?error.kind(), "llm retry");
        tokio::time::sleep_until(resume).await;
        Ok(())
    }
}

fn request_error(error: &reqwest::Error, url: &str) -> ProviderError {
    if error.is_timeout() || error.is_connect() {
        ProviderError::Connect {
            reason: format!("connection to {} failed", redact_url(url)).into(),
        }
    } else {
        ProviderError::disconnected("request failed before a response")
    }
}

fn retry_after_ms(response: &reqwest::Response) -> Option<u64> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    let secs: f64 = value.trim().parse().ok()?;
    (secs >= 0.0).then_some((secs * 1000.0) as u64)
}

/// The `error.code` or `error.type` of an error body, if short and plain (the
/// message may quote the key or the prompt, so it is never used).
async fn error_code(response: reqwest::Response) -> Option<String> {
    let body = tokio::time::timeout(Duration::from_millis(500), response.bytes())
        .await
        .ok()?
        .ok()?;
    let value: Value = serde_json::from_slice(&body).ok()?;
    let error = value.get("error")?;
    let code = error.get("code").or_else(|| error.get("type"))?;
    match code {
        Value::String(s) => safe_code(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Splits a server-sent-event byte stream into the `data` payloads of its events.
///
/// Sans-IO: push bytes as they arrive, then take complete payloads. Comment
/// lines (`: OPENROUTER PROCESSING`) and other fields are skipped; several
/// `data:` lines of one event are joined with `\n`.
#[derive(Debug, Default)]
pub struct SseLines {
    buf: Vec<u8>,
    data: Option<String>,
    ready: VecDeque<String>,
}

impl SseLines {
    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.buf.extend_from_slice(bytes);
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = std::str::from_utf8(line)
                .map_err(|_| ProviderError::protocol("SSE line is not UTF-8"))?;
            self.line(line);
        }
        if self.buf.len() > MAX_SSE_LINE_BYTES {
            return Err(ProviderError::protocol("SSE line too long"));
        }
        Ok(())
    }

    fn line(&mut self, line: &str) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                self.ready.push_back(data);
            }
            return;
        }
        let Some(value) = line.strip_prefix("data:") else {
            return; // a comment, `event:`, `id:`, `retry:` or an unknown field
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut self.data {
            Some(data) => {
                data.push('\n');
                data.push_str(value);
            }
            None => self.data = Some(value.to_owned()),
        }
    }

    /// The next complete event's data.
    pub fn next_data(&mut self) -> Option<String> {
        self.ready.pop_front()
    }
}

/// Turns chunk payloads into events (sans-IO).
#[derive(Debug, Default)]
pub struct ChunkDecoder {
    /// Whether a text or tool-call delta has been produced.
    pub first_token_seen: bool,
    /// Whether `[DONE]` has been seen.
    pub done: bool,
    /// Reasoning deltas seen so far (liveness before the first token).
    pub reasoning_deltas: u64,
    upstream_logged: bool,
}

impl ChunkDecoder {
    /// Decodes one `data` payload into `out`.
    pub fn decode(
        &mut self,
        data: &str,
        out: &mut VecDeque<LlmEvent>,
    ) -> Result<(), ProviderError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            out.push_back(LlmEvent::Done);
            return Ok(());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|_| ProviderError::protocol("malformed chunk"))?;
        if !chunk.is_object() {
            return Err(ProviderError::protocol("chunk is not an object"));
        }
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if !self.upstream_logged {
            self.upstream_logged = true;
            let field = |k: &str| chunk.get(k).and_then(Value::as_str).unwrap_or("");
            tracing::info!(
                upstream_provider = field("provider"),
                upstream_model = field("model"),
                "llm upstream"
            );
        }
        if let Some(choices) = chunk.get("choices") {
            let choices = choices
                .as_array()
                .ok_or(ProviderError::protocol("choices is not an array"))?;
            if let Some(delta) = choices.first().and_then(|c| c.get("delta")) {
                self.delta(delta, out)?;
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
            out.push_back(LlmEvent::Usage {
                input_tokens: count("prompt_tokens"),
                output_tokens: count("completion_tokens"),
            });
        }
        Ok(())
    }

    fn delta(&mut self, delta: &Value, out: &mut VecDeque<LlmEvent>) -> Result<(), ProviderError> {
        // OpenRouter streams `delta.reasoning`
        // (<https://openrouter.ai/docs/use-cases/reasoning-tokens>); DeepSeek,
        // vLLM and others `delta.reasoning_content`. Never spoken: liveness only.
        let reasoning = ["reasoning", "reasoning_content"]
            .iter()
            .filter_map(|k| delta.get(*k).and_then(Value::as_str))
            .map(str::len)
            .sum::<usize>();
        if reasoning > 0 {
            self.reasoning_deltas += 1;
            out.push_back(LlmEvent::ReasoningDelta {
                bytes: u32::try_from(reasoning).unwrap_or(u32::MAX),
            });
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.first_token_seen = true;
            out.push_back(LlmEvent::TextDelta(text.to_owned()));
        }
        let Some(calls) = delta.get("tool_calls").filter(|c| !c.is_null()) else {
            return Ok(());
        };
        let calls = calls
            .as_array()
            .ok_or(ProviderError::protocol("tool_calls is not an array"))?;
        for (position, call) in calls.iter().enumerate() {
            // Some compatible backends omit `index` (OpenAI always sends it):
            // the call's place in this delta's array stands in for it.
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let function = call.get("function");
            let text = |v: Option<&Value>, k: &str| {
                v.and_then(|v| v.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            self.first_token_seen = true;
            out.push_back(LlmEvent::ToolCallDelta {
                index: index as u32,
                id: text(Some(call), "id"),
                name: text(function, "name"),
                arguments_delta: text(function, "arguments").unwrap_or_default(),
            });
        }
        Ok(())
    }
}

/// An error object sent inside the stream (OpenRouter does this after a 200).
fn stream_error(error: &Value) -> ProviderError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .map_or(502, |c| c as u16);
    let reason = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str))
        .and_then(safe_code)
        .unwrap_or_else(|| "error in stream".to_owned());
    match status {
        401 | 403 => ProviderError::Auth {
            status: Some(status),
        },
        429 => ProviderError::RateLimited {
            retry_after_ms: None,
        },
        _ => ProviderError::Server {
            status,
            reason: reason.into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    fn decode_all(payloads: &[&str]) -> Result<Vec<LlmEvent>, ProviderError> {
        let mut decoder = ChunkDecoder::default();
        let mut out = VecDeque::new();
        for p in payloads {
            decoder.decode(p, &mut out)?;
        }
        Ok(out.into())
    }

    #[test]
    fn sse_lines_split_across_pushes_and_skip_comments() {
        let mut sse = SseLines::default();
        sse.push(b": OPENROUTER PROCESSING\n\ndata: {\"a\"")
            .unwrap();
        assert_eq!(sse.next_data(), None);
        sse.push(b":1}\r\n\r\ndata: x\ndata: y\n\n").unwrap();
        assert_eq!(sse.next_data().as_deref(), Some("{\"a\":1}"));
        assert_eq!(sse.next_data().as_deref(), Some("x\ny"));
        assert_eq!(sse.next_data(), None);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut sse = SseLines::default();
        let err = sse.push(&vec![b'a'; MAX_SSE_LINE_BYTES + 1]).unwrap_err();
        assert_eq!(err, ProviderError::protocol("SSE line too long"));
    }

    #[test]
    fn deltas_usage_and_done_decode() {
        let events = decode_all(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![
                LlmEvent::TextDelta("Hi".into()),
                LlmEvent::Usage {
                    input_tokens: 9,
                    output_tokens: 2
                },
                LlmEvent::Done
            ]
        );
    }

    #[test]
    fn tool_call_pieces_assemble() {
        let events = decode_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"hang_up","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"UTC\"}"}}]}}]}"#,
        ])
        .unwrap();
        let mut assembler = ToolCallAssembler::default();
        events.iter().for_each(|e| assembler.push(e));
        let calls = assembler.finish();
        assert_eq!(calls.len(), 2);
        assert_eq!((&*calls[0].id, &*calls[0].name), ("call_1", "get_time"));
        assert_eq!(&*calls[0].arguments, r#"{"tz":"UTC"}"#);
        assert_eq!((&*calls[1].name, &*calls[1].arguments), ("hang_up", "{}"));
    }

    #[test]
    fn garbage_and_in_stream_errors_are_typed() {
        assert_eq!(
            decode_all(&["{nope"]),
            Err(ProviderError::protocol("malformed chunk"))
        );
        assert_eq!(
            decode_all(&["42"]),
            Err(ProviderError::protocol("chunk is not an object"))
        );
        let err = decode_all(&[r#"{"error":{"code":503,"message":"upstream sk-x"}}"#]).unwrap_err();
        assert_eq!(err, ProviderError::server(503, "error in stream"));
    }

    #[test]
    fn a_tool_call_without_index_takes_its_place_in_the_array() {
        let events = decode_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
        ])
        .unwrap();
        let mut assembler = ToolCallAssembler::default();
        events.iter().for_each(|e| assembler.push(e));
        let calls = assembler.finish();
        assert_eq!((&*calls[0].id, &*calls[1].id), ("a", "b"));
    }

    #[test]
    fn reasoning_deltas_are_liveness_not_text() {
        let events = decode_all(&[
            r#"{"choices":[{"delta":{"reasoning":"Let me think"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":"Hi"}}]}"#,
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![
                LlmEvent::ReasoningDelta { bytes: 12 },
                LlmEvent::ReasoningDelta { bytes: 3 },
                LlmEvent::TextDelta("Hi".into()),
            ]
        );
    }

    #[test]
    fn the_limit_field_and_effort_follow_the_server() {
        assert_eq!(
            MaxTokensField::for_base_url("https://api.openai.com/v1"),
            MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(
            MaxTokensField::for_base_url(OPENROUTER_BASE_URL),
            MaxTokensField::MaxTokens
        );
        assert_eq!(
            MaxTokensField::for_base_url("http://127.0.0.1:8080/v1"),
            MaxTokensField::MaxTokens
        );
        let openai = OPENAI_BASE_URL;
        assert!(check_reasoning_effort(openai, "gpt-5.1", "none").is_ok());
        assert!(check_reasoning_effort(openai, "gpt-5-mini", "minimal").is_ok());
        assert!(matches!(
            check_reasoning_effort(openai, "gpt-5.1", "minimal"),
            Err(ReasoningEffortError::NotForGpt51 { .. })
        ));
        assert!(matches!(
            check_reasoning_effort(openai, "gpt-5-mini", "none"),
            Err(ReasoningEffortError::NoneBeforeGpt51 { .. })
        ));
        assert!(matches!(
            check_reasoning_effort(openai, "o3-mini", "none"),
            Err(ReasoningEffortError::NoneBeforeGpt51 { .. })
        ));
        assert!(matches!(
            check_reasoning_effort(openai, "gpt-5.1", "max"),
            Err(ReasoningEffortError::Unknown { .. })
        ));
        assert!(matches!(
            check_reasoning_effort(openai, "gpt-4o-mini", "low"),
            Err(ReasoningEffortError::NotReasoningModel { .. })
        ));
        assert!(check_reasoning_effort(OPENROUTER_BASE_URL, "openai/gpt-5-mini", "none").is_ok());
    }

    #[test]
    fn body_carries_routing_effort_limit_tools_and_messages() {
        let config = OpenAiLlmConfig::openrouter(ApiKey::new("k"), "openai/gpt-x")
            .with_provider_routing(vec!["openai".into()], false)
            .with_reasoning_effort("none")
            .with_max_tokens(120, MaxTokensField::MaxCompletionTokens);
        let tools = vec![crate::ToolDefinition {
            name: "get_time".into(),
            description: "now".into(),
            parameters: Arc::new(json!({"type": "object"})),
        }];
        let call = ToolCall {
            id: "c1".into(),
            name: "get_time".into(),
            arguments: "{}".into(),
        };
        let request = LlmRequest::new(vec![
            Message::system("be brief"),
            Message::user("time?"),
            Message::assistant_tool_calls(vec![call]),
            Message::tool_result("c1", "12:00"),
        ])
        .with_tools(tools);
        let body = OpenAiLlm::new(config).request_body(&request);
        assert_eq!(
            body["provider"],
            json!({"order": ["openai"], "allow_fallbacks": false})
        );
        assert_eq!(body["reasoning_effort"], "none");
        assert_eq!(body["max_completion_tokens"], 120);
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["tools"][0]["function"]["name"], "get_time");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{}"
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "12:00"})
        );
    }

    #[test]
    fn plain_openai_body_sends_no_routing() {
        let llm =
            OpenAiLlm::new(OpenAiLlmConfig::new(ApiKey::new("k"), "gpt-x").with_temperature(0.3));
        let body = llm.request_body(&LlmRequest::new(vec![Message::user("hi")]).with_max_tokens(5));
        assert!(body.get("provider").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(body["max_completion_tokens"], 5);
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(
            body["temperature"].as_f64().map(|t| (t * 10.0).round()),
            Some(3.0)
        );
    }
}
