//! The call's one edge: everything that passes between a route (the brisvox
//! websocket protocol, Twilio Media Streams, the simulator, later a carrier or
//! WebRTC) and [`run_call`](crate::run_call).
//!
//! A route hands the engine a [`CallEdge`]:
//!
//! - **in**, a [`CallSource`]: the caller's audio as 16 kHz mono PCM16 frames
//!   of 20 ms, each with the time it arrived ([`Inbound::Audio`]), and typed
//!   [`Control`]s with their time ([`Inbound::Control`]): `say`, a DTMF digit,
//!   call metadata, a hang-up request, or a control the route could not read
//!   (reported back as an error event, never dropped in silence);
//! - **out**, a [`CallSink`]: the answer's frames at
//!   [`EngineConfig::output_rate_hz`](crate::EngineConfig::output_rate_hz), in
//!   frames of [`EngineConfig::output_frame_ms`](crate::EngineConfig::output_frame_ms),
//!   each tagged with its turn's [`Epoch`] (the only interruption counter),
//!   and [`CallSink::clear`] on a barge-in;
//! - **events**, an [`EventBus`]: what happens in the call, produced once by the
//!   engine and read by independent consumers (the route's writer, metrics,
//!   logs, the agent link);
//! - **who is calling**, a [`CallContext`]: the call's id, its transport and
//!   its metadata, kept by the engine for the prompt and the agent link.
//!
//! A route that reads and writes its socket from tasks of its own (a
//! websocket) uses the two ready-made ends: [`inbound_queue`], a
//! [`CallSource`] its reader pushes frames and controls into without ever
//! waiting, and [`audio_queue`], a [`CallSink`] whose frames wait in a small
//! queue allocated once for its writer, and whose `clear` drops every queued
//! frame at once.
//!
//! The engine never chunks, re-frames or counts interruptions a second time:
//! a route encodes each frame it is handed (the engine already resampled it to
//! the route's rate) and drops what it buffers on `clear`.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use brisvox_core::{AudioFrame, CallerFrame, Epoch};

use crate::events::EventBus;
use crate::frame_queue::{self, Next, QueueReceiver, QueueSender, TrySendError};

/// The transport refused audio: the caller's side is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the transport is closed")]
pub struct TransportClosed;

pub use crate::controls::{CallContext, Control, DtmfDigit, Metadata, NotADtmfDigit};

/// One item from the caller's side.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // Frames stay inline: boxing would allocate per frame.
pub enum Inbound {
    /// A caller frame (16 kHz mono PCM16, 20 ms) that arrived at `at`.
    Audio {
        /// The frame.
        frame: CallerFrame,
        /// When the route received it (tokio's clock).
        at: Instant,
    },
    /// A control that arrived at `at`.
    Control {
        /// The control.
        control: Control,
        /// When the route received it (tokio's clock).
        at: Instant,
    },
}

/// The caller's side of a call: audio and controls in.
pub trait CallSource: Send + 'static {
    /// The next item, or `None` when the caller hung up (or the route ended
    /// the call from its side).
    ///
    /// # Cancel safety
    ///
    /// Must be cancel safe: the engine calls it in `select!`, and an item must
    /// not be lost when the future is dropped before it completes.
    fn recv(&mut self) -> impl Future<Output = Option<Inbound>> + Send;
}

/// The answer's side of a call: audio out, and clear.
pub trait CallSink: Send + 'static {
    /// Hands one paced frame of `epoch`'s turn to the transport. Returns when
    /// the transport has taken it (the pacer measures its lag at that moment).
    ///
    /// # Cancel safety
    ///
    /// Must be cancel safe: on barge-in the engine drops a send that has not
    /// completed, and the frame must then not be played.
    fn send_audio(
        &mut self,
        epoch: Epoch,
        frame: AudioFrame,
    ) -> impl Future<Output = Result<(), TransportClosed>> + Send;

    /// Barge-in: drops every frame the transport still buffers; the answer
    /// continues with frames of epoch `floor` or newer. When it returns, no
    /// frame handed over before it will be played.
    fn clear(&mut self, floor: Epoch) -> impl Future<Output = ()> + Send;

    /// Where the transport reports what the caller has heard, when the far end
    /// tells it (a carrier's `mark` echoes); `None` (the default): the audio
    /// the transport took counts as heard. The engine cuts an interrupted
    /// answer to what this confirms.
    fn playout_confirmations(&self) -> Option<PlayoutConfirmations> {
        None
    }
}

/// What the far end has confirmed the caller heard of the newest answer: the
/// audio of one epoch played up to the last mark it echoed. A route's writer
/// learns it from the echoes ([`PlayoutConfirmations::confirm`]); the engine
/// reads it when it cuts that answer ([`CallSink::playout_confirmations`]).
/// Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct PlayoutConfirmations(Arc<Mutex<Option<(Epoch, u64)>>>);

impl PlayoutConfirmations {
    /// Nothing confirmed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The far end played `ms` of `epoch`'s audio (from its first frame).
    pub fn confirm(&self, epoch: Epoch, ms: u64) {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match *last {
            Some((e, done)) if e == epoch && done >= ms => {}
            Some((e, _)) if e > epoch => {}
            _ => *last = Some((epoch, ms)),
        }
    }

    /// Audio of `epoch` confirmed played, ms; 0 when none was.
    pub fn heard_ms(&self, epoch: Epoch) -> u64 {
        match *self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            Some((e, ms)) if e == epoch => ms,
            _ => 0,
        }
    }
}

/// Everything [`run_call`](crate::run_call) needs from a route.
#[derive(Debug)]
pub struct CallEdge<S, K> {
    /// Who is calling.
    pub context: CallContext,
    /// Caller audio and controls in.
    pub source: S,
    /// Answer audio out.
    pub sink: K,
    /// Where the call's events go.
    pub events: EventBus,
}

impl<S: CallSource, K: CallSink> CallEdge<S, K> {
    /// An edge with an empty context and no event consumer.
    pub fn new(source: S, sink: K) -> Self {
        CallEdge {
            context: CallContext::default(),
            source,
            sink,
            events: EventBus::new(),
        }
    }

    /// The same edge with `context`.
    #[must_use]
    pub fn with_context(mut self, context: CallContext) -> Self {
        self.context = context;
        self
    }

    /// The same edge with `events`.
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = events;
        self
    }
}

/// Caller frames an [`inbound_queue`] holds unless told otherwise: 320 ms.
/// A reader that finds it full drops the newest frame (the engine fell behind).
pub const INBOUND_FRAMES: usize = 16;

/// Controls an [`inbound_queue`] holds unless told otherwise.
pub const INBOUND_CONTROLS: usize = 16;

/// A caller frame as it waits in an [`inbound_queue`], with its arrival time.
struct WaitingFrame {
    frame: CallerFrame,
    at: Instant,
}

/// Why an [`InboundSender`] did not take an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboundRefused {
    /// The queue is full: the engine is behind. The item was dropped.
    #[error("the call's input queue is full")]
    Full,
    /// The call is over.
    #[error("the call is over")]
    Closed,
}

/// A [`CallSource`] fed by a route's reader task: caller frames wait in a
/// queue of `frames` (allocated now), controls in one of `controls`. Neither
/// push ever waits: a full queue refuses the item ([`InboundRefused::Full`]),
/// which the route counts or reports. The engine takes waiting controls
/// before waiting frames. Dropping the sender ends the source (the caller hung up).
pub fn inbound_queue(frames: usize, controls: usize) -> (InboundSender, InboundQueue) {
    let (tx, rx) = frame_queue::with_urgent_lane(frames, controls.max(1));
    (InboundSender { tx }, InboundQueue { rx })
}

/// A control as it waits in an [`inbound_queue`], with its arrival time.
type WaitingControl = (Control, Instant);

/// The route's end of an [`inbound_queue`].
pub struct InboundSender {
    /// Frames on the queue, controls on its urgent lane: one lock and one
    /// waker for both.
    tx: QueueSender<WaitingFrame, WaitingControl>,
}

impl std::fmt::Debug for InboundSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundSender").finish_non_exhaustive()
    }
}

fn refused<T>(e: TrySendError<T>) -> InboundRefused {
    match e {
        TrySendError::Full(_) => InboundRefused::Full,
        TrySendError::Closed(_) => InboundRefused::Closed,
    }
}

impl InboundSender {
    /// Queues a caller frame (20 ms at 16 kHz: 320 samples; fewer are padded
    /// with silence, more are cut) that arrived at `at`.
    pub fn push_audio(&self, samples: &[i16], at: Instant) -> Result<(), InboundRefused> {
        let frame = WaitingFrame {
            frame: CallerFrame::new(samples),
            at,
        };
        self.tx.try_send(frame).map_err(refused)
    }

    /// Queues a control that arrived at `at`.
    pub fn push_control(&self, control: Control, at: Instant) -> Result<(), InboundRefused> {
        self.tx.try_send_urgent((control, at)).map_err(refused)
    }
}

/// The engine's end of an [`inbound_queue`].
pub struct InboundQueue {
    rx: QueueReceiver<WaitingFrame, WaitingControl>,
}

impl std::fmt::Debug for InboundQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundQueue").finish_non_exhaustive()
    }
}

impl CallSource for InboundQueue {
    /// # Cancel safety
    ///
    /// Cancel safe: the queue's receive is.
    async fn recv(&mut self) -> Option<Inbound> {
        Some(match self.rx.recv_next().await? {
            Next::Urgent((control, at)) => Inbound::Control { control, at },
            Next::Item(f) => Inbound::Audio {
                frame: f.frame,
                at: f.at,
            },
        })
    }
}

/// What a route's writer takes out of an [`audio_queue`].
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Frames stay inline: the queue is allocated once.
pub enum QueuedAudio {
    /// Encode and send this frame of `epoch`'s turn.
    Frame {
        /// Its turn.
        epoch: Epoch,
        /// The frame, at the route's rate.
        frame: AudioFrame,
    },
    /// Barge-in: tell the far end to drop what it buffered; frames of older
    /// epochs than `floor` were dropped here already.
    Clear {
        /// The epoch the answer continues with.
        floor: Epoch,
    },
}

/// Frames an [`audio_queue`] holds unless told otherwise: 80 ms, so the pacer's
/// schedule, not this queue, sets when audio leaves.
pub const AUDIO_QUEUE_FRAMES: usize = 4;

/// A [`CallSink`] for a route that writes from its own task: frames wait in a
/// queue of `capacity` items (at least one), allocated now. `send_audio` waits
/// for room (backpressure to the pacer); `clear` drops every queued frame at
/// once and queues a [`QueuedAudio::Clear`]. When the receiver is gone the
/// sink reports [`TransportClosed`].
pub fn audio_queue(capacity: usize) -> (AudioQueueSink, AudioQueueReceiver) {
    let (tx, rx) = frame_queue::bounded(capacity);
    let sink = AudioQueueSink {
        tx,
        confirmations: None,
    };
    (sink, AudioQueueReceiver { rx })
}

/// The engine's end of an [`audio_queue`].
pub struct AudioQueueSink {
    tx: QueueSender<QueuedAudio>,
    confirmations: Option<PlayoutConfirmations>,
}

impl AudioQueueSink {
    /// The route's writer learns what was heard from the far end and reports
    /// it in `confirmations` ([`CallSink::playout_confirmations`]).
    pub fn with_playout_confirmations(mut self, confirmations: PlayoutConfirmations) -> Self {
        self.confirmations = Some(confirmations);
        self
    }
}

impl std::fmt::Debug for AudioQueueSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioQueueSink").finish_non_exhaustive()
    }
}

impl CallSink for AudioQueueSink {
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped before it completes, the frame was not queued.
    async fn send_audio(&mut self, epoch: Epoch, frame: AudioFrame) -> Result<(), TransportClosed> {
        self.tx
            .send(QueuedAudio::Frame { epoch, frame })
            .await
            .map_err(|_| TransportClosed)
    }

    async fn clear(&mut self, floor: Epoch) {
        // Everything queued is older than the floor: a clear follows a barge-in,
        // and the pacer sends nothing of the new epoch before this returns.
        // A gone receiver has nothing left to play.
        let _ = self.tx.replace_all(QueuedAudio::Clear { floor });
    }

    fn playout_confirmations(&self) -> Option<PlayoutConfirmations> {
        self.confirmations.clone()
    }
}

/// The route's end of an [`audio_queue`].
pub struct AudioQueueReceiver {
    rx: QueueReceiver<QueuedAudio>,
}

impl std::fmt::Debug for AudioQueueReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioQueueReceiver").finish_non_exhaustive()
    }
}

impl AudioQueueReceiver {
    /// The next item; `None` once the engine's sink is gone and all was taken.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken only when this returns it.
    pub async fn recv(&mut self) -> Option<QueuedAudio> {
        self.rx.recv().await
    }

    /// The next item if one waits.
    pub fn try_recv(&mut self) -> Option<QueuedAudio> {
        self.rx.try_recv()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(v: i16) -> AudioFrame {
        AudioFrame::from_samples(&[v; 160], 8_000).expect("a 20 ms frame")
    }

    #[test]
    fn dtmf_digits_are_the_sixteen_keys() {
        for c in "0123456789*#ABCD".chars() {
            assert_eq!(DtmfDigit::new(c).map(DtmfDigit::as_char), Ok(c));
        }
        assert_eq!(DtmfDigit::new('b').map(DtmfDigit::as_char), Ok('B'));
        assert_eq!(DtmfDigit::new('x'), Err(NotADtmfDigit('X')));
    }

    #[tokio::test(start_paused = true)]
    async fn an_inbound_queue_gives_controls_first_refuses_when_full_and_ends_with_its_sender() {
        let (tx, mut rx) = inbound_queue(2, 1);
        let t0 = tokio::time::Instant::now().into_std();
        tx.push_audio(&[5; 320], t0).expect("room");
        tx.push_audio(&[6; 100], t0).expect("room");
        assert_eq!(tx.push_audio(&[7; 320], t0), Err(InboundRefused::Full));
        let hangup = Control::Hangup { reason: "x".into() };
        tx.push_control(hangup.clone(), t0).expect("room");
        assert_eq!(
            tx.push_control(hangup.clone(), t0),
            Err(InboundRefused::Full)
        );
        assert!(
            matches!(rx.recv().await, Some(Inbound::Control { control, .. }) if control == hangup)
        );
        match rx.recv().await {
            Some(Inbound::Audio { frame, at }) => {
                assert_eq!((frame.len(), frame.samples()[0], at), (320, 5, t0));
            }
            other => panic!("{other:?}"),
        }
        match rx.recv().await {
            Some(Inbound::Audio { frame, .. }) => {
                assert_eq!(
                    (frame.samples()[99], frame.samples()[100]),
                    (6, 0),
                    "padded"
                );
            }
            other => panic!("{other:?}"),
        }
        drop(tx);
        assert!(rx.recv().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_clear_drops_every_queued_frame_and_is_queued_in_their_place() {
        let (mut sink, mut rx) = audio_queue(4);
        sink.send_audio(Epoch(1), frame(1)).await.expect("room");
        sink.send_audio(Epoch(1), frame(2)).await.expect("room");
        sink.clear(Epoch(2)).await;
        sink.send_audio(Epoch(2), frame(3)).await.expect("room");
        assert!(matches!(
            rx.recv().await,
            Some(QueuedAudio::Clear { floor: Epoch(2) })
        ));
        match rx.recv().await {
            Some(QueuedAudio::Frame { epoch, frame }) => {
                assert_eq!((epoch, frame.samples()[0]), (Epoch(2), 3));
            }
            other => panic!("{other:?}"),
        }
        drop(rx);
        assert_eq!(
            sink.send_audio(Epoch(2), frame(4)).await,
            Err(TransportClosed)
        );
    }

    #[test]
    fn confirmations_keep_the_newest_answers_furthest_echo() {
        let c = PlayoutConfirmations::new();
        assert_eq!(c.heard_ms(Epoch(1)), 0, "nothing echoed yet");
        c.confirm(Epoch(1), 100);
        c.confirm(Epoch(1), 60); // an older mark echoed late
        assert_eq!(c.heard_ms(Epoch(1)), 100);
        c.confirm(Epoch(2), 40);
        c.confirm(Epoch(1), 300); // a late echo of an answer already replaced
        assert_eq!((c.heard_ms(Epoch(1)), c.heard_ms(Epoch(2))), (0, 40));
        let (sink, _rx) = audio_queue(1);
        let sink = sink.with_playout_confirmations(c.clone());
        let shared = sink.playout_confirmations().expect("the sink shares them");
        c.confirm(Epoch(2), 80);
        assert_eq!(shared.heard_ms(Epoch(2)), 80);
    }
}
