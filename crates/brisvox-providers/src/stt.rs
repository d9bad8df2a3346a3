//! Streaming speech-to-text: a provider opens sessions; a session takes audio
//! frames in and gives transcript events out.
//!
//! A session is a pair of bounded queues. The engine holds an [`SttSession`]
//! (or its two halves after [`SttSession::split`]: an [`SttSender`] for the task
//! that reads the caller's audio and an [`SttEvents`] for the turn driver). The
//! provider's task holds the other ends, an [`SttBackend`]. Dropping every
//! [`SttSender`] ends the session the same way [`SttSender::close`] does.
//!
//! Order is kept: a [`SttSender::finalize`] is answered with a final covering
//! every frame sent before it.
//!
//! Audio does not travel through the queue as frames (a frame is stored inline
//! for its largest size, almost 4 KiB, and each move copies all of it): a
//! frame's samples are copied once into a buffer that the session recycles,
//! and that buffer is what the queue and the provider pass along
//! ([`SttAudio`]). Dropping an [`SttAudio`] gives its buffer back to the
//! session, so once a session has as many buffers as it keeps in flight (one
//! or two when the provider keeps up) no frame costs an allocation.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use brisvox_core::AudioFrame;
use tokio::sync::{Notify, mpsc};

use crate::{BoxFuture, ProviderError, SendError};

/// Capacity of a session's input queue, in messages (frames plus controls).
/// See [`SttSender::send_audio`] for the overflow policy.
pub const STT_INPUT_CAPACITY: usize = 64;

/// Slots of the input queue that audio never takes, so a finalize or close
/// finds room at once even when audio has filled everything else.
pub const STT_CONTROL_HEADROOM: usize = 4;

/// Audio a session's input holds at most, in samples: 640 ms at 16 kHz.
pub const STT_INPUT_BUFFER_SAMPLES: usize = 10_240;

/// Emptied audio buffers a session keeps for reuse; more are freed.
const SPARE_BUFFERS: usize = 8;

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
pub enum SttInput {
    /// Caller audio (mono PCM16 at [`SttConfig::sample_rate_hz`]).
    Audio(SttAudio),
    /// Transcribe everything sent so far now and answer with a final.
    Finalize,
    /// End the session after answering what is pending.
    Close,
}

/// One frame of caller audio as a provider receives it: the samples of one
/// [`SttSender::send_audio`], in a buffer that goes back to the session when
/// this is dropped (so a provider that keeps up allocates nothing per frame).
pub struct SttAudio {
    samples: Vec<i16>,
    sample_rate_hz: u32,
    /// The session whose spare buffers this one rejoins.
    home: Arc<Input>,
}

impl SttAudio {
    /// The samples (mono PCM16).
    pub fn samples(&self) -> &[i16] {
        &self.samples
    }

    /// Their rate in Hz (never zero).
    pub fn sample_rate_hz(&self) -> u32 {
        self.sample_rate_hz
    }

    /// How long they last.
    pub fn duration(&self) -> Duration {
        brisvox_core::frame::duration_of(self.samples.len(), self.sample_rate_hz)
    }
}

impl std::fmt::Debug for SttAudio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SttAudio")
            .field("samples", &self.samples.len())
            .field("sample_rate_hz", &self.sample_rate_hz)
            .finish()
    }
}

impl Clone for SttAudio {
    fn clone(&self) -> Self {
        SttAudio {
            samples: self.samples.clone(),
            sample_rate_hz: self.sample_rate_hz,
            home: Arc::clone(&self.home),
        }
    }
}

impl Drop for SttAudio {
    fn drop(&mut self) {
        let samples = std::mem::take(&mut self.samples);
        let mut state = self.home.lock();
        // A session whose provider is gone takes no more frames: nothing to keep.
        if state.backend_alive && state.spare.len() < SPARE_BUFFERS {
            state.spare.push(samples);
        } else {
            drop(state);
            drop(samples);
        }
    }
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
#[derive(Debug)]
pub struct SttSender {
    input: Arc<Input>,
}

/// What the input queue carries.
#[derive(Debug)]
enum Marker {
    Audio {
        samples: Vec<i16>,
        sample_rate_hz: u32,
    },
    Finalize,
    Close,
}

/// A session's input, shared by its senders and its backend.
#[derive(Debug)]
struct Input {
    state: Mutex<InputState>,
    /// Wakes senders waiting for a slot (a finalize or close on a full queue).
    room: Notify,
}

#[derive(Debug)]
struct InputState {
    /// At most [`STT_INPUT_CAPACITY`].
    markers: VecDeque<Marker>,
    /// Samples in `markers`: at most [`STT_INPUT_BUFFER_SAMPLES`].
    queued_samples: usize,
    /// Emptied buffers for the next frames: at most [`SPARE_BUFFERS`].
    spare: Vec<Vec<i16>>,
    /// Live [`SttSender`]s: none left ends the input once it is drained.
    senders: usize,
    backend_alive: bool,
    /// The provider task, waiting for input.
    backend: Option<Waker>,
}

impl Input {
    fn lock(&self) -> MutexGuard<'_, InputState> {
        // Poison-proof: markers and samples are valid after any panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl InputState {
    /// Queues `marker` and hands back the provider task's waker, to wake once unlocked.
    fn push(&mut self, marker: Marker) -> Option<Waker> {
        self.markers.push_back(marker);
        self.backend.take()
    }
}

/// Receives a session's events.
#[derive(Debug)]
pub struct SttEvents {
    events: mpsc::Receiver<SttEvent>,
}

/// The provider's side of an STT session (used by adapters and mocks).
#[derive(Debug)]
pub struct SttBackend {
    input: Arc<Input>,
    /// Where to put events; waits when the engine is behind.
    pub events: mpsc::Sender<SttEvent>,
}

impl SttBackend {
    /// The next input, or `None` once every sender is gone and all was read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an input is consumed only when this returns it.
    pub async fn recv(&mut self) -> Option<SttInput> {
        poll_fn(|cx| {
            let mut state = self.input.lock();
            let Some(marker) = state.markers.pop_front() else {
                if state.senders == 0 {
                    return Poll::Ready(None);
                }
                if !state
                    .backend
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    state.backend = Some(cx.waker().clone());
                }
                return Poll::Pending;
            };
            // A sender waits only on a full queue: this pop freed its slot.
            let freed = state.markers.len() + 1 == STT_INPUT_CAPACITY;
            let input = match marker {
                Marker::Audio {
                    samples,
                    sample_rate_hz,
                } => {
                    state.queued_samples -= samples.len();
                    SttInput::Audio(SttAudio {
                        samples,
                        sample_rate_hz,
                        home: Arc::clone(&self.input),
                    })
                }
                Marker::Finalize => SttInput::Finalize,
                Marker::Close => SttInput::Close,
            };
            drop(state);
            if freed {
                self.input.room.notify_waiters();
            }
            Poll::Ready(Some(input))
        })
        .await
    }
}

impl Drop for SttBackend {
    fn drop(&mut self) {
        let (markers, spare) = {
            let mut state = self.input.lock();
            state.backend_alive = false;
            state.queued_samples = 0;
            (
                std::mem::take(&mut state.markers),
                std::mem::take(&mut state.spare),
            )
        };
        drop((markers, spare));
        // Waiting senders find the session closed.
        self.input.room.notify_waiters();
    }
}

impl SttSession {
    /// A connected pair: the engine's session and the provider's backend.
    pub fn channel() -> (SttSession, SttBackend) {
        let (events_tx, events_rx) = mpsc::channel(STT_EVENT_CAPACITY);
        let input = Arc::new(Input {
            state: Mutex::new(InputState {
                markers: VecDeque::with_capacity(STT_INPUT_CAPACITY),
                queued_samples: 0,
                spare: Vec::new(),
                senders: 1,
                backend_alive: true,
                backend: None,
            }),
            room: Notify::new(),
        });
        let session = SttSession {
            sender: SttSender {
                input: Arc::clone(&input),
            },
            events: SttEvents { events: events_rx },
        };
        let backend = SttBackend {
            input,
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
    /// Queues a copy of `frame`'s samples without waiting (and without
    /// allocating, once the session has a spare buffer: see [`SttAudio`]).
    ///
    /// Overflow policy: reject the newest. When the input queue
    /// ([`STT_INPUT_CAPACITY`] messages) or its audio
    /// ([`STT_INPUT_BUFFER_SAMPLES`]) is full, nothing is queued and
    /// [`SendError::Full`] is returned; the caller keeps its frame and counts the
    /// drop (full audio means the provider task has stalled for over 600 ms,
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
        let mut state = self.input.lock();
        if !state.backend_alive {
            return Err(SendError::Closed);
        }
        if state.markers.len() >= STT_INPUT_CAPACITY - STT_CONTROL_HEADROOM
            || state.queued_samples + samples.len() > STT_INPUT_BUFFER_SAMPLES
        {
            return Err(SendError::Full);
        }
        // Queued under one lock, so frames keep one order even when clones
        // of this sender race. A new buffer (under the lock) only until the
        // session has spares.
        let mut buffer = state.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer.extend_from_slice(samples);
        state.queued_samples += samples.len();
        let backend = state.push(Marker::Audio {
            samples: buffer,
            sample_rate_hz,
        });
        drop(state);
        if let Some(backend) = backend {
            backend.wake();
        }
        Ok(())
    }

    /// Asks for a final covering every frame sent so far; waits for room in the
    /// queue (the provider task drains it continuously).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn finalize(&self) -> Result<(), SendError> {
        self.send_marker(Marker::Finalize).await
    }

    /// Ends the session: the provider answers what is pending, then sends
    /// [`SttEvent::Closed`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was sent.
    pub async fn close(&self) -> Result<(), SendError> {
        self.send_marker(Marker::Close).await
    }

    /// Queues `marker`, waiting for a slot.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the marker is queued only when this returns `Ok`.
    async fn send_marker(&self, marker: Marker) -> Result<(), SendError> {
        loop {
            let room = self.input.room.notified();
            tokio::pin!(room);
            // Registered before the check, so a slot freed in between wakes it.
            room.as_mut().enable();
            {
                let mut state = self.input.lock();
                if !state.backend_alive {
                    return Err(SendError::Closed);
                }
                if state.markers.len() < STT_INPUT_CAPACITY {
                    let backend = state.push(marker);
                    drop(state);
                    if let Some(backend) = backend {
                        backend.wake();
                    }
                    return Ok(());
                }
            }
            room.await;
        }
    }

    /// Whether the provider's side is gone.
    pub fn is_closed(&self) -> bool {
        !self.input.lock().backend_alive
    }
}

impl Clone for SttSender {
    fn clone(&self) -> Self {
        self.input.lock().senders += 1;
        SttSender {
            input: Arc::clone(&self.input),
        }
    }
}

impl Drop for SttSender {
    fn drop(&mut self) {
        let backend = {
            let mut state = self.input.lock();
            state.senders -= 1;
            if state.senders == 0 {
                state.backend.take()
            } else {
                None
            }
        };
        // The last sender gone ends the input once it is drained.
        if let Some(backend) = backend {
            backend.wake();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> AudioFrame {
        AudioFrame::from_samples(&[5; 160], 8_000).unwrap()
    }

    /// Fills `session`'s input queue (audio up to the headroom, then
    /// finalizes); returns a clone of its sender.
    async fn fill(session: &SttSession) -> SttSender {
        let sender = session.sender().clone();
        for _ in 0..STT_INPUT_CAPACITY - STT_CONTROL_HEADROOM {
            sender.send_audio(&frame()).unwrap();
        }
        for _ in 0..STT_CONTROL_HEADROOM {
            sender.finalize().await.unwrap();
        }
        sender
    }

    #[tokio::test(start_paused = true)]
    async fn the_input_ends_when_the_last_sender_is_gone() {
        let (session, mut backend) = SttSession::channel();
        let (sender, _events) = session.split();
        let clone = sender.clone();
        let reader = tokio::spawn(async move {
            let first = backend
                .recv()
                .await
                .map(|i| matches!(i, SttInput::Audio(_)));
            let end = backend.recv().await.is_none();
            (first, end)
        });
        drop(sender);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            !reader.is_finished(),
            "a clone still holds the session open"
        );
        clone.send_audio(&frame()).unwrap();
        drop(clone);
        assert_eq!(reader.await.unwrap(), (Some(true), true));
    }

    #[tokio::test(start_paused = true)]
    async fn a_finalize_on_a_full_queue_waits_for_a_slot() {
        let (session, mut backend) = SttSession::channel();
        let sender = fill(&session).await;
        let waiting = tokio::spawn(async move { sender.close().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished(), "the queue is full");
        assert!(matches!(backend.recv().await, Some(SttInput::Audio(_))));
        assert_eq!(waiting.await.unwrap(), Ok(()));
        let mut last = None;
        for _ in 0..STT_INPUT_CAPACITY {
            last = backend.recv().await;
        }
        assert!(matches!(last, Some(SttInput::Close)), "the close came last");
        drop(session);
    }

    #[tokio::test(start_paused = true)]
    async fn a_received_frame_gives_its_buffer_back_for_the_next() {
        let (session, mut backend) = SttSession::channel();
        let spare = |b: &SttBackend| b.input.lock().spare.len();
        session.send_audio(&frame()).unwrap();
        let Some(SttInput::Audio(first)) = backend.recv().await else {
            panic!("audio first");
        };
        assert_eq!(spare(&backend), 0, "the frame holds its buffer");
        drop(first);
        assert_eq!(spare(&backend), 1, "dropped: the buffer is spare");
        // A longer frame reuses it (grown) and arrives whole.
        let long = AudioFrame::from_samples(&[9; 1920], 48_000).unwrap();
        session.send_audio(&long).unwrap();
        assert_eq!(spare(&backend), 0, "the spare buffer was taken");
        let Some(SttInput::Audio(second)) = backend.recv().await else {
            panic!("audio second");
        };
        assert_eq!(second.samples(), long.samples());
        assert_eq!(second.duration(), long.duration());
        drop(second);
        session.send_audio(&frame()).unwrap();
        let Some(SttInput::Audio(third)) = backend.recv().await else {
            panic!("audio third");
        };
        assert_eq!(third.samples(), frame().samples());
        // A frame outliving its backend frees its buffer without harm.
        drop(backend);
        drop(third);
        assert_eq!(session.send_audio(&frame()), Err(SendError::Closed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_keeps_a_bounded_number_of_spare_buffers() {
        let (session, mut backend) = SttSession::channel();
        let mut held = Vec::new();
        for _ in 0..SPARE_BUFFERS + 5 {
            session.send_audio(&frame()).unwrap();
            let Some(SttInput::Audio(audio)) = backend.recv().await else {
                panic!("audio");
            };
            held.push(audio);
        }
        drop(held);
        assert_eq!(backend.input.lock().spare.len(), SPARE_BUFFERS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_gone_backend_frees_a_waiting_sender() {
        let (session, backend) = SttSession::channel();
        let sender = fill(&session).await;
        let waiting = tokio::spawn(async move { sender.finalize().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!session.sender().is_closed());
        drop(backend);
        assert_eq!(waiting.await.unwrap(), Err(SendError::Closed));
        assert!(session.sender().is_closed());
        assert_eq!(session.send_audio(&frame()), Err(SendError::Closed));
    }
}
