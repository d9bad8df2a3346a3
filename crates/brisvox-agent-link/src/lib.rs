//! brisvox-agent-link: the out-of-process agent protocol.
//!
//! Per call, the server opens a websocket to the agent's URL and sends the
//! call's events; the agent answers with commands (say, context update, set
//! tools, tool result, respond, end call), naming the event they answer with
//! `re`. The protocol is documented in `docs/AGENT_PROTOCOL.md`, with a JSON
//! Schema for every message in `docs/agent-protocol.schema.json`; an agent
//! can be written in any language from those two files.
//!
//! - [`protocol`]: the messages as Rust types (serde), command checks.
//! - [`core`]: [`LinkCore`], the sans-IO link: bounded queue, correlation by
//!   `re`, tool-call outcomes, reconnect with backoff, the failure policy.
//! - [`stats`]: [`LinkStats`], hop latency measured by the link itself.
//! - [`client`]: [`AgentLink`], the tokio task that owns the websocket.

pub mod client;
pub mod core;
pub mod protocol;
pub mod stats;

pub use client::{AgentLink, AgentLinkConfig, LinkHandle};
pub use core::{LinkConfig, LinkCore, LinkState, Output};
pub use protocol::{
    Command, CommandError, CommandFrame, ContextMessage, ContextRole, Event, EventFrame,
    MessagesMode, MessagesUpdate, PROTOCOL_VERSION, ToolSpec, parse_command,
};
pub use stats::{HOP_BUCKETS_US, LinkStats};
