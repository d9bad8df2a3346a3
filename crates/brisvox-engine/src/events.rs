//! What a call tells the outside while it runs: transcripts, the bot starting
//! and stopping to speak, barge-ins and each finished turn's timeline.
//!
//! The engine never waits for a listener: events go into a bounded queue with
//! `try_send`, and an event that finds the queue full is dropped and counted
//! ([`EventSink::dropped`]). A transport turns them into its own messages (the
//! brisvox websocket protocol's `transcript`, `bot_speaking_*`, `turn_metrics`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnRecord;
use tokio::sync::mpsc;

/// Capacity of the event queue a transport usually gives a call.
pub const EVENT_QUEUE_CAPACITY: usize = 64;

/// One event of a running call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EngineEvent {
    /// A transcript of the caller's speech.
    Transcript {
        /// The text.
        text: String,
        /// Whether the STT will not revise it.
        is_final: bool,
    },
    /// The first audio of `epoch`'s response reached the transport.
    BotSpeakingStarted {
        /// The response's epoch.
        epoch: Epoch,
    },
    /// `epoch`'s response is over (played out, empty, failed or interrupted).
    BotSpeakingStopped {
        /// The response's epoch.
        epoch: Epoch,
    },
    /// The caller talked over the bot: the transport's buffered audio must go.
    Interrupted {
        /// The interrupted epoch.
        old: Epoch,
        /// The caller's new turn.
        new: Epoch,
    },
    /// An answer was cut (barge-in, or a turn taken back): what of it the
    /// caller heard, as the conversation now remembers it.
    Heard {
        /// The cut answer's epoch.
        epoch: Epoch,
        /// Its text as sent to the TTS.
        sent: String,
        /// The part the caller heard, cut after the last heard word.
        heard: String,
        /// Audio of it the caller heard, ms.
        played_ms: u64,
    },
    /// `epoch`'s response has played out: the turn's timeline so far, with
    /// every latency metric of an answered turn (`record.metrics()`). Sent at
    /// once, so a client sees a turn's metrics without waiting for the next turn.
    ResponseDone {
        /// The turn's timeline when its response ended.
        record: Box<TurnRecord>,
    },
    /// The model called a tool; the call was handed to the executor.
    ToolCallStarted {
        /// The turn.
        epoch: Epoch,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Its arguments, a JSON text as the model wrote it.
        arguments: String,
    },
    /// A tool call finished (result, error or timeout).
    ToolCallFinished {
        /// The turn.
        epoch: Epoch,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Whether the result is an error (the model reads it as one).
        is_error: bool,
        /// From the call handed to the executor to its outcome.
        latency: std::time::Duration,
        /// The turn was interrupted first: the result is recorded, not spoken.
        late: bool,
    },
    /// A turn is finished (the next turn started, or the call ended); its
    /// metrics are `record.metrics()`, including a barge-in's `time_to_silence`.
    TurnFinished {
        /// The turn's timeline.
        record: Box<TurnRecord>,
    },
}

/// Where a call's events go: nowhere, or a bounded queue.
#[derive(Debug, Clone, Default)]
pub struct EventSink {
    tx: Option<mpsc::Sender<EngineEvent>>,
    dropped: Arc<AtomicU64>,
}

impl EventSink {
    /// A sink that discards every event.
    pub fn none() -> Self {
        Self::default()
    }

    /// A sink and the receiver of its events, with room for `capacity` events.
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<EngineEvent>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (
            EventSink {
                tx: Some(tx),
                dropped: Arc::default(),
            },
            rx,
        )
    }

    /// Offers an event without waiting; a full or closed queue drops it (counted).
    pub fn emit(&self, event: EngineEvent) {
        if let Some(tx) = &self.tx
            && tx.try_send(event).is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped because the queue was full or closed.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let (sink, mut rx) = EventSink::channel(1);
        sink.emit(EngineEvent::BotSpeakingStarted { epoch: Epoch(1) });
        sink.emit(EngineEvent::BotSpeakingStopped { epoch: Epoch(1) });
        assert_eq!(sink.dropped(), 1);
        assert_eq!(
            rx.try_recv().unwrap(),
            EngineEvent::BotSpeakingStarted { epoch: Epoch(1) }
        );
        EventSink::none().emit(EngineEvent::BotSpeakingStopped { epoch: Epoch(2) });
    }
}
