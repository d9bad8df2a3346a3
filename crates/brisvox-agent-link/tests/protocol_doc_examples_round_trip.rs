//! Every JSON example in docs/AGENT_PROTOCOL.md parses into the Rust types
//! (an event frame or a checked command frame) and serialises back to the
//! same JSON, and every event and command type has an example. (The schema
//! side: sdk/python/tests/test_protocol_doc.py validates the same examples
//! against docs/agent-protocol.schema.json.)

use std::collections::BTreeSet;

use brisvox_agent_link::{EventFrame, parse_command};
use serde_json::Value;

const DOC: &str = include_str!("../../../docs/AGENT_PROTOCOL.md");

const EVENT_TYPES: [&str; 13] = [
    "call.started",
    "user.started_speaking",
    "user.stopped_speaking",
    "user.transcript",
    "bot.text",
    "bot.started_speaking",
    "bot.stopped_speaking",
    "bot.interrupted",
    "tool.call",
    "dtmf",
    "turn.metrics",
    "call.ended",
    "error",
];

const COMMAND_TYPES: [&str; 7] = [
    "say",
    "context.update",
    "tools.set",
    "tool.result",
    "respond",
    "call.end",
    "call.transfer",
];

/// The bodies of the doc's ```json blocks.
fn examples() -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in DOC.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```json") => block = Some(String::new()),
            (Some(text), "```") => {
                out.push(std::mem::take(text));
                block = None;
            }
            (Some(text), line) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

#[test]
fn every_example_round_trips_and_every_type_has_one() {
    let mut seen_events = BTreeSet::new();
    let mut seen_commands = BTreeSet::new();
    let examples = examples();
    assert!(examples.len() >= 20, "found {} examples", examples.len());
    for text in examples {
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let back = if json.get("id").is_some() {
            let frame: EventFrame =
                serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}: {text}"));
            seen_events.insert(frame.event.type_name());
            serde_json::to_value(&frame).unwrap()
        } else {
            let frame = parse_command(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            seen_commands.insert(frame.command.type_name());
            serde_json::to_value(&frame).unwrap()
        };
        assert_eq!(back, json, "round trip of {text}");
    }
    assert_eq!(seen_events, BTreeSet::from(EVENT_TYPES));
    assert_eq!(seen_commands, BTreeSet::from(COMMAND_TYPES));
}
