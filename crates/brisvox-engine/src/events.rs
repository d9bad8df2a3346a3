//! What a call tells the outside while it runs, produced once by the engine
//! and read by independent consumers.
//!
//! The stages emit every [`EngineEvent`] once into the call's [`EventBus`]
//! (the turn driver most of them, the LLM stage its tool calls; each stage
//! holds a clone), which hands it to two kinds of consumer, so that a slow one
//! never costs another its data:
//!
//! - **observers** ([`EventObserver`], added with [`EventBus::observe`]) are
//!   called synchronously on the driver's task. They must be cheap and never
//!   block or wait (a counter, a histogram, a log line): metrics read from
//!   here cannot be lost to a full queue or a broken socket.
//! - **subscribers** ([`EventBus::subscribe`]) each get their own bounded
//!   queue ([`EventReceiver`]). Overflow policy: an event that finds a
//!   subscriber's queue full (or its receiver gone) is dropped for that
//!   subscriber only and counted ([`EventReceiver::dropped`]); the engine never
//!   waits for a subscriber. A route's socket writer is a subscriber; so will
//!   the agent link be.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_core::timeline::TurnRecord;
use tokio::sync::mpsc;

use crate::controls::{DtmfDigit, Metadata};
use crate::turn::NoTextReason;

/// Capacity of the event queue a route's writer usually subscribes with.
pub const EVENT_QUEUE_CAPACITY: usize = 64;

/// One event of a running call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EngineEvent {
    /// The call started with this id and metadata (the first event of a call).
    CallStarted {
        /// The call's id.
        call_id: String,
        /// Its metadata from the route.
        metadata: Metadata,
    },
    /// The call's metadata changed (a [`Control::Metadata`](crate::controls::Control::Metadata)):
    /// all of it, after the merge.
    MetadataUpdated {
        /// The call's metadata now.
        metadata: Metadata,
    },
    /// The voice activity detector confirmed the caller's speech (before any
    /// transcript; whether it becomes a turn or a barge-in is decided later).
    UserStartedSpeaking,
    /// The caller's speech stopped (silence held for the VAD's minimum); the
    /// turn may still continue if the caller resumes.
    UserStoppedSpeaking,
    /// A transcript of the caller's speech.
    Transcript {
        /// The text.
        text: String,
        /// Whether the STT will not revise it.
        is_final: bool,
    },
    /// The caller pressed a key.
    Dtmf {
        /// The key.
        digit: DtmfDigit,
    },
    /// A control was refused (malformed, unknown, or the engine could not take
    /// it: a full say queue, a say after the end). `code` is stable.
    ControlRejected {
        /// Stable, machine-readable code (`docs/WEBSOCKET_PROTOCOL.md`).
        code: String,
        /// For people.
        message: String,
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
    /// The bot was cut off: the caller talked over it, or a `say` with
    /// `interrupt` cut it. The transport's buffered audio must go.
    Interrupted {
        /// The interrupted epoch.
        old: Epoch,
        /// The epoch the call continues in.
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
    /// `epoch`'s response has played out: the turn's timeline so far. Sent at
    /// once, so a listener sees a turn's metrics without waiting for the next turn.
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
    /// The caller's turn of `epoch` ended without text: no LLM request was
    /// made. `replied` when the not-heard reply is spoken instead of silence.
    TurnNoText {
        /// The turn's epoch.
        epoch: Epoch,
        /// Why there was no text.
        reason: NoTextReason,
        /// How long the caller spoke (VAD start to stop).
        speech: Duration,
        /// Whether the not-heard reply is spoken.
        replied: bool,
    },
    /// Text the bot is about to speak, as handed to the TTS (a sentence or
    /// clause at a time; a barge-in may cut the audio of the last ones short).
    BotText {
        /// The response's epoch.
        epoch: Epoch,
        /// The text.
        text: String,
    },
    /// A turn is finished (the next turn started, or the call ended); its
    /// metrics are `record.metrics()`, including a barge-in's `time_to_silence`.
    TurnFinished {
        /// The turn's timeline.
        record: Box<TurnRecord>,
    },
    /// The call is over: its report (counters, provider failures, token
    /// usage, the pacer's underruns, how it ended). The last event of a call,
    /// emitted once, after every stage has stopped.
    CallEnded {
        /// The call's report, as `run_call` returns it.
        report: Box<crate::report::CallReport>,
    },
    /// A caller's turn's metrics, exactly once per turn: when its response
    /// played out, or else when the turn finished. The one event metrics
    /// consumers need (`turn_metrics` on the wire, `/metrics`).
    TurnMetrics {
        /// The turn's timeline; its number is `record.epoch()`.
        record: Box<TurnRecord>,
    },
}

/// A synchronous consumer of a call's events (see the [module docs](self)).
pub trait EventObserver: Send + Sync + 'static {
    /// Called on the engine's task for every event, in order. Must be cheap
    /// and must not block.
    fn observe(&self, event: &EngineEvent);
}

#[derive(Clone)]
struct Subscriber {
    tx: mpsc::Sender<EngineEvent>,
    dropped: Arc<AtomicU64>,
}

/// Where a call's events go: its observers and its subscribers' queues. A
/// clone emits to the same consumers; a subscriber's queue ends when the last
/// clone is gone.
#[derive(Clone, Default)]
pub struct EventBus {
    observers: Vec<Arc<dyn EventObserver>>,
    subscribers: Vec<Subscriber>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("observers", &self.observers.len())
            .field("subscribers", &self.subscribers.len())
            .finish()
    }
}

impl EventBus {
    /// A bus with no consumer (events go nowhere).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a synchronous observer.
    pub fn observe(&mut self, observer: Arc<dyn EventObserver>) {
        self.observers.push(observer);
    }

    /// Adds a subscriber with a queue of `capacity` events (at least one).
    pub fn subscribe(&mut self, capacity: usize) -> EventReceiver {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        self.subscribers.push(Subscriber {
            tx,
            dropped: Arc::clone(&dropped),
        });
        EventReceiver { rx, dropped }
    }

    /// Hands `event` to every observer, then offers it to every subscriber
    /// without waiting (a full or closed queue drops it, counted per subscriber).
    pub fn emit(&self, event: EngineEvent) {
        for observer in &self.observers {
            observer.observe(&event);
        }
        let Some((last, rest)) = self.subscribers.split_last() else {
            return;
        };
        for subscriber in rest {
            subscriber.offer(event.clone());
        }
        last.offer(event);
    }
}

impl Subscriber {
    fn offer(&self, event: EngineEvent) {
        if self.tx.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One subscriber's queue of a call's events.
#[derive(Debug)]
pub struct EventReceiver {
    rx: mpsc::Receiver<EngineEvent>,
    dropped: Arc<AtomicU64>,
}

impl EventReceiver {
    /// The next event; `None` once the call is over and every event was taken.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is taken only when this returns it.
    pub async fn recv(&mut self) -> Option<EngineEvent> {
        self.rx.recv().await
    }

    /// Polls for the next event ([`recv`](Self::recv) as a poll, for a
    /// caller that gates it: see [`crate::gate`]).
    pub fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<EngineEvent>> {
        self.rx.poll_recv(cx)
    }

    /// The next event if one waits.
    pub fn try_recv(&mut self) -> Option<EngineEvent> {
        self.rx.try_recv().ok()
    }

    /// Events this subscriber lost to a full queue.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Count(Mutex<Vec<EngineEvent>>);

    impl EventObserver for Count {
        fn observe(&self, event: &EngineEvent) {
            self.0.lock().expect("not poisoned").push(event.clone());
        }
    }

    #[test]
    fn a_full_queue_drops_for_its_subscriber_only_and_observers_see_everything() {
        let mut bus = EventBus::new();
        let observer = Arc::new(Count::default());
        bus.observe(observer.clone());
        let mut small = bus.subscribe(1);
        let mut big = bus.subscribe(8);
        bus.emit(EngineEvent::BotSpeakingStarted { epoch: Epoch(1) });
        bus.emit(EngineEvent::BotSpeakingStopped { epoch: Epoch(1) });
        assert_eq!((small.dropped(), big.dropped()), (1, 0));
        assert_eq!(
            small.try_recv(),
            Some(EngineEvent::BotSpeakingStarted { epoch: Epoch(1) })
        );
        assert_eq!(small.try_recv(), None);
        assert!(big.try_recv().is_some() && big.try_recv().is_some());
        assert_eq!(observer.0.lock().expect("not poisoned").len(), 2);
        EventBus::new().emit(EngineEvent::BotSpeakingStopped { epoch: Epoch(2) });
    }
}
