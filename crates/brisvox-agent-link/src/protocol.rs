//! The agent link's messages, exactly as they travel (docs/AGENT_PROTOCOL.md;
//! JSON Schema: docs/agent-protocol.schema.json).
//!
//! One websocket per call, opened by the server to the agent's URL; every
//! message is one JSON text frame with a `"type"`. The server sends
//! [`Event`]s, each with an `id` (1, 2, ... within the call); the agent sends
//! [`Command`]s, which name the event they answer with `re` where they answer
//! one (a `tool.result` must). This module only maps JSON to types: no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this crate speaks (`call.started.protocol`).
pub const PROTOCOL_VERSION: u32 = 1;

/// A message from the server to the agent, with its per-call id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventFrame {
    /// The event's id: 1 for the first event of the call, then one more each.
    pub id: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// What the server tells the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
#[non_exhaustive]
pub enum Event {
    /// The call started (or the link reconnected: `resumed`).
    #[serde(rename = "call.started")]
    CallStarted {
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// The server's id for the call.
        call_id: String,
        /// The route the call came in on: `call`, `twilio`, ...
        route: String,
        /// Who is calling, when the route knows (a phone number), else null.
        caller: Option<String>,
        /// The call's metadata (the client's `start` metadata, Twilio's
        /// custom parameters), a JSON object.
        metadata: Value,
        /// True when this is a reconnected link of a call already started.
        resumed: bool,
    },
    /// The caller started speaking.
    #[serde(rename = "user.started_speaking")]
    UserStartedSpeaking {},
    /// The caller stopped speaking (the turn may not be over).
    #[serde(rename = "user.stopped_speaking")]
    UserStoppedSpeaking {},
    /// A transcript of the caller.
    #[serde(rename = "user.transcript")]
    UserTranscript {
        /// The text.
        text: String,
        /// True when the STT will not revise it.
        #[serde(rename = "final")]
        is_final: bool,
    },
    /// Text of the bot's answer as it is sent to the TTS.
    #[serde(rename = "bot.text")]
    BotText {
        /// The turn (the engine's epoch).
        turn: u64,
        /// One speakable chunk.
        text: String,
    },
    /// The bot's first audio of a turn reached the caller's transport.
    #[serde(rename = "bot.started_speaking")]
    BotStartedSpeaking {
        /// The turn.
        turn: u64,
    },
    /// The bot's answer of a turn is over.
    #[serde(rename = "bot.stopped_speaking")]
    BotStoppedSpeaking {
        /// The turn.
        turn: u64,
    },
    /// The bot's answer was cut (the caller talked over it, or an
    /// interrupting `say`).
    #[serde(rename = "bot.interrupted")]
    BotInterrupted {
        /// The interrupted turn.
        turn: u64,
        /// The part of the cut answer the caller heard, cut after the last
        /// heard word.
        heard: String,
    },
    /// The model called a tool served by the agent; answer with `tool.result`.
    #[serde(rename = "tool.call")]
    ToolCall {
        /// The turn.
        turn: u64,
        /// The model's id for the call.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments: the JSON the model wrote, parsed; a string holding
        /// the raw text when it was not valid JSON.
        arguments: Value,
    },
    /// The caller pressed keys.
    #[serde(rename = "dtmf")]
    Dtmf {
        /// The digits (`0-9`, `*`, `#`, `A-D`).
        digits: String,
    },
    /// A turn's latency metrics, in milliseconds (a metric whose endpoints
    /// were not reached is absent).
    #[serde(rename = "turn.metrics")]
    TurnMetrics {
        /// The turn.
        turn: u64,
        /// Metric name to milliseconds.
        metrics_ms: serde_json::Map<String, Value>,
    },
    /// The call ended; the server closes the link after this event.
    #[serde(rename = "call.ended")]
    CallEnded {
        /// Why: `hangup`, `agent`, `idle`, `max_duration`, `error`, ...
        reason: String,
    },
    /// A command could not be used; the call goes on.
    #[serde(rename = "error")]
    Error {
        /// The `re` of the refused command, when it had one.
        re: Option<u64>,
        /// What was wrong.
        message: String,
    },
}

impl Event {
    /// The event's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::CallStarted { .. } => "call.started",
            Event::UserStartedSpeaking {} => "user.started_speaking",
            Event::UserStoppedSpeaking {} => "user.stopped_speaking",
            Event::UserTranscript { .. } => "user.transcript",
            Event::BotText { .. } => "bot.text",
            Event::BotStartedSpeaking { .. } => "bot.started_speaking",
            Event::BotStoppedSpeaking { .. } => "bot.stopped_speaking",
            Event::BotInterrupted { .. } => "bot.interrupted",
            Event::ToolCall { .. } => "tool.call",
            Event::Dtmf { .. } => "dtmf",
            Event::TurnMetrics { .. } => "turn.metrics",
            Event::CallEnded { .. } => "call.ended",
            Event::Error { .. } => "error",
        }
    }
}

/// A message from the agent to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandFrame {
    /// The id of the event this command answers, if it answers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub re: Option<u64>,
    /// What to do.
    #[serde(flatten)]
    pub command: Command,
}

/// How `context.update` changes the conversation's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessagesMode {
    /// Add the items after the conversation so far.
    Append,
    /// Replace the conversation (not the system prompt) with the items.
    Replace,
}

/// A conversation message in `context.update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextMessage {
    /// `system`, `user` or `assistant`.
    pub role: ContextRole,
    /// The text.
    pub content: String,
}

/// Who a [`ContextMessage`] is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextRole {
    /// An instruction.
    System,
    /// The caller.
    User,
    /// The bot.
    Assistant,
}

/// The messages part of `context.update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesUpdate {
    /// Append or replace.
    pub mode: MessagesMode,
    /// The messages.
    pub items: Vec<ContextMessage>,
}

/// A tool the agent serves, as `tools.set` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name the model calls it by (`^[A-Za-z0-9_-]{1,64}$`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// What the agent asks of the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
#[non_exhaustive]
pub enum Command {
    /// Speak `text` without the model.
    #[serde(rename = "say")]
    Say {
        /// What to say.
        text: String,
        /// True: stop what the bot is saying and say this now; false
        /// (default): say it when the bot is next silent.
        #[serde(default)]
        interrupt: bool,
    },
    /// Change what the model sees from the next completion on.
    #[serde(rename = "context.update")]
    ContextUpdate {
        /// A new system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
        /// Messages to append, or to replace the conversation with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<MessagesUpdate>,
    },
    /// Declare the tools the agent serves (replaces the agent's earlier set;
    /// the agent file's webhook tools stay).
    #[serde(rename = "tools.set")]
    ToolsSet {
        /// The tools.
        tools: Vec<ToolSpec>,
    },
    /// The result of a `tool.call` (named by `re`): `result` (any JSON) or
    /// `error` (a message the model reads as a failed call).
    #[serde(rename = "tool.result")]
    ToolResult {
        /// The result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Why the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Ask the model to answer now, over the conversation as it stands.
    #[serde(rename = "respond")]
    Respond {},
    /// End the call (after saying `say`, if given).
    #[serde(rename = "call.end")]
    CallEnd {
        /// Said before hanging up.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        say: Option<String>,
        /// Why, for the logs and `call.ended`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Hand a phone call over (after saying `say`, if given): the carrier
    /// connects the caller to `to` and the call ends.
    #[serde(rename = "call.transfer")]
    CallTransfer {
        /// Where to: the name of one of the agent file's
        /// `[telephony.transfer]` destinations, an E.164 number or a `sip:` URI.
        to: String,
        /// Said before the transfer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        say: Option<String>,
    },
}

impl Command {
    /// The command's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Command::Say { .. } => "say",
            Command::ContextUpdate { .. } => "context.update",
            Command::ToolsSet { .. } => "tools.set",
            Command::ToolResult { .. } => "tool.result",
            Command::Respond {} => "respond",
            Command::CallEnd { .. } => "call.end",
            Command::CallTransfer { .. } => "call.transfer",
        }
    }
}

/// Why a command frame was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// Not JSON, not an object, an unknown `type` or field, a missing field.
    #[error("bad command: {0}")]
    Malformed(String),
    /// A `tool.result` without `re`, or with both or neither of `result` and `error`.
    #[error("tool.result needs `re` and exactly one of `result` and `error`")]
    BadToolResult,
    /// A tool name the model cannot use.
    #[error("tool name {0:?} must be 1 to 64 of A-Z a-z 0-9 _ -")]
    BadToolName(String),
    /// A tool's `parameters` is not a JSON object.
    #[error("tool {0:?}: parameters must be a JSON Schema object")]
    BadToolParameters(String),
}

/// Parses and checks one command frame.
pub fn parse_command(text: &str) -> Result<CommandFrame, CommandError> {
    let frame: CommandFrame =
        serde_json::from_str(text).map_err(|e| CommandError::Malformed(e.to_string()))?;
    match &frame.command {
        Command::ToolResult { result, error }
            if frame.re.is_none() || result.is_some() == error.is_some() =>
        {
            return Err(CommandError::BadToolResult);
        }
        Command::ToolsSet { tools } => {
            for tool in tools {
                check_tool(tool)?;
            }
        }
        _ => {}
    }
    Ok(frame)
}

fn check_tool(tool: &ToolSpec) -> Result<(), CommandError> {
    let name_ok = (1..=64).contains(&tool.name.len())
        && tool
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(CommandError::BadToolName(tool.name.clone()));
    }
    if !tool.parameters.is_object() {
        return Err(CommandError::BadToolParameters(tool.name.clone()));
    }
    Ok(())
}

/// The JSON text of an event frame.
pub fn event_text(frame: &EventFrame) -> String {
    // Cannot fail: every field is a string, number, bool, null or JSON value.
    serde_json::to_string(frame).expect("an event serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_carries_its_type_and_id_at_the_top_level() {
        let frame = EventFrame {
            id: 7,
            event: Event::UserTranscript {
                text: "hi".into(),
                is_final: true,
            },
        };
        let json: Value = serde_json::from_str(&event_text(&frame)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id": 7, "type": "user.transcript", "text": "hi", "final": true})
        );
    }

    #[test]
    fn bad_commands_are_refused_with_a_reason() {
        for (text, want) in [
            ("not json", "bad command"),
            (r#"{"type":"sya","text":"x"}"#, "unknown variant"),
            (r#"{"type":"say"}"#, "missing field `text`"),
            (r#"{"type":"say","text":"x","loud":true}"#, "unknown field"),
            (r#"{"type":"tool.result","result":1}"#, "needs `re`"),
            (
                r#"{"type":"tool.result","re":3,"result":1,"error":"x"}"#,
                "exactly one",
            ),
            (
                r#"{"type":"tools.set","tools":[{"name":"a b","description":"","parameters":{}}]}"#,
                "tool name",
            ),
            (
                r#"{"type":"tools.set","tools":[{"name":"a","description":"","parameters":3}]}"#,
                "parameters must be",
            ),
        ] {
            let error = parse_command(text).expect_err(text).to_string();
            assert!(error.contains(want), "{text}: {error}");
        }
    }

    #[test]
    fn a_command_without_re_and_with_defaults_parses() {
        let frame = parse_command(r#"{"type":"say","text":"One moment."}"#).unwrap();
        assert_eq!(frame.re, None);
        assert_eq!(
            frame.command,
            Command::Say {
                text: "One moment.".into(),
                interrupt: false
            }
        );
    }
}
