//! A fake ElevenLabs multi-context websocket: `{"text", "context_id"}` gets an
//! `audio` reply tagged `contextId` (4 samples per character of the trimmed
//! text, each the character's code), `close_context` gets `isFinal`, more than
//! five open contexts get `max_active_conversations` and a 1008 close, and
//! faults on demand.

use std::collections::HashSet;

use base64::Engine as _;
use serde_json::{Value, json};

use super::ws::{Out, Responder};

#[derive(Debug, Clone, Default)]
pub struct ElevenLabsScript {
    pub garbage: bool,
    pub silent: bool,
    pub abort_after_first_chunk: bool,
    /// Close the socket with 1008 "Invalid API key" on the first message.
    pub close_invalid_key: bool,
    /// On the first `close_context` of a context that got audio, send one
    /// more audio message for it first (one in flight).
    pub stale_audio_on_close: bool,
}

pub struct FakeElevenLabs {
    script: ElevenLabsScript,
    open: HashSet<String>,
}

impl FakeElevenLabs {
    pub fn new(script: ElevenLabsScript) -> Self {
        FakeElevenLabs {
            script,
            open: HashSet::new(),
        }
    }
}

pub const MAX_CONTEXTS: usize = 5;

pub fn samples_for(text: &str) -> Vec<i16> {
    text.trim().chars().flat_map(|c| [c as i16; 4]).collect()
}

fn audio(ctx: &str, text: &str) -> Out {
    let bytes: Vec<u8> = samples_for(text)
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    let audio = base64::engine::general_purpose::STANDARD.encode(bytes);
    Out::Text(
        json!({"audio": audio, "isFinal": false, "contextId": ctx, "normalizedAlignment": null})
            .to_string(),
    )
}

impl Responder for FakeElevenLabs {
    fn on_message(&mut self, m: &Value) -> Vec<Out> {
        let s = &self.script;
        if s.silent {
            return vec![];
        }
        if s.garbage {
            return vec![Out::Text("<html>502</html>".into())];
        }
        if s.close_invalid_key {
            return vec![Out::Close(1008, "Invalid API key")];
        }
        if m["close_socket"] == json!(true) {
            return vec![Out::Close(1000, "")];
        }
        let ctx = m["context_id"].as_str().unwrap_or("").to_owned();
        if m["close_context"] == json!(true) {
            let mut out = Vec::new();
            if s.stale_audio_on_close && self.open.contains(&ctx) {
                self.script.stale_audio_on_close = false;
                out.push(audio(&ctx, "stale"));
            }
            self.open.remove(&ctx);
            out.push(Out::Text(
                json!({"isFinal": true, "contextId": ctx}).to_string(),
            ));
            return out;
        }
        let text = m["text"].as_str().unwrap_or("");
        if text.trim().is_empty() {
            return vec![]; // flush or keep-alive
        }
        if !self.open.contains(&ctx) && self.open.len() >= MAX_CONTEXTS {
            return vec![
                Out::Text(json!({"message": "Maximum simultaneous contexts per WebSocket connection exceeded (5).", "error": "max_active_conversations", "code": 1008}).to_string()),
                Out::Close(1008, "max_active_conversations"),
            ];
        }
        self.open.insert(ctx.clone());
        let mut out = vec![audio(&ctx, text)];
        if s.abort_after_first_chunk {
            out.push(Out::Abort);
        }
        out
    }
}
