//! The output stage: the pacer task between the TTS stage and the transport.
//!
//! Drives the sans-IO [`OutputPacer`] by its rule: feed the inputs, poll until
//! `WaitUntil` or `Idle`, sleep until the deadline (never on a due one: the
//! pacer only returns future deadlines, and due items are released at once) or
//! the next input. Each released frame comes back from the pacer with its
//! epoch and is handed to the [`CallSink`] tagged with it;
//! the hand-off of a response's first frame marks `FirstAudioOut` and tells the
//! driver the bot is speaking; a played-out turn end marks `LastAudioOut` and
//! tells the driver the response finished.
//!
//! Barge-in: when the epoch floor rises, the pacer drops every older frame
//! (also one whose send has not returned: the send is abandoned, so it is never
//! played), and if a response was audible the transport is cleared and
//! `AudioOutStopped` is marked for its epoch when the clear has returned.
//!
//! The stage keeps the call's [`PlayoutBook`]: the TTS stage's chunk texts and
//! word timings, the audio each response produced and the audio handed to the
//! transport. When a response is cut (the floor passes it) the driver is told
//! what of it the caller heard ([`DriverInput::Heard`]).
//!
//! The inbox is read only while the pacer has room (backpressure towards the
//! TTS stage); the pacer's own queue is allocated once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use brisvox_audio::{OutputPacer, PacerMetrics, PacerOutput};
use brisvox_core::timeline::TurnEvent;
use brisvox_core::{AudioFrame, Epoch};
use tokio::sync::{mpsc, watch};

use super::inbox::{DriverInput, OutInput};
use super::{SharedTimeline, mark, now, shutdown, sleep_until, stale};
use crate::edge::{CallSink, PlayoutConfirmations};
use crate::frame_queue::QueueReceiver;
use crate::gate::Gated;
use crate::playout::PlayoutBook;

/// The transport refused a frame.
struct Closed;

/// The output stage actor.
pub(crate) struct OutputStage<K> {
    sink: K,
    inbox: QueueReceiver<OutInput>,
    pacer: OutputPacer,
    /// The epoch whose audio has reached the transport since its last end.
    playing: Option<Epoch>,
    /// What each recent response sent and what of it was played.
    book: PlayoutBook,
    /// The last cut response whose heard part was reported.
    reported: Option<Epoch>,
    /// What the far end confirmed as played, when the transport learns it
    /// (a carrier's mark echoes): a cut answer is cut to it.
    confirmed: Option<PlayoutConfirmations>,
    driver: mpsc::Sender<DriverInput>,
    timeline: SharedTimeline,
    frames_out: Arc<AtomicU64>,
    floor: watch::Receiver<Epoch>,
    shutdown: watch::Receiver<bool>,
}

impl<K: CallSink> OutputStage<K> {
    /// Builds the actor.
    pub(crate) fn new(
        sink: K,
        inbox: QueueReceiver<OutInput>,
        driver: mpsc::Sender<DriverInput>,
        timeline: SharedTimeline,
        frames_out: Arc<AtomicU64>,
        floor: watch::Receiver<Epoch>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        OutputStage {
            confirmed: sink.playout_confirmations(),
            sink,
            inbox,
            pacer: OutputPacer::new(),
            playing: None,
            book: PlayoutBook::new(),
            reported: None,
            driver,
            timeline,
            frames_out,
            floor,
            shutdown,
        }
    }

    /// Paces audio until the call shuts down; returns the pacer's counters.
    pub(crate) async fn run(mut self) -> PacerMetrics {
        // One wait for the shutdown signal for the whole call, not one per
        // frame, polled only once the watch woke it (see `AudioIn::run`).
        let mut signal = self.shutdown.clone();
        let mut down = Gated::new(shutdown(&mut signal));
        loop {
            let wait = match self.release_due().await {
                Ok(wait) => wait,
                Err(Closed) => {
                    let closed = DriverInput::TransportClosed { at: now() };
                    let _ = self.driver.send(closed).await;
                    break;
                }
            };
            let room = self.pacer.free_frame_slots() > 0;
            let current = self.pacer.epoch();
            tokio::select! {
                biased;
                () = &mut down => break,
                () = stale(&mut self.floor, current) => self.on_interrupt().await,
                input = self.inbox.recv(), if room => match input {
                    Some(input) => self.on_input(input),
                    None => break,
                },
                () = sleep_until(wait), if wait.is_some() => {}
            }
        }
        self.pacer.metrics()
    }

    fn on_input(&mut self, input: OutInput) {
        let now = now();
        match input {
            OutInput::Frame { epoch, frame } => {
                let stale = epoch.is_stale(self.pacer.epoch());
                let ms = frame.duration().as_secs_f64() * 1000.0;
                // Cannot be full: the inbox is read only while the pacer has room.
                if self.pacer.handle_frame(now, epoch, frame).is_ok() && !stale {
                    self.book.audio_produced(epoch, ms);
                }
            }
            OutInput::Text { epoch, text } => self.book.chunk_sent(epoch, &text),
            OutInput::Words { epoch, words } => self.book.word_timings(epoch, &words),
            OutInput::End { epoch } => {
                self.book.chunk_done(epoch);
                // More turn ends pending than the pacer holds: finish at once
                // rather than lose the end (the driver must hear of it).
                if self.pacer.handle_tts_end(now, epoch).is_err() {
                    let finished = DriverInput::ResponseFinished { epoch, at: now };
                    let _ = self.driver.try_send(finished);
                }
            }
        }
    }

    /// Releases everything due; returns the next deadline, if any.
    async fn release_due(&mut self) -> Result<Option<Instant>, Closed> {
        loop {
            match self.pacer.poll(now()) {
                PacerOutput::Release { epoch, frame } => self.send(epoch, frame).await?,
                PacerOutput::TtsEnded(epoch) => {
                    let at = now();
                    if self.playing.take().is_some() {
                        mark(&self.timeline, epoch, TurnEvent::LastAudioOut, at);
                    }
                    let finished = DriverInput::ResponseFinished { epoch, at };
                    let _ = self.driver.send(finished).await;
                }
                PacerOutput::WaitUntil(deadline) => return Ok(Some(deadline)),
                PacerOutput::Idle => return Ok(None),
            }
        }
    }

    /// Hands one frame to the transport, unless a barge-in comes first.
    async fn send(&mut self, epoch: Epoch, frame: AudioFrame) -> Result<(), Closed> {
        let current = self.pacer.epoch();
        let frame_ms = frame.duration().as_secs_f64() * 1000.0;
        let sent = tokio::select! {
            biased;
            () = stale(&mut self.floor, current) => None,
            sent = self.sink.send_audio(epoch, frame) => Some(sent),
        };
        match sent {
            // Abandoned: the pacer drops the frame in flight; it is never played.
            None => self.on_interrupt().await,
            Some(Err(_)) => return Err(Closed),
            Some(Ok(())) => {
                let at = now();
                self.book.played(epoch, frame_ms);
                self.pacer.handle_sent(at);
                self.frames_out.fetch_add(1, Ordering::Relaxed);
                if self.playing != Some(epoch) {
                    self.playing = Some(epoch);
                    mark(&self.timeline, epoch, TurnEvent::FirstAudioOut, at);
                    let started = DriverInput::AudioStarted { epoch, at };
                    let _ = self.driver.send(started).await;
                }
            }
        }
        Ok(())
    }

    /// The floor rose: flush the pacer, clear the transport if audio was out.
    async fn on_interrupt(&mut self) {
        let floor = *self.floor.borrow_and_update();
        self.pacer.handle_interrupt(now(), floor);
        if let Some(old) = self.playing.filter(|e| e.is_stale(floor)) {
            self.playing = None;
            self.sink.clear(floor).await;
            mark(&self.timeline, old, TurnEvent::AudioOutStopped, now());
        }
        self.report_heard(floor).await;
    }

    /// Tells the driver what the caller heard of the newest response the
    /// floor cut (once per response).
    async fn report_heard(&mut self, floor: Epoch) {
        let Some(cut) = self.book.last_epoch().filter(|e| e.is_stale(floor)) else {
            return;
        };
        if self.reported == Some(cut) {
            return;
        }
        self.reported = Some(cut);
        if let Some(confirmed) = &self.confirmed {
            self.book.confirmed(cut, confirmed.heard_ms(cut) as f64);
        }
        if let Some(heard) = self.book.heard(cut) {
            let _ = self.driver.send(DriverInput::Heard { heard }).await;
        }
    }
}
