//! The vendor adapters' parsers (`brisvox-providers`): what a vendor's server
//! (or anything pretending to be it) sends back.
//!
//! Checked besides "no panic": an error (or a vendor warning) never carries
//! more than [`MAX_ERROR_TEXT_BYTES`] of text, so a vendor's message is never
//! copied into an error (and a log line) unbounded.

use std::collections::VecDeque;

use brisvox_providers::deepgram::protocol::{
    SpeakMessage, parse_listen, parse_speak, pcm16_le_to_samples,
};
use brisvox_providers::fuzz_entry::{Parsed, cartesia_message, elevenlabs_message};
use brisvox_providers::openai_llm::{ChunkDecoder, SseLines};
use brisvox_providers::{LlmEvent, ProviderError};

use crate::messages::{Message, messages};

/// Longest error text a parser may produce, in bytes.
pub const MAX_ERROR_TEXT_BYTES: usize = 1024;

fn check_error(e: &ProviderError) {
    let text = e.to_string();
    assert!(
        text.len() <= MAX_ERROR_TEXT_BYTES,
        "an error of {} bytes: {text:.200}",
        text.len()
    );
}

fn check_parsed(p: Parsed) {
    assert!(
        p.longest_error_bytes <= MAX_ERROR_TEXT_BYTES,
        "an error of {} bytes",
        p.longest_error_bytes
    );
}

/// The OpenAI-compatible chat stream: SSE bytes in arbitrary chunks, then each
/// event's `data` through the chunk decoder, until an error ends the stream.
pub fn sse(data: &[u8]) {
    let mut lines = SseLines::default();
    let mut decoder = ChunkDecoder::default();
    let mut events: VecDeque<LlmEvent> = VecDeque::new();
    for msg in messages(data) {
        if let Err(e) = lines.push(msg.bytes()) {
            check_error(&e);
            return;
        }
        while let Some(payload) = lines.next_data() {
            if let Err(e) = decoder.decode(&payload, &mut events) {
                check_error(&e);
                return;
            }
            events.clear();
        }
    }
}

/// Deepgram: the listen (STT) and speak (Aura TTS) sockets' messages, and
/// the speak socket's binary audio.
pub fn deepgram(data: &[u8]) {
    let mut samples = Vec::new();
    for msg in messages(data) {
        match msg {
            Message::Text(t) => {
                if let Err(e) = parse_listen(&t) {
                    check_error(&e);
                }
                match parse_speak(&t) {
                    Err(e) => check_error(&e),
                    Ok(SpeakMessage::Warning { description }) => assert!(
                        description.len() <= MAX_ERROR_TEXT_BYTES,
                        "a warning of {} bytes",
                        description.len()
                    ),
                    Ok(_) => {}
                }
            }
            Message::Binary(b) => {
                samples.clear();
                let odd = pcm16_le_to_samples(b, &mut samples);
                assert_eq!(samples.len(), b.len() / 2);
                assert_eq!(odd.is_some(), b.len() % 2 == 1);
            }
        }
    }
}

/// Cartesia's websocket messages.
pub fn cartesia(data: &[u8]) {
    for msg in messages(data) {
        if let Message::Text(t) = msg {
            check_parsed(cartesia_message(&t));
        }
    }
}

/// ElevenLabs' multi-context websocket messages.
pub fn elevenlabs(data: &[u8]) {
    for msg in messages(data) {
        if let Message::Text(t) = msg {
            check_parsed(elevenlabs_message(&t));
        }
    }
}
