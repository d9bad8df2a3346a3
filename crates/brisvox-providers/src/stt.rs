//! Streaming speech-to-text: a provider opens sessions; a session takes audio
//! frames in and gives transcript events out.
//!
//! A session is a pair of bounded channels. The engine holds an [`SttSession`]
//! (or its two halves after [`SttSession::split`]: an [`SttSender`] for the task
//! that reads the caller's audio and an [`SttEvents`] for the turn driver). The
//! provider's task holds the other ends, an [`SttBackend`]. Dropping every
//! [`SttSender`] ends the session the same way [`SttSender::close`] does.
//!
//! Order is kept: a [`SttSender::finalize`] is answered with a final covering
//! every frame sent before it.

use std::sync::Arc;

use brisvox_core::AudioFrame;
use tokio::sync::mpsc;

use crate::{BoxFuture, ProviderError, SendError};

/// Capacity of a session's input queue, in messages (frames plus controls):
/// 640 ms of 20 ms frames. See [`SttSender::send_audio`] for the overflow policy.
pub const STT_INPUT_CAPACITY: usize = 32;

/// Capacity of a session's event queue. A provider that finds it full waits
/// (the engine reads events promptly; a backlog means the engine is stuck).
pub const STT_EVENT_CAPACITY: usize = 64;

/// How to open an STT session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SttConfig {
    /// Rate of the frames the engine will send, in Hz (the engine sends 16 kHz).
    pub sample_rate_hz: u32,
    /// BCP-47 language tag ("en", "tr"), or `None` for the provider's default.
    pub language: Option<Arc<str>>,
    /// The vendor's model name, or `None` for the adapter's default.
    pub model: Option<Arc<str>>,
    /// Whether to ask for interim (not yet final) transcripts.
    pub interim_results: bool,
}

impl Default for SttConfig {
    fn default() -> Self {
        SttConfig {
            sample_rate_hz: brisvox_core::frame::INTERNAL_RATE_HZ,
            language: None,
            model: None,
            interim_results: true,
        }
    }
}

/// What a session tells the engine.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SttEvent {
    /// A transcript of the current utterance that may still change.
    Interim {
        /// The words so far.
        text: String,
    },
    /// A transcript that will not change.
    Final {
        /// The words.
        text: String,
        /// The provider's confidence in 0..=1, if it gives one.
        confidence: Option<f32>,
        /// Whether this final answers a [`SttSender::finalize`] (as opposed to the
        /// provider's own endpointing).
        from_finalize: bool,
    },
    /// The provider heard speech begin (vendors with a voice-activity event).
    SpeechStarted,
    /// The provider decided the utterance ended (vendors with such an event).
    UtteranceEnd,
    /// The session failed; a [`SttEvent::Closed`] follows if the session ended.
    Error(ProviderError),
    /// The session ended; no event follows.
    Closed,
}

/// What the engine sends to a session, in order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SttInput {
    /// Caller audio (mono PCM16 at [`SttConfig::sample_rate_hz`]).
    Audio(AudioFrame),
    /// Transcribe everything sent so far now and answer with a final.
    Finalize,
    /// End the session after answering what is pending.
    Close,
}

/// A streaming STT service. Object-safe: the engine holds `Arc<dyn SttProvider>`.
pub trait SttProvider: Send + Sync {
    /// Opens a session.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future abandons the attempt and leaves no session.
    fn connect(&self, config: SttConfig) -> BoxFuture<'_, Result<SttSession, ProviderError>>;
}

/// The engine's side of an STT session.
#[derive(Debug)]
pub struct SttSession {
    sender: SttSender,
    events: SttEvents,
}

/// Sends audio and controls into a session. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SttSender {
    input: mpsc::Sender<SttInput>,
}

/// Receives a session's events.
#[derive(Debug)]
pub struct SttEvents {
    events: mpsc::Receiver<SttEvent>,
}

/// The provider's side of an STT session (used by adapters and mocks).
#[derive(Debug)]
pub struct SttBackend {
    /// What the engine sent, in order; `None` once every sender is gone.
    pub input: mpsc::Receiver<SttInput>,
    /// Where to put events; waits when the engine is behind.
    pub events: mpsc::Sender<SttEvent>,
}

impl SttSession {
    /// A connected pair: the engine's session and the provider's backend.
    pub fn channel() -> (SttSession, SttBackend) {
        let (input_tx, input_rx) = mpsc::channel(STT_INPUT_CAPACITY);
        let (events_tx, events_rx) = mpsc::channel(STT_EVENT_CAPACITY);
        let session = SttSession {
            sender: SttSender { input: input_tx },
            events: SttEvents { events: events_rx },
        };
        let backend = SttBackend {
            input: input_rx,
            events: events_tx,
        };
        (session, backend)
    }

    /// The two halves, for a sending task and a receiving task.
    pub fn split(self) -> (SttSender, SttEvents) {
        (self.sender, self.events)
    }

    /// The sending half.
    pub fn sender(&self) -> &SttSender {
        &self.sender
    }

    /// See [`SttSender::send_audio`].
    pub fn send_audio(&self, frame: &AudioFrame) -> Result<(), SendError> {
        self.sender.send_audio(frame)
    }

    /// See [`SttSender::finalize`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`SttSender::finalize`].
    pub async fn finalize(&self) -> Result<(), SendError> {
        self.sender.finalize().await
    }

    /// See [`SttSender::close`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`SttSender::close`].
    pub async fn close(&self) -> Result<(), SendError> {
        self.sender.close().await
    }

    /// See [`SttEvents::recv`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`SttEvents::recv`].
    pub async fn recv(&mut self) -> Option<SttEvent> {
        self.events.recv().await
    }
}

impl SttSender {
    /// Queues a copy of `frame` without waiting.
    ///
    /// Overflow policy: reject the newest. When the input queue
    /// ([`STT_INPUT_CAPACITY`]) is full the frame is not queued and
    /// [`SendError::Full`] is returned; the caller keeps its frame and counts the
    /// drop (a full queue means the provider task has stalled for over 600 ms,
    /// and the transcript of that stretch is lost either way).
    pub fn send_audio(&self, frame: &AudioFrame) -> Result<(), SendError> {
        // A permit first, so a full queue costs no frame copy.
        match self.input.try_reserve() {
            Ok(permit) => {
                permit.send(SttInput::Audio(frame.clone()));
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(())) => Err(SendError::Full),
            Err(mpsc::error::TrySendError::Closed(())) => Err(SendError::Closed),
        }
    }

    /// Asks for a final covering every frame sent so far; waits for room in the
    /// queue (the provider task drains it continuously).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn finalize(&self) -> Result<(), SendError> {
        self.input
            .send(SttInput::Finalize)
            .await
            .map_err(|_| SendError::Closed)
    }

    /// Ends the session: the provider answers what is pending, then sends
    /// [`SttEvent::Closed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn close(&self) -> Result<(), SendError> {
        self.input
            .send(SttInput::Close)
            .await
            .map_err(|_| SendError::Closed)
    }

    /// Whether the provider's side is gone.
    pub fn is_closed(&self) -> bool {
        self.input.is_closed()
    }
}

impl SttEvents {
    /// The next event, or `None` once the provider's side is gone and every event
    /// has been read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is removed from the queue only when this returns it.
    pub async fn recv(&mut self) -> Option<SttEvent> {
        self.events.recv().await
    }

    /// The next event if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<SttEvent> {
        self.events.try_recv().ok()
    }
}
