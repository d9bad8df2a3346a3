//! Process-wide counters of the retries the adapters make on their own (a
//! reconnect or a re-opened context is not a failure the engine sees, but an
//! operator wants to know a vendor is flaky before calls fail). Read by the
//! server's `/metrics` as `brisvox_provider_retries_total{kind}`.

use std::sync::atomic::{AtomicU64, Ordering};

/// What was retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    /// A streaming STT socket was lost mid-call and is being reconnected
    /// (Deepgram), its unacknowledged audio replayed.
    SttReconnect,
    /// A TTS context the vendor refused (Cartesia, ElevenLabs) is re-opened
    /// on a fresh id.
    TtsContextRetry,
}

impl RetryKind {
    /// Every kind, in label order.
    pub const ALL: [RetryKind; 2] = [RetryKind::SttReconnect, RetryKind::TtsContextRetry];

    /// The `kind` label.
    pub fn label(self) -> &'static str {
        match self {
            RetryKind::SttReconnect => "stt_reconnect",
            RetryKind::TtsContextRetry => "tts_context_retry",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

static RETRIES: [AtomicU64; RetryKind::ALL.len()] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Counts one retry of `kind`.
pub fn record(kind: RetryKind) {
    RETRIES[kind.index()].fetch_add(1, Ordering::Relaxed);
}

/// Retries of `kind` since the process started.
pub fn total(kind: RetryKind) -> u64 {
    RETRIES[kind.index()].load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_counts_on_its_own() {
        let stt = total(RetryKind::SttReconnect);
        let tts = total(RetryKind::TtsContextRetry);
        record(RetryKind::SttReconnect);
        record(RetryKind::SttReconnect);
        assert!(total(RetryKind::SttReconnect) >= stt + 2);
        // Other tests of this process may retry too: only never less.
        assert!(total(RetryKind::TtsContextRetry) >= tts);
        let labels: Vec<_> = RetryKind::ALL.iter().map(|k| k.label()).collect();
        assert_eq!(labels, ["stt_reconnect", "tts_context_retry"]);
    }
}
