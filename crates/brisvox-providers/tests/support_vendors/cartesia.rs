//! A fake Cartesia TTS websocket: generation requests with `context_id` and
//! `continue`, `chunk` replies (base64 PCM s16le: 4 samples per character,
//! each the character's code), `done` after `continue: false`, `cancel`,
//! concurrency-limit refusals, and faults on demand.

use std::collections::HashSet;

use base64::Engine as _;
use serde_json::{Value, json};

use super::ws::{Out, Responder};

#[derive(Debug, Clone, Default)]
pub struct CartesiaScript {
    /// The first N contexts seen are refused with the concurrency-limit error.
    pub refusals: u32,
    /// Delay before each chunk, in ms.
    pub chunk_delay_ms: u64,
    /// After a cancel, send one more chunk for the cancelled context (a real
    /// server may have one in flight).
    pub stale_chunk_after_cancel: bool,
    /// Never answer.
    pub silent: bool,
    /// Answer the first request with a garbage line.
    pub garbage: bool,
    /// Drop the connection after the first chunk.
    pub abort_after_first_chunk: bool,
    /// Reply to the first request with this error type message (no context).
    pub session_error: Option<Value>,
}

pub struct FakeCartesia {
    script: CartesiaScript,
    refused: HashSet<String>,
    seen: HashSet<String>,
    chunks_sent: u32,
}

impl FakeCartesia {
    pub fn new(script: CartesiaScript) -> Self {
        FakeCartesia {
            script,
            refused: HashSet::new(),
            seen: HashSet::new(),
            chunks_sent: 0,
        }
    }
}

/// The samples the fake speaks for `text`.
pub fn samples_for(text: &str) -> Vec<i16> {
    text.chars().flat_map(|c| [c as i16; 4]).collect()
}

fn chunk(ctx: &str, text: &str) -> Out {
    let bytes: Vec<u8> = samples_for(text)
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Out::Text(
        json!({"type": "chunk", "data": data, "done": false, "status_code": 206,
               "step_time": 12.5, "context_id": ctx})
        .to_string(),
    )
}

impl Responder for FakeCartesia {
    fn on_message(&mut self, m: &Value) -> Vec<Out> {
        let s = &self.script;
        if s.silent {
            return vec![];
        }
        if s.garbage {
            return vec![Out::Text("{\"type\": chunk".into())];
        }
        if let Some(error) = &s.session_error {
            return vec![Out::Text(error.to_string())];
        }
        let ctx = m["context_id"].as_str().unwrap_or("").to_owned();
        if m["cancel"] == json!(true) {
            if s.stale_chunk_after_cancel {
                return vec![chunk(&ctx, "stale")];
            }
            return vec![];
        }
        if self.refused.contains(&ctx) {
            return vec![];
        }
        if self.seen.insert(ctx.clone()) && (self.refused.len() as u32) < s.refusals {
            self.refused.insert(ctx.clone());
            return vec![Out::Text(
                json!({"type": "error", "context_id": ctx, "status_code": 429, "done": true,
                       "error": "You have reached your concurrency limit of 2"})
                .to_string(),
            )];
        }
        let mut out = Vec::new();
        let text = m["transcript"].as_str().unwrap_or("");
        if !text.is_empty() {
            out.push(Out::Delay(s.chunk_delay_ms));
            out.push(chunk(&ctx, text));
            self.chunks_sent += 1;
            if s.abort_after_first_chunk {
                out.push(Out::Abort);
                return out;
            }
        }
        if m["continue"] == json!(false) {
            out.push(Out::Text(json!({"type": "flush_done", "done": false, "flush_done": true, "flush_id": 1, "context_id": ctx}).to_string()));
            out.push(Out::Text(
                json!({"type": "done", "done": true, "status_code": 206, "context_id": ctx})
                    .to_string(),
            ));
        }
        out
    }
}
