//! Streaming text-to-speech: a provider opens sessions; a session speaks many
//! responses, one context each.
//!
//! A response is a context ([`ContextId`]: the turn's epoch plus a sequence
//! number). The engine starts it, streams the segmenter's text chunks into it,
//! flushes it at the end of the response and reads its audio; a barge-in cancels
//! it. Contexts are started in increasing order, and a cancel of `ctx` retires
//! every context up to and including `ctx`:
//!
//! - [`TtsSender::cancel`] never waits and never fails: it marks the contexts
//!   retired in state shared with both ends, then wakes the provider task;
//! - from the moment it returns, [`TtsEvents::recv`] yields no event of a retired
//!   context, even one already queued (a cleared response is never played);
//! - the provider task stops producing audio for it as soon as it is woken.
//!
//! Like an STT session, a TTS session is a pair of bounded channels: the engine
//! holds [`TtsSession`] (or [`TtsSender`] + [`TtsEvents`]), the provider task a
//! [`TtsBackend`].

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use brisvox_core::Epoch;
use tokio::sync::{Notify, mpsc};

use crate::{BoxFuture, ProviderError, SendError};

/// Capacity of a session's input queue, in messages (contexts, text chunks, flushes).
pub const TTS_INPUT_CAPACITY: usize = 64;

/// Capacity of a session's event queue: with 40 ms chunks, 1.28 s of audio
/// ahead of the pacer. A provider that finds it full waits.
pub const TTS_EVENT_CAPACITY: usize = 32;

/// The output rate asked for unless configured otherwise, in Hz.
pub const DEFAULT_TTS_RATE_HZ: u32 = 24_000;

/// One response's context: the epoch of the turn it answers and its number
/// within the session. Ordered by epoch, then sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextId {
    /// The turn the response answers.
    pub epoch: Epoch,
    /// Its number among the session's contexts.
    pub seq: u32,
}

impl ContextId {
    /// The context `seq` of `epoch`.
    pub fn new(epoch: Epoch, seq: u32) -> Self {
        ContextId { epoch, seq }
    }
}

impl fmt::Display for ContextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.epoch, self.seq)
    }
}

/// How to open a TTS session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TtsConfig {
    /// The vendor's voice id, or `None` for the adapter's default.
    pub voice: Option<Arc<str>>,
    /// The vendor's model name, or `None` for the adapter's default.
    pub model: Option<Arc<str>>,
    /// BCP-47 language tag, or `None` for the provider's default.
    pub language: Option<Arc<str>>,
    /// Rate to ask for, in Hz; each audio event states the rate it really has.
    pub sample_rate_hz: u32,
}

impl Default for TtsConfig {
    fn default() -> Self {
        TtsConfig {
            voice: None,
            model: None,
            language: None,
            sample_rate_hz: DEFAULT_TTS_RATE_HZ,
        }
    }
}

/// What a session tells the engine.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TtsEvent {
    /// Speech for a context.
    Audio {
        /// The context it belongs to.
        ctx: ContextId,
        /// Mono PCM16 samples.
        samples: Vec<i16>,
        /// Their rate, in Hz.
        sample_rate_hz: u32,
    },
    /// Word timing of a context's speech (vendors that give it: Cartesia
    /// timestamps, ElevenLabs alignment). Times are ms of the context's audio,
    /// counted from its first sample. Optional: a consumer may ignore it; it
    /// arrives before, with or after the audio it describes.
    Words {
        /// The context it belongs to.
        ctx: ContextId,
        /// The words, in order.
        words: Vec<crate::WordTiming>,
    },
    /// The context's last audio has been sent (after its flush).
    Done {
        /// The finished context.
        ctx: ContextId,
    },
    /// A failure; with a context it ends that context only, without one it ends
    /// the session (a [`TtsEvent::Closed`] follows).
    Error {
        /// The failed context, if the failure was confined to one.
        ctx: Option<ContextId>,
        /// What went wrong.
        error: ProviderError,
    },
    /// The session ended; no event follows.
    Closed,
}

impl TtsEvent {
    /// The context the event belongs to, if any.
    pub fn ctx(&self) -> Option<ContextId> {
        match self {
            TtsEvent::Audio { ctx, .. } | TtsEvent::Done { ctx } | TtsEvent::Words { ctx, .. } => {
                Some(*ctx)
            }
            TtsEvent::Error { ctx, .. } => *ctx,
            TtsEvent::Closed => None,
        }
    }
}

/// What the engine sends to a session, in order. Cancels do not travel here
/// (see [`TtsCancels::cancelled`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TtsInput {
    /// A new context begins.
    Start(ContextId),
    /// More text for a context.
    Text {
        /// The context.
        ctx: ContextId,
        /// The chunk, as the segmenter cut it.
        text: String,
    },
    /// No more text for this context: speak what is pending, then send `Done`.
    Flush(ContextId),
    /// End the session.
    Close,
}

/// A streaming TTS service. Object-safe: the engine holds `Arc<dyn TtsProvider>`.
pub trait TtsProvider: Send + Sync {
    /// Opens a session.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future abandons the attempt and leaves no session.
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>>;
}

#[derive(Debug, Default)]
struct ContextBook {
    last_started: Option<ContextId>,
    retired_through: Option<ContextId>,
}

/// Context state shared by both ends of a session.
#[derive(Debug, Default)]
struct Shared {
    book: Mutex<ContextBook>,
    cancelled: Notify,
}

impl Shared {
    fn book(&self) -> MutexGuard<'_, ContextBook> {
        // Poison-proof: the book is two plain fields, valid after any panic.
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_retired(&self, ctx: ContextId) -> bool {
        self.book().retired_through.is_some_and(|r| ctx <= r)
    }
}

/// The engine's side of a TTS session.
#[derive(Debug)]
pub struct TtsSession {
    sender: TtsSender,
    events: TtsEvents,
}

/// Sends contexts, text and controls into a session. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TtsSender {
    input: mpsc::Sender<TtsInput>,
    shared: Arc<Shared>,
}

/// Receives a session's events, minus those of retired contexts.
#[derive(Debug)]
pub struct TtsEvents {
    events: mpsc::Receiver<TtsEvent>,
    shared: Arc<Shared>,
}

/// The provider's side of a TTS session (used by adapters and mocks). Its fields
/// are public so a provider task can borrow them separately in `select!`.
#[derive(Debug)]
pub struct TtsBackend {
    /// What the engine sent, in order; `None` once every sender is gone.
    pub input: mpsc::Receiver<TtsInput>,
    /// Where to put events; waits when the engine is behind.
    pub events: mpsc::Sender<TtsEvent>,
    /// The engine's cancels.
    pub cancels: TtsCancels,
}

/// The provider's view of the engine's cancels (they do not travel through the
/// input queue, so a full queue never delays one).
#[derive(Debug)]
pub struct TtsCancels {
    shared: Arc<Shared>,
}

impl TtsSession {
    /// A connected pair: the engine's session and the provider's backend.
    pub fn channel() -> (TtsSession, TtsBackend) {
        let (input_tx, input_rx) = mpsc::channel(TTS_INPUT_CAPACITY);
        let (events_tx, events_rx) = mpsc::channel(TTS_EVENT_CAPACITY);
        let shared = Arc::new(Shared::default());
        let session = TtsSession {
            sender: TtsSender {
                input: input_tx,
                shared: shared.clone(),
            },
            events: TtsEvents {
                events: events_rx,
                shared: shared.clone(),
            },
        };
        let backend = TtsBackend {
            input: input_rx,
            events: events_tx,
            cancels: TtsCancels { shared },
        };
        (session, backend)
    }

    /// The two halves, for a sending task and a receiving task.
    pub fn split(self) -> (TtsSender, TtsEvents) {
        (self.sender, self.events)
    }

    /// The sending half.
    pub fn sender(&self) -> &TtsSender {
        &self.sender
    }

    /// See [`TtsEvents::recv`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`TtsEvents::recv`].
    pub async fn recv(&mut self) -> Option<TtsEvent> {
        self.events.recv().await
    }
}

impl TtsSender {
    /// Begins context `ctx`; it must be above every context started or cancelled
    /// before ([`SendError::StaleContext`] otherwise).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, the context was
    /// neither started nor recorded.
    pub async fn start_context(&self, ctx: ContextId) -> Result<(), SendError> {
        let permit = self.input.reserve().await.map_err(|_| SendError::Closed)?;
        let mut book = self.shared.book();
        let newer = |seen: Option<ContextId>| seen.is_none_or(|s| ctx > s);
        if !newer(book.last_started) || !newer(book.retired_through) {
            return Err(SendError::StaleContext(ctx));
        }
        book.last_started = Some(ctx);
        permit.send(TtsInput::Start(ctx));
        Ok(())
    }

    /// Sends a text chunk for `ctx`; waits for room in the queue.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn send_text(
        &self,
        ctx: ContextId,
        text: impl Into<String>,
    ) -> Result<(), SendError> {
        self.send_for(
            ctx,
            TtsInput::Text {
                ctx,
                text: text.into(),
            },
        )
        .await
    }

    /// Ends `ctx`'s text: the provider speaks what is pending, then sends `Done`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn flush(&self, ctx: ContextId) -> Result<(), SendError> {
        self.send_for(ctx, TtsInput::Flush(ctx)).await
    }

    async fn send_for(&self, ctx: ContextId, input: TtsInput) -> Result<(), SendError> {
        let permit = self.input.reserve().await.map_err(|_| SendError::Closed)?;
        if self.shared.is_retired(ctx) {
            return Err(SendError::StaleContext(ctx));
        }
        permit.send(input);
        Ok(())
    }

    /// Retires `ctx` and every context before it, at once (barge-in). Never
    /// waits; cancelling an already retired context does nothing.
    pub fn cancel(&self, ctx: ContextId) {
        let mut book = self.shared.book();
        if book.retired_through.is_none_or(|r| ctx > r) {
            book.retired_through = Some(ctx);
            drop(book);
            self.shared.cancelled.notify_one();
        }
    }

    /// Ends the session: the provider stops and sends [`TtsEvent::Closed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn close(&self) -> Result<(), SendError> {
        self.input
            .send(TtsInput::Close)
            .await
            .map_err(|_| SendError::Closed)
    }

    /// Whether the provider's side is gone.
    pub fn is_closed(&self) -> bool {
        self.input.is_closed()
    }
}

impl TtsEvents {
    /// The next event of a live context (or of none), or `None` once the
    /// provider's side is gone and every event has been read. Events of retired
    /// contexts are dropped here, even if they were queued before the cancel.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is removed from the queue only when this returns it
    /// (or drops it as stale).
    pub async fn recv(&mut self) -> Option<TtsEvent> {
        loop {
            let event = self.events.recv().await?;
            if !event.ctx().is_some_and(|c| self.shared.is_retired(c)) {
                return Some(event);
            }
        }
    }

    /// The next live event if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<TtsEvent> {
        while let Ok(event) = self.events.try_recv() {
            if !event.ctx().is_some_and(|c| self.shared.is_retired(c)) {
                return Some(event);
            }
        }
        None
    }
}

impl TtsCancels {
    /// Whether `ctx` has been cancelled (directly or by a later context's cancel).
    pub fn is_cancelled(&self, ctx: ContextId) -> bool {
        self.shared.is_retired(ctx)
    }

    /// The highest cancelled context, if any: every context up to it is retired.
    pub fn cancelled_through(&self) -> Option<ContextId> {
        self.shared.book().retired_through
    }

    /// Waits until a cancel arrives after the last time this returned; read
    /// [`TtsCancels::cancelled_through`] then.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a cancel that arrives while no one waits is kept for the next call.
    pub async fn cancelled(&self) {
        self.shared.cancelled.notified().await;
    }
}
