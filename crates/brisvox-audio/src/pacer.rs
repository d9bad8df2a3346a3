//! The output pacer's schedule: when each TTS frame leaves for the transport.
//!
//! [`OutputPacer`] is a sans-IO core in the str0m style. It owns no timer, task or
//! socket and never reads a clock: every input carries `now`, and
//! [`OutputPacer::poll`] says what to do next. The driver (an async stage task)
//! follows one rule:
//!
//! 1. feed every input that arrived (`handle_frame`, `handle_tts_end`,
//!    `handle_interrupt`), then
//! 2. call [`poll`](OutputPacer::poll) until it returns
//!    [`PacerOutput::WaitUntil`] or [`PacerOutput::Idle`]: push each
//!    [`PacerOutput::Release`]d frame (with its epoch) downstream and call
//!    [`handle_sent`](OutputPacer::handle_sent) when that push returns; forward
//!    each [`PacerOutput::TtsEnded`];
//! 3. sleep until the `WaitUntil` deadline or the next input, whichever is first.
//!
//! # Schedule rules
//!
//! - **Absolute grid.** A frame's deadline is the previous frame's deadline plus
//!   the previous frame's own duration (10, 20, 40 ms ...), never the release
//!   instant plus a period, so timer overshoot does not accumulate.
//! - **Lag.** A frame that arrived up to `max_lag` (default [`DEFAULT_MAX_LAG`])
//!   after its grid point is released at once and keeps the grid. A frame that
//!   arrived later than that means the audio ran dry: the pacer counts one
//!   underrun and restarts the grid at the release instant. Only the underrun rule
//!   uses the lag at arrival; a stalled sink does not cause underruns.
//! - **Worst lag** is measured at hand-off ([`handle_sent`](OutputPacer::handle_sent)),
//!   against the frame's grid point: it includes timer overshoot and time blocked
//!   downstream, so it can exceed `max_lag`.
//! - **Due deadlines never reach the timer.** `poll` returns the due item itself;
//!   `WaitUntil(t)` always has `t > now`.
//! - **First frame at once after idle.** After session start, an interrupt or a
//!   forwarded turn end, the next frame leaves on arrival and the grid runs from
//!   there. Optionally ([`with_first_frame_phase`](OutputPacer::with_first_frame_phase))
//!   the session's first frame is held a seeded whole-millisecond phase in
//!   `[0, 20)` ms, which spreads many sessions' frame deadlines apart.
//! - **Interrupt flush.** [`handle_interrupt`](OutputPacer::handle_interrupt)
//!   with a newer epoch drops every queued item of older epochs (frames are counted
//!   in `stale_dropped`), treats a frame whose push has not returned yet as
//!   abandoned (counted in `stale_dropped`, not played), and resets the schedule so
//!   the next turn starts at once.
//! - **Turn ends.** A `TtsEnded` is held until the turn's last frame has played
//!   out (its deadline plus its duration), then forwarded, and the schedule
//!   restarts: a silence of any length before the next turn is not an underrun.
//!
//! # Bounds
//!
//! The queue holds at most [`PACER_QUEUE_CAPACITY`] frames and
//! [`PACER_TURN_END_SLOTS`] turn ends, allocated at construction. The overflow
//! policy is *reject newest*: a frame offered to a full queue is handed back in
//! [`QueueFull`], so the driver stops reading its inbox (backpressure towards the
//! framer) and offers it again after the next release.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use brisvox_core::{AudioFrame, Epoch};

/// Frames the pacer queues (320 ms of 20 ms frames): enough to ride out a late
/// TTS chunk, while the TTS stage and its queue hold the rest of the answer.
/// Each slot holds an inline [`AudioFrame`] (3.9 KB), so this is most of a
/// call's output memory.
pub const PACER_QUEUE_CAPACITY: usize = 16;

/// Turn ends the pacer queues besides its frames.
pub const PACER_TURN_END_SLOTS: usize = 4;

/// How late a frame may arrive and still keep the grid.
pub const DEFAULT_MAX_LAG: Duration = Duration::from_millis(60);

/// Range of the optional first-frame phase, in whole milliseconds.
const PHASE_RANGE_MS: u64 = 20;

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // Frames stay inline on purpose: boxing would allocate per frame.
pub enum PacerOutput {
    /// Push this frame of `epoch`'s turn downstream now, then call
    /// [`OutputPacer::handle_sent`]. The epoch comes back with the frame, so
    /// the driver needs no record of its own of whose frame it is.
    Release {
        /// The turn the frame belongs to.
        epoch: Epoch,
        /// The frame.
        frame: AudioFrame,
    },
    /// The turn of this epoch has played out: forward its end downstream.
    TtsEnded(Epoch),
    /// Nothing is due: poll again at this instant (always later than `now`) or
    /// when an input arrives.
    WaitUntil(Instant),
    /// Nothing queued, or a released frame's push has not returned yet: poll
    /// again after the next input.
    Idle,
}

/// Counters of one pacer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PacerMetrics {
    /// Frames delivered (their push returned).
    pub frames_played: u64,
    /// Times a frame arrived more than `max_lag` after its grid point.
    pub underruns: u64,
    /// Largest hand-off lag behind a frame's grid point.
    pub worst_lag: Duration,
    /// Frames dropped because their epoch was stale (on arrival, on an
    /// interrupt, or abandoned mid-push).
    pub stale_dropped: u64,
}

/// A frame offered to a full queue, handed back to the caller.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("pacer queue full ({capacity} frames); the frame is handed back")]
#[non_exhaustive]
pub struct QueueFull {
    /// The frame that was not queued.
    pub frame: AudioFrame,
    /// Epoch it was tagged with.
    pub epoch: Epoch,
    /// [`PACER_QUEUE_CAPACITY`].
    pub capacity: usize,
}

/// Why a turn end could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacerError {
    /// More turn ends pending than [`PACER_TURN_END_SLOTS`].
    #[error("{slots} turn ends already pending")]
    TurnEndsFull {
        /// [`PACER_TURN_END_SLOTS`].
        slots: usize,
    },
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Frames stay inline on purpose: the queue is allocated once.
enum Queued {
    Frame {
        frame: AudioFrame,
        epoch: Epoch,
        arrived_at: Instant,
    },
    End(Epoch),
}

impl Queued {
    fn epoch(&self) -> Epoch {
        match self {
            Queued::Frame { epoch, .. } | Queued::End(epoch) => *epoch,
        }
    }
}

/// A released frame whose push has not returned.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    grid_point: Instant,
}

/// Where the schedule stands.
#[derive(Debug, Clone, Copy)]
enum Schedule {
    /// No grid: the next frame leaves on arrival, not before `since`.
    Idle { since: Option<Instant> },
    /// The next frame's deadline.
    Grid(Instant),
}

/// The sans-IO output pacer; see the [module docs](self) for its rules.
///
/// Methods come in four groups, in this order: constructors and getters,
/// `handle_*` inputs, and [`poll`](Self::poll).
#[derive(Debug)]
pub struct OutputPacer {
    queue: VecDeque<Queued>,
    queued_frames: usize,
    queued_ends: usize,
    epoch: Epoch,
    schedule: Schedule,
    in_flight: Option<InFlight>,
    max_lag: Duration,
    /// The session's first-frame phase, consumed by the first frame.
    pending_phase: Option<Duration>,
    metrics: PacerMetrics,
}

impl Default for OutputPacer {
    fn default() -> Self {
        Self::new()
    }
}

/// splitmix64: one well-mixed 64-bit value per seed.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The first-frame phase for `seed`: a whole millisecond in `[0, 20)` ms.
pub fn phase_offset(seed: u64) -> Duration {
    Duration::from_millis(splitmix64(seed) % PHASE_RANGE_MS)
}

impl OutputPacer {
    /// A pacer at epoch 0, idle, first frame at once, `max_lag` of 60 ms.
    pub fn new() -> Self {
        OutputPacer {
            queue: VecDeque::with_capacity(PACER_QUEUE_CAPACITY + PACER_TURN_END_SLOTS),
            queued_frames: 0,
            queued_ends: 0,
            epoch: Epoch::ZERO,
            schedule: Schedule::Idle { since: None },
            in_flight: None,
            max_lag: DEFAULT_MAX_LAG,
            pending_phase: None,
            metrics: PacerMetrics::default(),
        }
    }

    /// Holds the session's first frame [`phase_offset(seed)`](phase_offset)
    /// after its arrival (off by default). Later first frames (after an
    /// interrupt or a turn end) still leave at once.
    #[must_use]
    pub fn with_first_frame_phase(mut self, seed: u64) -> Self {
        self.pending_phase = Some(phase_offset(seed));
        self
    }

    /// Sets how late a frame may arrive and keep the grid.
    #[must_use]
    pub fn with_max_lag(mut self, max_lag: Duration) -> Self {
        self.max_lag = max_lag;
        self
    }

    /// The counters so far.
    pub fn metrics(&self) -> PacerMetrics {
        self.metrics
    }

    /// The current epoch (older items are stale).
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// Frames queued and not yet released.
    pub fn queued_frames(&self) -> usize {
        self.queued_frames
    }

    /// Frames the queue can still take.
    pub fn free_frame_slots(&self) -> usize {
        PACER_QUEUE_CAPACITY - self.queued_frames
    }

    /// The deadline of the next frame, if a grid is running.
    pub fn next_deadline(&self) -> Option<Instant> {
        match self.schedule {
            Schedule::Grid(deadline) => Some(deadline),
            Schedule::Idle { .. } => None,
        }
    }

    /// Queues a frame of `epoch` that arrived at `now`. A stale frame is dropped
    /// and counted; a frame offered to a full queue is handed back.
    #[allow(clippy::result_large_err)] // The frame is handed back by value (tokio's TrySendError::Full): no allocation, and only on overflow.
    pub fn handle_frame(
        &mut self,
        now: Instant,
        epoch: Epoch,
        frame: AudioFrame,
    ) -> Result<(), QueueFull> {
        if epoch.is_stale(self.epoch) {
            self.metrics.stale_dropped += 1;
            return Ok(());
        }
        if self.queued_frames == PACER_QUEUE_CAPACITY {
            return Err(QueueFull {
                frame,
                epoch,
                capacity: PACER_QUEUE_CAPACITY,
            });
        }
        self.queued_frames += 1;
        self.queue.push_back(Queued::Frame {
            frame,
            epoch,
            arrived_at: now,
        });
        Ok(())
    }

    /// Queues the end of the turn `epoch`'s audio, to be forwarded once its
    /// last frame has played out. A stale turn end is ignored.
    pub fn handle_tts_end(&mut self, _now: Instant, epoch: Epoch) -> Result<(), PacerError> {
        if epoch.is_stale(self.epoch) {
            return Ok(());
        }
        if self.queued_ends == PACER_TURN_END_SLOTS {
            return Err(PacerError::TurnEndsFull {
                slots: PACER_TURN_END_SLOTS,
            });
        }
        self.queued_ends += 1;
        self.queue.push_back(Queued::End(epoch));
        Ok(())
    }

    /// Moves the pacer to `new_epoch` (a barge-in). Does nothing unless
    /// `new_epoch` is newer than the current epoch. Drops every older queued
    /// item, abandons a frame whose push has not returned, and resets the
    /// schedule so the next turn's first frame leaves at once.
    pub fn handle_interrupt(&mut self, now: Instant, new_epoch: Epoch) {
        if new_epoch <= self.epoch {
            return;
        }
        self.epoch = new_epoch;
        let before = self.queue.len();
        let mut dropped_frames = 0;
        self.queue.retain(|item| {
            let stale = item.epoch().is_stale(new_epoch);
            if stale && matches!(item, Queued::Frame { .. }) {
                dropped_frames += 1;
            }
            !stale
        });
        self.queued_frames -= dropped_frames;
        self.queued_ends -= before - self.queue.len() - dropped_frames;
        if self.in_flight.take().is_some() {
            dropped_frames += 1;
        }
        self.metrics.stale_dropped += dropped_frames as u64;
        self.schedule = Schedule::Idle { since: Some(now) };
    }

    /// The push of the last released frame returned at `now`: the frame is
    /// delivered and its hand-off lag is measured. Ignored if no frame is in flight.
    pub fn handle_sent(&mut self, now: Instant) {
        if let Some(sent) = self.in_flight.take() {
            self.metrics.frames_played += 1;
            let lag = now.saturating_duration_since(sent.grid_point);
            self.metrics.worst_lag = self.metrics.worst_lag.max(lag);
        }
    }

    /// What to do at `now`. Call repeatedly until `WaitUntil` or `Idle`.
    pub fn poll(&mut self, now: Instant) -> PacerOutput {
        if self.in_flight.is_some() {
            return PacerOutput::Idle;
        }
        let due = match self.queue.front() {
            None => return PacerOutput::Idle,
            Some(Queued::End(_)) => self.end_due(now),
            Some(Queued::Frame { arrived_at, .. }) => self.frame_due(*arrived_at),
        };
        if due > now {
            return PacerOutput::WaitUntil(due);
        }
        // The front item exists: it was matched above.
        match self.queue.pop_front() {
            Some(Queued::End(epoch)) => {
                self.queued_ends -= 1;
                self.schedule = Schedule::Idle { since: Some(now) };
                PacerOutput::TtsEnded(epoch)
            }
            Some(Queued::Frame {
                frame,
                epoch,
                arrived_at,
            }) => {
                self.queued_frames -= 1;
                self.release(now, due, arrived_at, epoch, frame)
            }
            None => PacerOutput::Idle,
        }
    }

    /// When the front turn end is due: once the last frame has played out.
    fn end_due(&self, now: Instant) -> Instant {
        match self.schedule {
            Schedule::Grid(played_out) => played_out,
            Schedule::Idle { .. } => now,
        }
    }

    /// The grid point of the front frame.
    fn frame_due(&self, arrived_at: Instant) -> Instant {
        match self.schedule {
            Schedule::Grid(deadline) => deadline,
            Schedule::Idle { since } => {
                let start = since.map_or(arrived_at, |s| s.max(arrived_at));
                start + self.pending_phase.unwrap_or(Duration::ZERO)
            }
        }
    }

    fn release(
        &mut self,
        now: Instant,
        due: Instant,
        arrived_at: Instant,
        epoch: Epoch,
        frame: AudioFrame,
    ) -> PacerOutput {
        self.pending_phase = None;
        let arrival_lag = arrived_at.saturating_duration_since(due);
        let grid_point = if arrival_lag > self.max_lag {
            self.metrics.underruns += 1;
            now
        } else {
            due
        };
        self.schedule = Schedule::Grid(grid_point + frame.duration());
        self.in_flight = Some(InFlight { grid_point });
        PacerOutput::Release { epoch, frame }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)] // Tests need one real instant as the origin; the pacer never reads the clock.
    fn t_origin() -> Instant {
        Instant::now()
    }

    fn frame() -> AudioFrame {
        // 20 ms at 16 kHz fits a frame by construction.
        AudioFrame::silence(20, 16_000).unwrap()
    }

    #[test]
    fn a_full_queue_hands_the_frame_back() {
        let t0 = t_origin();
        let mut p = OutputPacer::new();
        for _ in 0..PACER_QUEUE_CAPACITY {
            p.handle_frame(t0, Epoch::ZERO, frame()).unwrap();
        }
        assert_eq!(p.free_frame_slots(), 0);
        let err = p.handle_frame(t0, Epoch(0), frame()).unwrap_err();
        assert_eq!(err.capacity, PACER_QUEUE_CAPACITY);
        assert_eq!(err.frame, frame());
        // One release frees one slot.
        assert!(matches!(p.poll(t0), PacerOutput::Release { .. }));
        assert_eq!(p.free_frame_slots(), 1);
    }

    #[test]
    fn a_released_frame_carries_its_epoch() {
        let t0 = t_origin();
        let mut p = OutputPacer::new();
        p.handle_interrupt(t0, Epoch(3));
        p.handle_frame(t0, Epoch(3), frame()).unwrap();
        p.handle_frame(t0, Epoch(4), frame()).unwrap();
        assert!(matches!(
            p.poll(t0),
            PacerOutput::Release {
                epoch: Epoch(3),
                ..
            }
        ));
        p.handle_sent(t0);
        let next = t0 + Duration::from_millis(20);
        assert!(matches!(
            p.poll(next),
            PacerOutput::Release {
                epoch: Epoch(4),
                ..
            }
        ));
    }

    #[test]
    fn turn_end_slots_are_bounded() {
        let t0 = t_origin();
        let mut p = OutputPacer::new();
        p.handle_frame(t0, Epoch::ZERO, frame()).unwrap();
        for _ in 0..PACER_TURN_END_SLOTS {
            p.handle_tts_end(t0, Epoch::ZERO).unwrap();
        }
        assert_eq!(
            p.handle_tts_end(t0, Epoch::ZERO),
            Err(PacerError::TurnEndsFull {
                slots: PACER_TURN_END_SLOTS
            })
        );
    }

    #[test]
    fn an_interrupt_to_an_older_or_equal_epoch_changes_nothing() {
        let t0 = t_origin();
        let mut p = OutputPacer::new();
        p.handle_interrupt(t0, Epoch(2));
        p.handle_frame(t0, Epoch(2), frame()).unwrap();
        p.handle_interrupt(t0, Epoch(2));
        p.handle_interrupt(t0, Epoch(1));
        assert_eq!(p.queued_frames(), 1);
        assert_eq!(p.epoch(), Epoch(2));
    }

    #[test]
    fn splitmix_matches_the_published_first_output() {
        // splitmix64 seeded with 0: first output 0xE220A8397B1DCDAF (Vigna's reference).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }
}
