//! `[[tools]]` (webhook tools the model may call) and `[tool_calls]` (how the
//! engine runs tool calls).
//!
//! Every tool is checked at startup: its name, its description, its
//! parameters (a JSON Schema object, checked for the shape a model needs:
//! `type = "object"`, known types, `required` naming declared properties) and
//! its webhook (an `http(s)` URL, a method that takes a JSON body, a
//! timeout). Header values may hold `${VAR}` references, resolved from the
//! environment at startup; a header that carries a credential
//! (`Authorization`, or a name with `key`, `token` or `secret`) must be one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentError;
use super::providers::EnvLookup;

/// Default of `[[tools]] webhook.timeout_ms`.
pub const DEFAULT_WEBHOOK_TIMEOUT_MS: u32 = 5_000;
/// Default of `[[tools]] webhook.max_response_bytes`: 64 KiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u32 = 65_536;

/// The JSON Schema types a property may have.
const SCHEMA_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "array", "object", "null",
];

/// The HTTP method of a webhook (each sends a JSON body).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum WebhookMethod {
    /// `POST` (the default).
    #[default]
    #[serde(rename = "POST")]
    Post,
    /// `PUT`.
    #[serde(rename = "PUT")]
    Put,
    /// `PATCH`.
    #[serde(rename = "PATCH")]
    Patch,
}

impl WebhookMethod {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookMethod::Post => "POST",
            WebhookMethod::Put => "PUT",
            WebhookMethod::Patch => "PATCH",
        }
    }
}

/// Where a tool's calls go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// The URL (`http://` or `https://`).
    pub url: String,
    /// The method.
    #[serde(default)]
    pub method: WebhookMethod,
    /// Extra headers; values may reference environment variables as `${VAR}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Longest wait for the answer, in milliseconds (100 to 60000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u32,
    /// Largest answer body taken, in bytes (1 to 16 MiB); a larger one is an error.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u32,
    /// The headers with their `${VAR}`s resolved (not in the file).
    #[serde(skip)]
    pub resolved_headers: Vec<(String, crate::secret::Secret)>,
}

fn default_timeout_ms() -> u32 {
    DEFAULT_WEBHOOK_TIMEOUT_MS
}

fn default_max_response_bytes() -> u32 {
    DEFAULT_MAX_RESPONSE_BYTES
}

/// One `[[tools]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// The name the model calls it by (1 to 64 of `A-Z a-z 0-9 _ -`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// The HTTP endpoint that runs it.
    pub webhook: WebhookSettings,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// `[agent_link]`: the agent's websocket, opened for every call
/// (docs/AGENT_PROTOCOL.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentLinkSettings {
    /// The agent's `ws://` or `wss://` URL; no link when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Longest one connection attempt may take (100 to 30000 ms).
    pub connect_timeout_ms: u32,
}

impl Default for AgentLinkSettings {
    fn default() -> Self {
        Self {
            url: None,
            connect_timeout_ms: 2_000,
        }
    }
}

impl AgentLinkSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        if let Some(url) = &self.url {
            let scheme_ok = ["ws://", "wss://"].iter().any(|s| url.starts_with(s));
            if !scheme_ok || url.len() <= "wss://".len() {
                return Err(invalid(
                    "agent_link.url".into(),
                    url,
                    "a ws:// or wss:// URL",
                ));
            }
        }
        within(
            "agent_link.connect_timeout_ms".into(),
            self.connect_timeout_ms,
            100,
            30_000,
        )
    }
}

/// `[tool_calls]`: how the engine runs the model's tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolCallSettings {
    /// Most rounds of tool calls per caller turn (1 to 20).
    pub max_rounds: u32,
    /// Longest one call may run before the model reads an error (100 to 120000 ms).
    pub timeout_ms: u32,
    /// Said while tools run longer than `filler_after_ms`; none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filler: Option<String>,
    /// How long tools run before the filler is said (0 to 30000 ms).
    pub filler_after_ms: u32,
}

impl Default for ToolCallSettings {
    fn default() -> Self {
        Self {
            max_rounds: 5,
            timeout_ms: 10_000,
            filler: None,
            filler_after_ms: 1_500,
        }
    }
}

fn invalid(key: String, value: impl std::fmt::Display, allowed: &str) -> AgentError {
    AgentError::InvalidValue {
        key,
        value: value.to_string(),
        allowed: allowed.to_owned(),
    }
}

fn within(key: String, v: u32, min: u32, max: u32) -> Result<(), AgentError> {
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        Err(invalid(
            key,
            v,
            &format!("a whole number from {min} to {max}"),
        ))
    }
}

impl ToolCallSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        within("tool_calls.max_rounds".into(), self.max_rounds, 1, 20)?;
        within(
            "tool_calls.timeout_ms".into(),
            self.timeout_ms,
            100,
            120_000,
        )?;
        within(
            "tool_calls.filler_after_ms".into(),
            self.filler_after_ms,
            0,
            30_000,
        )?;
        if self.filler.as_deref().is_some_and(|f| f.trim().is_empty()) {
            return Err(invalid(
                "tool_calls.filler".into(),
                "\"\"",
                "a non-empty string",
            ));
        }
        Ok(())
    }
}

/// Checks every tool and resolves the webhooks' header references.
pub(super) fn check_tools(
    tools: &mut [ToolSettings],
    env: EnvLookup<'_>,
) -> Result<(), AgentError> {
    for i in 0..tools.len() {
        let key = format!("tools[{i}]");
        let name = &tools[i].name;
        if tools[..i].iter().any(|t| &t.name == name) {
            return Err(invalid(
                format!("{key}.name"),
                format!("{name:?}"),
                "a name no other tool has",
            ));
        }
        tools[i].check(&key, env)?;
    }
    Ok(())
}

impl ToolSettings {
    fn check(&mut self, key: &str, env: EnvLookup<'_>) -> Result<(), AgentError> {
        let name_ok = (1..=64).contains(&self.name.len())
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            let allowed = "1 to 64 of A-Z a-z 0-9 _ -";
            return Err(invalid(
                format!("{key}.name"),
                format!("{:?}", self.name),
                allowed,
            ));
        }
        if self.description.trim().is_empty() {
            let k = format!("{key}.description");
            return Err(invalid(
                k,
                "\"\"",
                "a non-empty string (the model reads it)",
            ));
        }
        check_schema(&format!("{key}.parameters"), &self.parameters, true)?;
        self.webhook.check(&format!("{key}.webhook"), env)
    }
}

/// Checks the shape of a JSON Schema a model can use; `root` must be an object schema.
fn check_schema(key: &str, schema: &Value, root: bool) -> Result<(), AgentError> {
    let Some(map) = schema.as_object() else {
        return Err(invalid(key.to_owned(), schema, "a JSON Schema table"));
    };
    let ty = map.get("type");
    if root && ty.and_then(Value::as_str) != Some("object") {
        let shown = ty.map_or("(missing)".to_owned(), Value::to_string);
        return Err(invalid(format!("{key}.type"), shown, "\"object\""));
    }
    if let Some(ty) = ty {
        let names: Vec<&Value> = match ty {
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        for t in names {
            if !t.as_str().is_some_and(|t| SCHEMA_TYPES.contains(&t)) {
                return Err(invalid(format!("{key}.type"), t, &SCHEMA_TYPES.join(", ")));
            }
        }
    }
    let properties = match map.get("properties") {
        None => None,
        Some(Value::Object(props)) => Some(props),
        Some(other) => {
            return Err(invalid(
                format!("{key}.properties"),
                other,
                "a table of schemas",
            ));
        }
    };
    for (name, sub) in properties.into_iter().flatten() {
        check_schema(&format!("{key}.properties.{name}"), sub, false)?;
    }
    if let Some(items) = map.get("items") {
        check_schema(&format!("{key}.items"), items, false)?;
    }
    if let Some(required) = map.get("required") {
        let list = required
            .as_array()
            .filter(|l| l.iter().all(Value::is_string));
        let Some(list) = list else {
            return Err(invalid(
                format!("{key}.required"),
                required,
                "a list of property names",
            ));
        };
        for name in list.iter().filter_map(Value::as_str) {
            if !properties.is_some_and(|p| p.contains_key(name)) {
                let allowed = "names of properties declared in properties";
                return Err(invalid(
                    format!("{key}.required"),
                    format!("{name:?}"),
                    allowed,
                ));
            }
        }
    }
    Ok(())
}

/// Whether a header carries a credential (and so must come from the environment).
fn is_credential(header: &str) -> bool {
    let h = header.to_ascii_lowercase();
    h == "authorization" || ["key", "token", "secret"].iter().any(|w| h.contains(w))
}

impl WebhookSettings {
    fn check(&mut self, key: &str, env: EnvLookup<'_>) -> Result<(), AgentError> {
        let url_ok = reqwest::Url::parse(&self.url).is_ok_and(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
        });
        if !url_ok {
            let k = format!("{key}.url");
            return Err(invalid(
                k,
                format!("{:?}", self.url),
                "an http:// or https:// URL",
            ));
        }
        within(format!("{key}.timeout_ms"), self.timeout_ms, 100, 60_000)?;
        within(
            format!("{key}.max_response_bytes"),
            self.max_response_bytes,
            1,
            16 << 20,
        )?;
        self.resolved_headers.clear();
        for (name, value) in &self.headers {
            let k = format!("{key}.headers.{name}");
            if is_credential(name) && !value.contains("${") {
                return Err(AgentError::LiteralSecret { key: k });
            }
            let resolved = interpolate(&k, value, env)?;
            self.resolved_headers
                .push((name.clone(), crate::secret::Secret::new(resolved)));
        }
        Ok(())
    }
}

/// `value` with every `${VAR}` replaced by the variable's value.
fn interpolate(key: &str, value: &str, env: EnvLookup<'_>) -> Result<String, AgentError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(invalid(
                key.to_owned(),
                format!("{value:?}"),
                "${NAME} references closed by }",
            ));
        };
        let var = &after[..end];
        match env(var).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(AgentError::MissingEnvVar {
                    key: key.to_owned(),
                    var: var.to_owned(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
