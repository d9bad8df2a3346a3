//! The vendors' documented example messages (`tests/fixtures/vendors/<vendor>/`,
//! each directory's README names the page of every file), read as text or JSON.
#![allow(dead_code, unreachable_pub, missing_docs)]

use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vendors");

/// The fixture's text, exactly as committed.
pub fn text(vendor: &str, name: &str) -> String {
    let path = format!("{DIR}/{vendor}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

/// The fixture as JSON.
pub fn json(vendor: &str, name: &str) -> Value {
    let text = text(vendor, name);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("fixture {vendor}/{name}: {e}"))
}

/// Each line of a `.jsonl` fixture as JSON.
pub fn lines(vendor: &str, name: &str) -> Vec<Value> {
    text(vendor, name)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{vendor}/{name}: {e}")))
        .collect()
}

/// The fixture's text with its `context_id` / `contextId` value replaced by
/// `wire` (the only change a replaying fake makes).
pub fn with_context(vendor: &str, name: &str, wire: &str) -> String {
    let mut value = json(vendor, name);
    for key in ["context_id", "contextId"] {
        if value.get(key).is_some() {
            value[key] = Value::String(wire.to_owned());
        }
    }
    value.to_string()
}
