//! A simulated caller and transport for deterministic tests and the simulator:
//! the smallest implementation of the call's edge ([`crate::edge`]).
//!
//! [`SimCaller`] plays a caller's audio in real time on tokio's clock: frame
//! `k` (20 ms at 16 kHz) is handed over at `begin + (k + 1) * 20 ms`, the
//! moment its last sample has been spoken, at absolute deadlines so lateness
//! never accumulates; controls scheduled with [`SimCaller::with_control`] are
//! handed over at their time among the frames; after the last frame the caller
//! hangs up. [`RecordingSink`] takes the answer at once and logs every frame
//! and clear with its time, for the test to inspect through a [`SinkLog`] handle.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use brisvox_core::frame::INTERNAL_FRAME_SAMPLES;
use brisvox_core::{AudioFrame, CallerFrame, Epoch};

use crate::edge::{CallSink, CallSource, Control, Inbound, TransportClosed};

/// A caller that plays `samples` (16 kHz mono PCM16) in real time, then hangs up.
#[derive(Debug)]
pub struct SimCaller {
    samples: Arc<[i16]>,
    next: usize,
    begin: Option<tokio::time::Instant>,
    /// Controls to hand over, by their offset from the first read, in order.
    controls: VecDeque<(Duration, Control)>,
}

impl SimCaller {
    /// A caller that will say `samples`, starting at its first read. A final
    /// partial frame is padded with silence.
    pub fn new(samples: impl Into<Arc<[i16]>>) -> Self {
        SimCaller {
            samples: samples.into(),
            next: 0,
            begin: None,
            controls: VecDeque::new(),
        }
    }

    /// The same caller, also handing over `control` `after` its first read
    /// (before the frame due at that moment). Controls are kept in the order
    /// of their times.
    #[must_use]
    pub fn with_control(mut self, after: Duration, control: Control) -> Self {
        let at = self.controls.partition_point(|(t, _)| *t <= after);
        self.controls.insert(at, (after, control));
        self
    }

    /// Frames the caller will send.
    pub fn frames(&self) -> usize {
        self.samples.len().div_ceil(INTERNAL_FRAME_SAMPLES)
    }
}

impl CallSource for SimCaller {
    /// # Cancel safety
    ///
    /// Cancel safe: the frame counter advances, and a control is taken, only
    /// after the wait completed.
    async fn recv(&mut self) -> Option<Inbound> {
        let begin = *self.begin.get_or_insert_with(tokio::time::Instant::now);
        let start = self.next * INTERNAL_FRAME_SAMPLES;
        if start >= self.samples.len() {
            return None;
        }
        let due = begin + Duration::from_millis(20 * (self.next as u64 + 1));
        let control_due = self.controls.front().map(|(after, _)| begin + *after);
        if let Some(at) = control_due.filter(|at| *at <= due) {
            if at > tokio::time::Instant::now() {
                tokio::time::sleep_until(at).await;
            }
            let (_, control) = self.controls.pop_front()?;
            let at = tokio::time::Instant::now().into_std();
            return Some(Inbound::Control { control, at });
        }
        if due > tokio::time::Instant::now() {
            tokio::time::sleep_until(due).await;
        }
        let end = (start + INTERNAL_FRAME_SAMPLES).min(self.samples.len());
        self.next += 1;
        // Padded with silence past the end of the samples.
        let frame = CallerFrame::new(&self.samples[start..end]);
        let at = tokio::time::Instant::now().into_std();
        Some(Inbound::Audio { frame, at })
    }
}

/// One thing the sink saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SinkEvent {
    /// A frame was handed over at `at`; `rms` is its level (PCM16 units).
    Frame {
        /// When.
        at: Instant,
        /// Its turn.
        epoch: Epoch,
        /// Its RMS level.
        rms: f32,
        /// Its samples.
        len: usize,
        /// Its rate, in Hz.
        rate_hz: u32,
    },
    /// The transport was cleared at `at`.
    Clear {
        /// When.
        at: Instant,
        /// The epoch the answer continues with.
        floor: Epoch,
    },
}

/// What a [`RecordingSink`] saw, shared with the test.
#[derive(Debug, Clone, Default)]
pub struct SinkLog {
    events: Arc<Mutex<Vec<SinkEvent>>>,
}

impl SinkLog {
    /// Everything seen so far, in order.
    pub fn events(&self) -> Vec<SinkEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn push(&self, event: SinkEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }
}

/// A transport sink that takes every frame at once and logs it.
#[derive(Debug, Default)]
pub struct RecordingSink {
    log: SinkLog,
}

impl RecordingSink {
    /// A sink and the handle to its log.
    pub fn new() -> (Self, SinkLog) {
        let log = SinkLog::default();
        (RecordingSink { log: log.clone() }, log)
    }
}

/// RMS of `samples` in PCM16 units.
pub fn rms(samples: &[i16]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len() as f64).sqrt() as f32
}

impl CallSink for RecordingSink {
    /// # Cancel safety
    ///
    /// Cancel safe: it completes at once.
    async fn send_audio(&mut self, epoch: Epoch, frame: AudioFrame) -> Result<(), TransportClosed> {
        self.log.push(SinkEvent::Frame {
            at: tokio::time::Instant::now().into_std(),
            epoch,
            rms: rms(frame.samples()),
            len: frame.len(),
            rate_hz: frame.sample_rate_hz(),
        });
        Ok(())
    }

    async fn clear(&mut self, floor: Epoch) {
        self.log.push(SinkEvent::Clear {
            at: tokio::time::Instant::now().into_std(),
            floor,
        });
    }
}
