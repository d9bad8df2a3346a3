//! Fake vendor servers for the adapter tests: each binds 127.0.0.1:0, speaks the
//! vendor's documented protocol, follows a per-test script and records what it
//! received. Plus a `tracing` capture to check that keys never reach a log.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod cartesia;
pub mod elevenlabs;
pub mod logs;
pub mod openai;
pub mod ws;

use brisvox_providers::{TtsEvent, TtsSession};

/// The next event, failing the test after the test kit's `PATIENCE`.
pub async fn next_event(session: &mut TtsSession) -> TtsEvent {
    tokio::time::timeout(brisvox_testkit::PATIENCE, session.recv())
        .await
        .expect("no TTS event in time")
        .expect("session ended without Closed")
}

/// Events until `Done`, `Error` or `Closed` (included).
pub async fn events_until_end(session: &mut TtsSession) -> Vec<TtsEvent> {
    let mut out = Vec::new();
    loop {
        let event = next_event(session).await;
        let end = matches!(
            event,
            TtsEvent::Done { .. } | TtsEvent::Error { .. } | TtsEvent::Closed
        );
        out.push(event);
        if end {
            return out;
        }
    }
}

/// The samples of the audio events, joined.
pub fn audio_of(events: &[TtsEvent]) -> Vec<i16> {
    events
        .iter()
        .filter_map(|e| match e {
            TtsEvent::Audio { samples, .. } => Some(samples.as_slice()),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}
