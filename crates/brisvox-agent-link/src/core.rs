//! The link's decisions, sans-IO: what to send, when to reconnect, which
//! command answers which event, and the hop statistics.
//!
//! Driving rule (str0m's): after every `handle_*` call, drain
//! [`LinkCore::poll_output`] until it returns `None`, then wait until
//! [`LinkCore::poll_timeout`] (or the next input) and call
//! [`LinkCore::handle_timeout`]. The core never reads a clock.
//!
//! Rules:
//!
//! 1. **Bounded.** Events wait in one queue of [`LinkConfig::queue_capacity`];
//!    an event that finds it full is dropped and counted (a dropped
//!    `tool.call` fails at once). The link never makes the call wait.
//! 2. **Correlation.** Every event gets the next id; a command's `re` names
//!    the event it answers. The first command naming an event records a hop
//!    (from [`LinkCore::handle_event`]'s `now` to the command's). A
//!    `tool.result` resolves the tool call its `re` names; one naming no
//!    waiting call is refused with an `error` event.
//! 3. **Failure policy.** A tool call while the link is not connected, and
//!    every tool call waiting when the connection drops, gets an error result
//!    at once ([`Output::ToolResult`] with `Err`), so the model answers from
//!    the error instead of waiting. Other events wait in the queue.
//! 4. **Reconnect.** A dropped connection or a failed attempt waits
//!    [`LinkConfig::backoff_initial`], doubled after each failure up to
//!    [`LinkConfig::backoff_max`]; after [`LinkConfig::max_attempts`] failures
//!    in a row the link is gone for the rest of the call (the call goes on
//!    with the agent file's defaults). A reconnected link first sends
//!    `call.started` again with `resumed: true`.
//! 5. **End.** [`LinkCore::handle_call_ended`] queues `call.ended`; once it
//!    is written (or at once when not connected) the core asks to close.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::protocol::{Command, CommandFrame, Event, EventFrame, event_text, parse_command};
use crate::stats::LinkStats;

/// How many sent events are remembered for hop measurement (oldest forgotten).
pub const HOP_MEMORY: usize = 1024;

/// The link's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkConfig {
    /// Events waiting to be written, at most.
    pub queue_capacity: usize,
    /// First wait before a reconnect attempt.
    pub backoff_initial: Duration,
    /// Longest wait between attempts.
    pub backoff_max: Duration,
    /// Failed attempts in a row after which the link is gone for the call.
    pub max_attempts: u32,
}

impl Default for LinkConfig {
    /// 256 events, 100 ms doubling to 5 s, 8 attempts.
    fn default() -> Self {
        LinkConfig {
            queue_capacity: 256,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            max_attempts: 8,
        }
    }
}

/// Where the link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// An attempt to connect is under way (the shell was told [`Output::Connect`]).
    Connecting,
    /// Connected: events are written.
    Connected,
    /// Waiting to try again.
    Backoff {
        /// When the next attempt starts.
        until: Instant,
    },
    /// Given up for this call.
    Gone,
    /// The call ended and `call.ended` was written (or could not be).
    Closed,
}

/// What the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Open the websocket now; answer with `handle_connected` or `handle_connect_failed`.
    Connect,
    /// Write this text frame.
    Send(String),
    /// A command for the call.
    Command(CommandFrame),
    /// The outcome of a tool call started with [`LinkCore::handle_tool_call`].
    ToolResult {
        /// The model's call id.
        call_id: String,
        /// The result, or why the call failed.
        outcome: Result<Value, String>,
    },
    /// Close the websocket: the link is finished.
    Close,
}

/// The agent link of one call, sans-IO.
#[derive(Debug)]
pub struct LinkCore {
    config: LinkConfig,
    state: LinkState,
    next_id: u64,
    queue: VecDeque<(EventFrame, Instant)>,
    /// When each recent event was taken, for hops (id, taken at).
    taken: VecDeque<(u64, Instant)>,
    /// Waiting tool calls: event id to the model's call id.
    tools: HashMap<u64, String>,
    outputs: VecDeque<Output>,
    started: Event,
    failures: u32,
    ending: bool,
    stats: LinkStats,
}

impl LinkCore {
    /// A link for a call that starts with `call_started` (a
    /// [`Event::CallStarted`]); the first output is [`Output::Connect`].
    pub fn new(config: LinkConfig, call_started: Event, now: Instant) -> Self {
        let mut core = LinkCore {
            config,
            state: LinkState::Connecting,
            next_id: 1,
            queue: VecDeque::new(),
            taken: VecDeque::with_capacity(HOP_MEMORY),
            tools: HashMap::new(),
            outputs: VecDeque::from([Output::Connect]),
            started: call_started.clone(),
            failures: 0,
            ending: false,
            stats: LinkStats::default(),
        };
        core.handle_event(now, call_started);
        core
    }

    // Getters.

    /// Where the link stands.
    pub fn state(&self) -> LinkState {
        self.state
    }

    /// The counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    // Inputs.

    /// An event of the call, taken at `now`; returns its id, or `None` when
    /// it was dropped (queue full, link finished).
    pub fn handle_event(&mut self, now: Instant, event: Event) -> Option<u64> {
        if matches!(self.state, LinkState::Gone | LinkState::Closed) || self.ending {
            return None;
        }
        if self.queue.len() >= self.config.queue_capacity {
            self.stats.events_dropped += 1;
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back((EventFrame { id, event }, now));
        self.flush();
        Some(id)
    }

    /// The model called a tool the agent serves: send `tool.call`; its
    /// outcome comes back as [`Output::ToolResult`].
    pub fn handle_tool_call(
        &mut self,
        now: Instant,
        turn: u64,
        call_id: &str,
        name: &str,
        arguments: &str,
    ) {
        let event = Event::ToolCall {
            turn,
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments: serde_json::from_str(arguments)
                .unwrap_or_else(|_| Value::String(arguments.to_owned())),
        };
        let refused = match self.state {
            LinkState::Connected => None,
            LinkState::Gone | LinkState::Closed => Some("the agent link is gone"),
            _ => Some("the agent link is not connected"),
        };
        let id = match refused {
            None => self.handle_event(now, event),
            Some(_) => None,
        };
        match id {
            Some(id) => {
                self.tools.insert(id, call_id.to_owned());
            }
            None => {
                let why = refused.unwrap_or("the agent link's queue is full");
                self.fail_tool(call_id.to_owned(), why);
            }
        }
    }

    /// The websocket is open.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.state != LinkState::Connecting {
            return;
        }
        self.stats.connects += 1;
        self.failures = 0;
        self.state = LinkState::Connected;
        if self.stats.connects > 1 {
            let mut resumed = self.started.clone();
            if let Event::CallStarted { resumed: r, .. } = &mut resumed {
                *r = true;
            }
            let id = self.next_id;
            self.next_id += 1;
            self.queue
                .push_front((EventFrame { id, event: resumed }, now));
        }
        self.flush();
    }

    /// The attempt to connect failed.
    pub fn handle_connect_failed(&mut self, now: Instant) {
        if self.state == LinkState::Connecting {
            self.stats.connect_failures += 1;
            self.back_off(now);
        }
    }

    /// The connection dropped (read or write error, the agent closed it).
    pub fn handle_disconnected(&mut self, now: Instant) {
        if self.state != LinkState::Connected {
            return;
        }
        for (_, call_id) in std::mem::take(&mut self.tools) {
            self.fail_tool(call_id, "the agent link was lost");
        }
        if self.ending {
            self.finish();
        } else {
            self.back_off(now);
        }
    }

    /// A text frame from the agent, read at `now`.
    pub fn handle_text(&mut self, now: Instant, text: &str) {
        let frame = match parse_command(text) {
            Ok(frame) => frame,
            Err(error) => {
                let re = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| v.get("re").and_then(Value::as_u64));
                return self.refuse(now, re, error.to_string());
            }
        };
        self.stats.commands += 1;
        if let Some(re) = frame.re
            && let Some(i) = self.taken.iter().position(|(id, _)| *id == re)
        {
            let (_, taken) = self.taken.remove(i).unwrap_or((re, now));
            self.stats.record_hop(now.saturating_duration_since(taken));
        }
        if let Command::ToolResult { result, error } = frame.command {
            let re = frame.re.unwrap_or_default();
            let Some(call_id) = self.tools.remove(&re) else {
                let message = format!("no tool call with id {re} is waiting");
                return self.refuse(now, Some(re), message);
            };
            self.stats.tool_results += 1;
            let outcome = match (result, error) {
                (Some(result), _) => Ok(result),
                (None, error) => Err(error.unwrap_or_default()),
            };
            self.outputs
                .push_back(Output::ToolResult { call_id, outcome });
            return;
        }
        self.outputs.push_back(Output::Command(frame));
    }

    /// The call ended: say so to the agent, then close.
    pub fn handle_call_ended(&mut self, now: Instant, reason: &str) {
        if self.ending {
            return;
        }
        let reason = reason.to_owned();
        self.handle_event(now, Event::CallEnded { reason });
        self.ending = true;
        for (_, call_id) in std::mem::take(&mut self.tools) {
            self.fail_tool(call_id, "the call ended");
        }
        if self.state != LinkState::Connected {
            self.finish();
        }
        self.flush();
    }

    /// The time passed [`LinkCore::poll_timeout`].
    pub fn handle_timeout(&mut self, now: Instant) {
        if let LinkState::Backoff { until } = self.state
            && now >= until
        {
            self.state = LinkState::Connecting;
            self.outputs.push_back(Output::Connect);
        }
    }

    // Outputs.

    /// The next thing to do, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When to call [`LinkCore::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            LinkState::Backoff { until } => Some(until),
            _ => None,
        }
    }

    // Internals.

    /// Moves queued events to the output while connected.
    fn flush(&mut self) {
        if self.state != LinkState::Connected {
            return;
        }
        while let Some((frame, taken)) = self.queue.pop_front() {
            if self.taken.len() == HOP_MEMORY {
                self.taken.pop_front();
            }
            self.taken.push_back((frame.id, taken));
            self.stats.events_sent += 1;
            let last = matches!(frame.event, Event::CallEnded { .. });
            self.outputs.push_back(Output::Send(event_text(&frame)));
            if last {
                self.finish();
                return;
            }
        }
    }

    fn back_off(&mut self, now: Instant) {
        self.failures += 1;
        if self.failures > self.config.max_attempts {
            self.state = LinkState::Gone;
            self.queue.clear();
            return;
        }
        let doublings = (self.failures - 1).min(16);
        let wait = self
            .config
            .backoff_initial
            .saturating_mul(1 << doublings)
            .min(self.config.backoff_max);
        self.state = LinkState::Backoff { until: now + wait };
    }

    fn finish(&mut self) {
        self.state = LinkState::Closed;
        self.queue.clear();
        self.outputs.push_back(Output::Close);
    }

    fn fail_tool(&mut self, call_id: String, why: &str) {
        self.stats.tool_calls_failed_by_link += 1;
        let outcome = Err(why.to_owned());
        self.outputs
            .push_back(Output::ToolResult { call_id, outcome });
    }

    fn refuse(&mut self, now: Instant, re: Option<u64>, message: String) {
        self.stats.commands_refused += 1;
        self.handle_event(now, Event::Error { re, message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> Event {
        Event::CallStarted {
            protocol: 1,
            call_id: "c1".into(),
            route: "call".into(),
            caller: None,
            metadata: serde_json::json!({}),
            resumed: false,
        }
    }

    fn drain(core: &mut LinkCore) -> Vec<Output> {
        std::iter::from_fn(|| core.poll_output()).collect()
    }

    fn sent_types(outputs: &[Output]) -> Vec<String> {
        outputs
            .iter()
            .filter_map(|o| match o {
                Output::Send(text) => {
                    let v: Value = serde_json::from_str(text).unwrap();
                    Some(format!("{}#{}", v["type"].as_str().unwrap(), v["id"]))
                }
                _ => None,
            })
            .collect()
    }

    fn connected(t0: Instant) -> LinkCore {
        let mut core = LinkCore::new(LinkConfig::default(), started(), t0);
        assert_eq!(drain(&mut core), [Output::Connect]);
        core.handle_connected(t0);
        assert_eq!(sent_types(&drain(&mut core)), ["call.started#1"]);
        core
    }

    #[test]
    fn events_wait_for_the_connection_and_keep_their_order() {
        let t0 = Instant::now();
        let mut core = LinkCore::new(LinkConfig::default(), started(), t0);
        core.handle_event(t0, Event::UserStartedSpeaking {});
        assert_eq!(drain(&mut core), [Output::Connect]);
        core.handle_connected(t0);
        assert_eq!(
            sent_types(&drain(&mut core)),
            ["call.started#1", "user.started_speaking#2"]
        );
    }

    #[test]
    fn a_command_naming_an_event_records_one_hop() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        let id = core
            .handle_event(t0, Event::UserStoppedSpeaking {})
            .unwrap();
        drain(&mut core);
        let say = format!(r#"{{"type":"say","re":{id},"text":"Hi."}}"#);
        core.handle_text(t0 + Duration::from_micros(420), &say);
        core.handle_text(t0 + Duration::from_micros(900), &say);
        let out = drain(&mut core);
        assert_eq!(out.len(), 2, "both commands reach the call");
        let stats = core.stats();
        assert_eq!(
            (stats.hops, stats.hop_max_us),
            (1, 420),
            "first answer only"
        );
    }

    #[test]
    fn a_tool_result_resolves_its_call_and_a_stray_one_is_refused() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        core.handle_tool_call(t0, 3, "call_1", "lookup", r#"{"q":"x"}"#);
        let out = drain(&mut core);
        let Output::Send(text) = &out[0] else {
            panic!("{out:?}")
        };
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["arguments"]["q"], "x");
        let id = v["id"].as_u64().unwrap();
        core.handle_text(
            t0,
            &format!(r#"{{"type":"tool.result","re":{id},"result":{{"ok":1}}}}"#),
        );
        core.handle_text(
            t0,
            &format!(r#"{{"type":"tool.result","re":{id},"error":"again"}}"#),
        );
        let out = drain(&mut core);
        assert_eq!(
            out[0],
            Output::ToolResult {
                call_id: "call_1".into(),
                outcome: Ok(serde_json::json!({"ok": 1}))
            }
        );
        assert_eq!(sent_types(&out[1..]), [format!("error#{}", id + 1)]);
        assert_eq!(core.stats().commands_refused, 1);
    }

    #[test]
    fn a_malformed_command_gets_an_error_event_naming_its_re() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        core.handle_text(t0, r#"{"type":"shout","re":1}"#);
        let out = drain(&mut core);
        let Output::Send(text) = &out[0] else {
            panic!("{out:?}")
        };
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["re"].as_u64()),
            (Some("error"), Some(1))
        );
        assert!(v["message"].as_str().unwrap().contains("shout"));
    }

    #[test]
    fn tool_calls_fail_at_once_when_the_link_is_down_or_drops() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        core.handle_tool_call(t0, 1, "a", "t", "{}");
        drain(&mut core);
        core.handle_disconnected(t0);
        core.handle_tool_call(t0, 1, "b", "t", "{}");
        let failed: Vec<(String, String)> = drain(&mut core)
            .into_iter()
            .filter_map(|o| match o {
                Output::ToolResult {
                    call_id,
                    outcome: Err(why),
                } => Some((call_id, why)),
                _ => None,
            })
            .collect();
        assert_eq!(
            failed,
            [
                ("a".to_owned(), "the agent link was lost".to_owned()),
                ("b".to_owned(), "the agent link is not connected".to_owned())
            ]
        );
        assert_eq!(core.stats().tool_calls_failed_by_link, 2);
    }

    #[test]
    fn reconnects_back_off_doubling_then_give_up() {
        let t0 = Instant::now();
        let config = LinkConfig {
            max_attempts: 3,
            ..LinkConfig::default()
        };
        let mut core = LinkCore::new(config, started(), t0);
        drain(&mut core);
        let mut now = t0;
        let mut waits = Vec::new();
        loop {
            core.handle_connect_failed(now);
            let Some(until) = core.poll_timeout() else {
                break;
            };
            waits.push(until - now);
            now = until;
            core.handle_timeout(now);
            assert_eq!(drain(&mut core), [Output::Connect]);
        }
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 200, 400]);
        assert_eq!(core.state(), LinkState::Gone);
        assert_eq!(core.handle_event(now, Event::UserStartedSpeaking {}), None);
    }

    #[test]
    fn a_reconnected_link_resumes_with_call_started_first() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        core.handle_disconnected(t0);
        core.handle_event(t0, Event::UserStartedSpeaking {});
        let until = core.poll_timeout().unwrap();
        core.handle_timeout(until);
        assert_eq!(drain(&mut core), [Output::Connect]);
        core.handle_connected(until);
        let out = drain(&mut core);
        let Output::Send(first) = &out[0] else {
            panic!("{out:?}")
        };
        let v: Value = serde_json::from_str(first).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["resumed"].as_bool()),
            (Some("call.started"), Some(true))
        );
        assert_eq!(sent_types(&out[1..]), ["user.started_speaking#2"]);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let t0 = Instant::now();
        let config = LinkConfig {
            queue_capacity: 2,
            ..LinkConfig::default()
        };
        let mut core = LinkCore::new(config, started(), t0);
        assert!(
            core.handle_event(t0, Event::UserStartedSpeaking {})
                .is_some()
        );
        assert!(
            core.handle_event(t0, Event::UserStoppedSpeaking {})
                .is_none()
        );
        assert_eq!(core.stats().events_dropped, 1);
    }

    #[test]
    fn the_end_writes_call_ended_then_closes() {
        let t0 = Instant::now();
        let mut core = connected(t0);
        core.handle_call_ended(t0, "hangup");
        let out = drain(&mut core);
        assert_eq!(sent_types(&out), ["call.ended#2"]);
        assert_eq!(out.last(), Some(&Output::Close));
        assert_eq!(core.state(), LinkState::Closed);
    }
}
