//! Entry points for the fuzz harnesses (`crates/brisvox-fuzz`) into the vendor
//! message parsers that are private to their adapters. Not part of the API:
//! each function parses one message the vendor's server sent and returns how
//! many session inputs it produced, plus the longest error text among them
//! (a parser must never copy the vendor's message into an error unbounded).

use crate::vendors::ws_tts::Incoming;

/// What parsing one message produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Parsed {
    /// Session inputs produced (audio, words, done, errors, ignored).
    pub inputs: usize,
    /// Bytes of the longest error text among them (0 without an error).
    pub longest_error_bytes: usize,
}

fn summarise<'a>(incoming: impl IntoIterator<Item = &'a Incoming>) -> Parsed {
    let mut parsed = Parsed::default();
    for i in incoming {
        parsed.inputs += 1;
        let error = match i {
            Incoming::ContextError { error, .. } | Incoming::SessionError(error) => error,
            _ => continue,
        };
        parsed.longest_error_bytes = parsed.longest_error_bytes.max(error.to_string().len());
    }
    parsed
}

/// One Cartesia websocket message.
pub fn cartesia_message(text: &str) -> Parsed {
    summarise([&crate::cartesia::parse_message(text)])
}

/// One ElevenLabs multi-context websocket message.
pub fn elevenlabs_message(text: &str) -> Parsed {
    summarise(&crate::elevenlabs::parse_message(text))
}
