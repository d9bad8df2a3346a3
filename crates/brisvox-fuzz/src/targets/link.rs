//! The agent link (`brisvox-agent-link`): what an agent sends back over the
//! link, through the link's sans-IO core as the link task drives it.
//!
//! A text message is a frame from the agent ([`LinkCore::handle_text`]); a
//! binary message is a run of the link task's own inputs, one per byte
//! ([`Op::from_byte`]): an event of the call, a tool call, the socket opening
//! or dropping, a failed attempt, the backoff's timeout, the call's end, a
//! millisecond passing. Every output is drained after each input, as the
//! task does.
//!
//! Checked besides "no panic": every event written is a JSON object with a
//! `type` and an `id` no other event of the call had; a tool call gets at
//! most one outcome, and only a call that was made; a `tool.result` never
//! reaches the call as a command; nothing is written after the link closed;
//! the link's own count of events sent is the count written.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use brisvox_agent_link::{Command, Event, LinkConfig, LinkCore, LinkState, Output};
use serde_json::Value;

use crate::messages::{Message, messages};

/// Time between two inputs of the harness.
const TICK: Duration = Duration::from_millis(1);

/// One input of the link task, other than an agent's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// An event of the call (`user.stopped_speaking`).
    Event = 0,
    /// The model calls a tool the agent serves.
    ToolCall = 1,
    /// The socket dropped.
    Disconnected = 2,
    /// The socket opened.
    Connected = 3,
    /// An attempt to connect failed.
    ConnectFailed = 4,
    /// The link's timeout (the backoff's end) came.
    Timeout = 5,
    /// The call ended.
    CallEnded = 6,
    /// Time passes.
    Tick = 7,
}

impl Op {
    /// The input a byte stands for (`byte % 8`).
    pub fn from_byte(byte: u8) -> Self {
        match byte % 8 {
            0 => Op::Event,
            1 => Op::ToolCall,
            2 => Op::Disconnected,
            3 => Op::Connected,
            4 => Op::ConnectFailed,
            5 => Op::Timeout,
            6 => Op::CallEnded,
            _ => Op::Tick,
        }
    }
}

/// The agent link of one call: agent frames and the task's inputs in `data`.
pub fn agent_link(data: &[u8]) {
    let mut link = Link::new();
    for msg in messages(data) {
        match msg {
            Message::Text(text) => {
                link.now += TICK;
                link.core.handle_text(link.now, &text);
                link.drain();
            }
            Message::Binary(ops) => {
                for &byte in ops {
                    link.apply(Op::from_byte(byte));
                    link.drain();
                }
            }
        }
    }
    assert_eq!(
        link.core.stats().events_sent,
        link.written,
        "events counted vs written"
    );
}

/// The core under test and what the harness saw of it.
struct Link {
    core: LinkCore,
    now: Instant,
    written: u64,
    ids: HashSet<u64>,
    tool_calls: u64,
    resolved: HashSet<String>,
    closed: bool,
}

impl Link {
    fn new() -> Self {
        let now = Instant::now();
        // Small limits, so that short inputs reach a full queue and a
        // link given up.
        let config = LinkConfig {
            queue_capacity: 8,
            max_attempts: 3,
            ..LinkConfig::default()
        };
        let started = Event::CallStarted {
            protocol: brisvox_agent_link::PROTOCOL_VERSION,
            call_id: "fuzz-call".into(),
            route: "call".into(),
            caller: None,
            metadata: Value::Object(serde_json::Map::new()),
            resumed: false,
        };
        Link {
            core: LinkCore::new(config, started, now),
            now,
            written: 0,
            ids: HashSet::new(),
            tool_calls: 0,
            resolved: HashSet::new(),
            closed: false,
        }
    }

    fn apply(&mut self, op: Op) {
        let now = self.now;
        match op {
            Op::Event => {
                self.core.handle_event(now, Event::UserStoppedSpeaking {});
            }
            Op::ToolCall => {
                self.tool_calls += 1;
                let call_id = format!("call_{}", self.tool_calls);
                let turn = self.tool_calls;
                let core = &mut self.core;
                core.handle_tool_call(now, turn, &call_id, "lookup", r#"{"q":1}"#);
            }
            Op::Disconnected => self.core.handle_disconnected(now),
            Op::Connected => self.core.handle_connected(now),
            Op::ConnectFailed => self.core.handle_connect_failed(now),
            Op::Timeout => {
                if let Some(at) = self.core.poll_timeout() {
                    self.now = self.now.max(at);
                    self.core.handle_timeout(self.now);
                }
            }
            Op::CallEnded => self.core.handle_call_ended(now, "hangup"),
            Op::Tick => self.now += TICK,
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Send(text) => self.on_send(&text),
                Output::ToolResult { call_id, .. } => self.on_outcome(call_id),
                Output::Command(frame) => assert!(
                    !matches!(frame.command, Command::ToolResult { .. }),
                    "a tool.result reached the call: {frame:?}"
                ),
                Output::Close => {
                    assert_eq!(self.core.state(), LinkState::Closed);
                    self.closed = true;
                }
                Output::Connect => {}
            }
        }
    }

    fn on_send(&mut self, text: &str) {
        assert!(!self.closed, "an event written after the close: {text}");
        let event: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("an event that is not JSON ({e}): {text}"));
        assert!(event["type"].is_string(), "an event without a type: {text}");
        let id = event["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an event without an id: {text}"));
        assert!(self.ids.insert(id), "id {id} written twice: {text}");
        self.written += 1;
    }

    fn on_outcome(&mut self, call_id: String) {
        let made = call_id
            .strip_prefix("call_")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| (1..=self.tool_calls).contains(&n));
        assert!(made, "an outcome for a tool call never made: {call_id}");
        assert!(
            self.resolved.insert(call_id.clone()),
            "a second outcome for {call_id}"
        );
    }
}
