//! Webhook tools: the agent file's `[[tools]]`, run as HTTP requests.
//!
//! [`WebhookTools`] is built once at startup (one HTTP client for the
//! process); [`WebhookTools::for_call`] gives each call a
//! [`ToolExecutor`](brisvox_engine::ToolExecutor) that knows the call's id and
//! metadata. Each invocation sends one JSON request:
//!
//! ```json
//! {"tool": "order_status", "call_id": "c-1", "tool_call_id": "call_abc", "turn": 3,
//!  "arguments": {"order_id": "42"}, "metadata": {"customer": "7"}}
//! ```
//!
//! (`arguments` is the model's JSON, parsed; a string when it was invalid
//! JSON.) A 2xx answer whose body is JSON is the result the model reads; an
//! empty body is `null`. Everything else is an error result that says why:
//! an HTTP error status (with the start of its body), a body that is not
//! JSON, a body over `max_response_bytes`, no answer within `timeout_ms`, or
//! no connection.

use std::sync::Arc;
use std::time::Duration;

use brisvox_engine::{ToolExecutor, ToolInvocation, ToolOutcome};
use brisvox_providers::{BoxFuture, ToolDefinition};
use serde_json::{Map, Value, json};

use crate::agent::{ToolSettings, WebhookSettings};

/// How much of an error answer's body the model reads, in characters.
const ERROR_BODY_CHARS: usize = 200;

/// The process's webhook tools.
#[derive(Debug, Clone)]
pub struct WebhookTools {
    tools: Arc<[ToolSettings]>,
    definitions: Arc<[ToolDefinition]>,
    client: reqwest::Client,
}

impl WebhookTools {
    /// The agent file's tools (already checked), or `None` when it has none.
    pub fn new(tools: &[ToolSettings]) -> Option<Self> {
        if tools.is_empty() {
            return None;
        }
        let definitions = tools
            .iter()
            .map(|t| ToolDefinition {
                name: Arc::from(t.name.as_str()),
                description: Arc::from(t.description.as_str()),
                parameters: Arc::new(t.parameters.clone()),
            })
            .collect();
        Some(WebhookTools {
            tools: tools.into(),
            definitions,
            client: reqwest::Client::new(),
        })
    }

    /// The tools' definitions, as the model sees them.
    pub fn definitions(&self) -> Arc<[ToolDefinition]> {
        Arc::clone(&self.definitions)
    }

    /// Whether a tool of this name is a webhook tool.
    pub fn serves(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// The executor of one call.
    pub fn for_call(&self, call_id: &str, metadata: Map<String, Value>) -> CallWebhooks {
        CallWebhooks {
            tools: self.clone(),
            call_id: Arc::from(call_id),
            metadata: Arc::new(Value::Object(metadata)),
        }
    }
}

/// The webhook tools of one call.
#[derive(Debug, Clone)]
pub struct CallWebhooks {
    tools: WebhookTools,
    call_id: Arc<str>,
    metadata: Arc<Value>,
}

impl CallWebhooks {
    /// Whether a tool of this name is a webhook tool.
    pub fn serves(&self, name: &str) -> bool {
        self.tools.serves(name)
    }
}

impl ToolExecutor for CallWebhooks {
    fn definitions(&self) -> Arc<[ToolDefinition]> {
        self.tools.definitions()
    }

    fn invoke(&self, call: ToolInvocation) -> BoxFuture<'static, ToolOutcome> {
        let Some(tool) = self.tools.tools.iter().find(|t| *t.name == *call.name) else {
            let outcome = ToolOutcome::error(format!("unknown tool {}", call.name));
            return Box::pin(std::future::ready(outcome));
        };
        let arguments = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.to_string()));
        let body = json!({
            "tool": &*call.name,
            "call_id": &*self.call_id,
            "tool_call_id": &*call.call_id,
            "turn": call.epoch.0,
            "arguments": arguments,
            "metadata": &*self.metadata,
        });
        let request = request(&self.tools.client, &tool.webhook, &self.call_id, &body);
        let (name, webhook) = (tool.name.clone(), tool.webhook.clone());
        Box::pin(async move { outcome(&name, &webhook, request).await })
    }
}

fn request(
    client: &reqwest::Client,
    webhook: &WebhookSettings,
    call_id: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    let method = match webhook.method {
        crate::agent::WebhookMethod::Post => reqwest::Method::POST,
        crate::agent::WebhookMethod::Put => reqwest::Method::PUT,
        crate::agent::WebhookMethod::Patch => reqwest::Method::PATCH,
    };
    let mut builder = client
        .request(method, &webhook.url)
        .timeout(Duration::from_millis(u64::from(webhook.timeout_ms)))
        .header("content-type", "application/json")
        .header("x-brisvox-call-id", call_id)
        .body(body.to_string());
    for (name, value) in &webhook.resolved_headers {
        builder = builder.header(name.as_str(), value.expose());
    }
    builder
}

/// Sends the request and turns its answer into what the model reads.
async fn outcome(
    name: &str,
    webhook: &WebhookSettings,
    request: reqwest::RequestBuilder,
) -> ToolOutcome {
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) if e.is_timeout() => return timed_out(name, webhook),
        Err(_) => return ToolOutcome::error(format!("tool {name} could not be reached")),
    };
    let status = response.status();
    let body = match read_capped(response, webhook.max_response_bytes as usize).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            let max = webhook.max_response_bytes;
            return ToolOutcome::error(format!("tool {name} answered more than {max} bytes"));
        }
        Err(BodyError::Timeout) => return timed_out(name, webhook),
        Err(BodyError::Broken) => {
            return ToolOutcome::error(format!("tool {name}'s answer broke off"));
        }
    };
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        let start: String = text.chars().take(ERROR_BODY_CHARS).collect();
        let code = status.as_u16();
        return ToolOutcome::error(format!("tool {name} failed: HTTP {code}: {start}"));
    }
    if text.trim().is_empty() {
        return ToolOutcome::ok("null");
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => ToolOutcome::ok(value.to_string()),
        Err(_) => ToolOutcome::error(format!("tool {name} answered with invalid JSON")),
    }
}

fn timed_out(name: &str, webhook: &WebhookSettings) -> ToolOutcome {
    let ms = webhook.timeout_ms;
    ToolOutcome::error(format!("tool {name} timed out after {ms} ms"))
}

enum BodyError {
    TooLarge,
    Timeout,
    Broken,
}

/// The body, refused as soon as it passes `max` bytes (never buffered whole).
async fn read_capped(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > max {
                    return Err(BodyError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => return Err(BodyError::Timeout),
            Err(_) => return Err(BodyError::Broken),
        }
    }
}
