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
//!
//! Audio does not travel through the queue as frames (a frame is stored inline
//! for its largest size, almost 4 KiB): its samples go into a ring of
//! [`STT_INPUT_BUFFER_SAMPLES`] shared by both ends, allocated once per
//! session, and the queue carries a small marker in their place, so order with
//! finalize and close is kept and no frame costs an allocation.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use brisvox_core::AudioFrame;
use tokio::sync::mpsc;

use crate::{BoxFuture, ProviderError, SendError};

/// Capacity of a session's input queue, in messages (frames plus controls).
/// See [`SttSender::send_audio`] for the overflow policy.
pub const STT_INPUT_CAPACITY: usize = 64;

/// Slots of the input queue that audio never takes, so a finalize or close
/// finds room at once even when audio has filled everything else.
pub const STT_CONTROL_HEADROOM: usize = 4;

/// Capacity of a session's audio ring, in samples: 640 ms at 16 kHz.
pub const STT_INPUT_BUFFER_SAMPLES: usize = 10_240;

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
    /// Word timing of the [`SttEvent::Final`] that follows it at once (vendors
    /// that give it: Deepgram). Times are ms of the session's audio, counted
    /// from its first frame. Optional: a consumer may ignore it.
    Words(Vec<crate::WordTiming>),
    /// The provider heard speech begin (vendors with a voice-activity event).
    SpeechStarted,
    /// The provider decided the utterance ended (vendors with such an event).
    UtteranceEnd,
    /// The session failed; a [`SttEvent::Closed`] follows if the session ended.
    Error(ProviderError),
    /// The session ended; no event follows.
    Closed,
}

/// What the engine sent to a session, in order, as the provider receives it.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[expect(
    clippy::large_enum_variant,
    reason = "never queued: built on the provider task's stack from the ring"
)]
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
    input: mpsc::Sender<Marker>,
    ring: Arc<Mutex<VecDeque<i16>>>,
}

/// What the input queue carries; a frame's samples wait in the ring.
#[derive(Debug, Clone, Copy)]
enum Marker {
    Audio { len: u16, sample_rate_hz: u32 },
    Finalize,
    Close,
}

/// Receives a session's events.
#[derive(Debug)]
pub struct SttEvents {
    events: mpsc::Receiver<SttEvent>,
}

/// The provider's side of an STT session (used by adapters and mocks).
#[derive(Debug)]
pub struct SttBackend {
    input: mpsc::Receiver<Marker>,
    ring: Arc<Mutex<VecDeque<i16>>>,
    /// Where to put events; waits when the engine is behind.
    pub events: mpsc::Sender<SttEvent>,
}

fn lock_ring(ring: &Mutex<VecDeque<i16>>) -> MutexGuard<'_, VecDeque<i16>> {
    // Poison-proof: a ring of samples is valid after any panic.
    ring.lock().unwrap_or_else(|p| p.into_inner())
}

impl SttBackend {
    /// The next input, or `None` once every sender is gone and all was read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an input is consumed only when this returns it.
    pub async fn recv(&mut self) -> Option<SttInput> {
        let marker = self.input.recv().await?;
        Some(match marker {
            Marker::Audio {
                len,
                sample_rate_hz,
            } => {
                let mut ring = lock_ring(&self.ring);
                let n = usize::from(len).min(ring.len());
                // Straight from the ring (made one piece first: it moves only
                // when the samples wrap, and the provider keeps it near empty).
                let frame = AudioFrame::from_samples(&ring.make_contiguous()[..n], sample_rate_hz);
                ring.drain(..n);
                drop(ring);
                // Cannot fail: n <= len, which send_samples checked against a
                // frame's size, and the rate is not zero.
                SttInput::Audio(frame.expect("the marker describes a valid frame"))
            }
            Marker::Finalize => SttInput::Finalize,
            Marker::Close => SttInput::Close,
        })
    }
}

impl SttSession {
    /// A connected pair: the engine's session and the provider's backend.
    pub fn channel() -> (SttSession, SttBackend) {
        let (input_tx, input_rx) = mpsc::channel(STT_INPUT_CAPACITY);
        let (events_tx, events_rx) = mpsc::channel(STT_EVENT_CAPACITY);
        let ring = Arc::new(Mutex::new(VecDeque::with_capacity(
            STT_INPUT_BUFFER_SAMPLES,
        )));
        let session = SttSession {
            sender: SttSender {
                input: input_tx,
                ring: ring.clone(),
            },
            events: SttEvents { events: events_rx },
        };
        let backend = SttBackend {
            input: input_rx,
            ring,
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
    /// Queues a copy of `frame`'s samples without waiting (and without allocating).
    ///
    /// Overflow policy: reject the newest. When the input queue
    /// ([`STT_INPUT_CAPACITY`] messages) or the audio ring
    /// ([`STT_INPUT_BUFFER_SAMPLES`]) is full, nothing is queued and
    /// [`SendError::Full`] is returned; the caller keeps its frame and counts the
    /// drop (a full ring means the provider task has stalled for over 600 ms,
    /// and the transcript of that stretch is lost either way).
    pub fn send_audio(&self, frame: &AudioFrame) -> Result<(), SendError> {
        self.send_samples(frame.samples(), frame.sample_rate_hz())
    }

    /// [`send_audio`](Self::send_audio) of a frame given as its samples (at
    /// most [`MAX_FRAME_SAMPLES`](brisvox_core::frame::MAX_FRAME_SAMPLES))
    /// and rate: a caller's frame goes in without becoming an `AudioFrame`.
    pub fn send_samples(&self, samples: &[i16], sample_rate_hz: u32) -> Result<(), SendError> {
        if samples.len() > brisvox_core::frame::MAX_FRAME_SAMPLES || sample_rate_hz == 0 {
            return Err(SendError::NotAFrame {
                samples: samples.len(),
                sample_rate_hz,
            });
        }
        if self.input.capacity() <= STT_CONTROL_HEADROOM && !self.input.is_closed() {
            return Err(SendError::Full);
        }
        let permit = match self.input.try_reserve() {
            Ok(permit) => permit,
            Err(mpsc::error::TrySendError::Full(())) => return Err(SendError::Full),
            Err(mpsc::error::TrySendError::Closed(())) => return Err(SendError::Closed),
        };
        let mut ring = lock_ring(&self.ring);
        if ring.len() + samples.len() > STT_INPUT_BUFFER_SAMPLES {
            return Err(SendError::Full);
        }
        ring.extend(samples.iter().copied());
        // The marker goes in while the ring is locked, so markers and samples
        // keep one order even when clones of this sender race.
        permit.send(Marker::Audio {
            // Cannot truncate: a frame holds at most MAX_FRAME_SAMPLES (< u16::MAX).
            len: samples.len() as u16,
            sample_rate_hz,
        });
        Ok(())
    }

    /// Asks for a final covering every frame sent so far; waits for room in the
    /// queue (the provider task drains it continuously).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn finalize(&self) -> Result<(), SendError> {
        self.input
            .send(Marker::Finalize)
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
            .send(Marker::Close)
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
