//! AudioIn: the caller's frames from the transport to the STT session, the
//! Smart Turn ring and the VAD; speech starts and stops to the turn driver.
//!
//! Per frame (20 ms, 16 kHz): push into the ring, queue its samples on the STT
//! session (never waits; a full session drops the frame and counts it), and
//! collect the samples into 32 ms VAD windows. Each window is scored (energy:
//! inline; Silero: submitted to the batched service, its outcome comes back
//! through a bounded queue) and fed to the sans-IO stop rule, whose events are
//! dated in audio time: audio time zero is the start of the first frame, i.e.
//! its arrival minus its duration. Nothing here allocates or logs per frame.
//!
//! Overload is delay: a window the VAD service refuses (its queue is full) is
//! held here, in order, and offered again every [`VAD_RETRY_DELAY`] until the
//! service takes it; windows after it wait behind it. Only when more than
//! [`VAD_HOLD_WINDOWS`] wait is the oldest dropped (counted in `vad_lost`), and
//! the windows after it keep their audio time.
//!
//! The edge's [`CallSource`] is read here directly: AudioIn is the route's
//! reader. Each frame comes with its arrival time, which dates the VAD's
//! decisions on it; controls go on to the driver with their time, in the
//! order they arrived among the frames. When the source ends (the caller hung
//! up), AudioIn tells the driver and returns.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use brisvox_core::CallerFrame;
use brisvox_models::smart_turn::SmartTurnRing;
use brisvox_models::vad::detector::{VadDetector, VadEvent, VadParams};
use brisvox_models::vad::service::{VadStream, WindowOutcome};
use brisvox_models::vad::silero::SileroRate;
use brisvox_providers::SttSender;
use tokio::sync::{mpsc, watch};

use super::inbox::DriverInput;
use super::{now, shutdown};
use crate::edge::{CallSource, Inbound};
use crate::gate::Gated;
use crate::models::VadSource;

/// Silero outcomes that may wait between the pool and AudioIn, in windows
/// (2 s of audio). The service's sink drops an outcome that finds it full, and
/// AudioIn counts the gap.
pub(crate) const VAD_OUTCOME_CAPACITY: usize = 64;

/// Samples in a 32 ms VAD window at 16 kHz.
const WINDOW_SAMPLES: usize = 512;

/// How long a window refused by the VAD service waits before it is offered again.
pub(crate) const VAD_RETRY_DELAY: Duration = Duration::from_millis(10);

/// Most refused windows held for a retry (about 1 s of audio); past it the
/// oldest is dropped.
pub(crate) const VAD_HOLD_WINDOWS: usize = 32;

/// Counters AudioIn shares with the call report.
#[derive(Debug, Default)]
pub(crate) struct AudioInStats {
    /// Frames read from the transport.
    pub(crate) frames_in: AtomicU64,
    /// Frames the STT session did not take.
    pub(crate) stt_dropped: AtomicU64,
    /// VAD windows without a probability (dropped after the hold, failed or lost).
    pub(crate) vad_lost: AtomicU64,
    /// VAD windows the service refused at first and took on a retry.
    pub(crate) vad_retried: AtomicU64,
}

/// How windows are scored.
enum Scorer {
    Energy {
        /// Mean square (of samples in [-1, 1]) from which a window is speech.
        speech_power: f32,
    },
    Silero {
        stream: VadStream,
        outcomes: mpsc::Receiver<WindowOutcome>,
        scratch: Box<[f32; WINDOW_SAMPLES]>,
        hold: Held,
    },
}

/// Windows the VAD service refused, waiting for a retry (grown only under
/// overload), and the audio-time correction for the ones dropped.
#[derive(Default)]
struct Held {
    windows: std::collections::VecDeque<[i16; WINDOW_SAMPLES]>,
    /// When to offer the oldest again.
    retry_at: Option<Instant>,
    /// Windows dropped so far before the stream seq in `gaps`' front.
    skew: u64,
    /// (first stream seq after a dropped window, windows dropped there).
    gaps: std::collections::VecDeque<(u64, u64)>,
}

impl Held {
    /// The audio-time window index of the stream's window `seq`.
    fn audio_seq(&mut self, seq: u64) -> u64 {
        while let Some(&(from, n)) = self.gaps.front()
            && from <= seq
        {
            self.skew += n;
            self.gaps.pop_front();
        }
        seq + self.skew
    }
}

/// The AudioIn actor.
pub(crate) struct AudioIn<S> {
    source: S,
    driver: mpsc::Sender<DriverInput>,
    stt: watch::Receiver<Option<SttSender>>,
    ring: Option<Arc<Mutex<SmartTurnRing>>>,
    scorer: Scorer,
    detector: VadDetector,
    window: [i16; WINDOW_SAMPLES],
    window_len: usize,
    windows: u64,
    origin: Option<Instant>,
    /// Whether falling hints go to the driver (early analysis is on).
    falling_hints: bool,
    stats: Arc<AudioInStats>,
    shutdown: watch::Receiver<bool>,
}

/// What AudioIn is built from.
pub(crate) struct AudioInParts<S> {
    pub(crate) source: S,
    pub(crate) driver: mpsc::Sender<DriverInput>,
    pub(crate) stt: watch::Receiver<Option<SttSender>>,
    pub(crate) ring: Option<Arc<Mutex<SmartTurnRing>>>,
    pub(crate) vad: VadSource,
    pub(crate) vad_params: VadParams,
    pub(crate) speech_dbfs: f32,
    /// Send the VAD's falling hints to the driver (early analysis).
    pub(crate) falling_hints: bool,
    pub(crate) stats: Arc<AudioInStats>,
    pub(crate) shutdown: watch::Receiver<bool>,
}

impl<S: CallSource> AudioIn<S> {
    /// Builds the actor (opens the call's VAD stream).
    pub(crate) fn new(parts: AudioInParts<S>) -> Self {
        let scorer = match parts.vad {
            VadSource::Energy => Scorer::Energy {
                speech_power: 10f32.powf(parts.speech_dbfs / 10.0),
            },
            VadSource::Silero(service) => {
                let (tx, outcomes) = mpsc::channel(VAD_OUTCOME_CAPACITY);
                let stream = service.open_stream(move |outcome| {
                    // A full queue loses this outcome; AudioIn sees the gap in seq.
                    let _ = tx.try_send(outcome);
                });
                Scorer::Silero {
                    stream,
                    outcomes,
                    scratch: Box::new([0.0; WINDOW_SAMPLES]),
                    hold: Held::default(),
                }
            }
        };
        AudioIn {
            source: parts.source,
            driver: parts.driver,
            stt: parts.stt,
            ring: parts.ring,
            scorer,
            detector: VadDetector::new(parts.vad_params, SileroRate::Hz16000),
            window: [0; WINDOW_SAMPLES],
            window_len: 0,
            windows: 0,
            origin: None,
            falling_hints: parts.falling_hints,
            stats: parts.stats,
            shutdown: parts.shutdown,
        }
    }

    /// Reads the transport until the caller hangs up or the call shuts down.
    pub(crate) async fn run(mut self) {
        // One wait for the shutdown signal for the whole call, not one per
        // frame: a new wait registers with the watch and a dropped one
        // unregisters, two locks per caller frame (3 % of the server's CPU
        // at 1000 calls, bench/results/framework-profile-2026-12-02.md).
        // Gated: polled only once the watch woke it, not at every frame.
        let mut signal = self.shutdown.clone();
        let mut down = Gated::new(shutdown(&mut signal));
        loop {
            let retry = retry_at(&self.scorer);
            tokio::select! {
                biased;
                () = &mut down => return,
                Some(outcome) = next_outcome(&mut self.scorer) => {
                    if !self.on_outcome(outcome).await {
                        return;
                    }
                }
                () = super::sleep_until(retry) => {
                    if !self.submit_held().await {
                        return;
                    }
                }
                inbound = self.source.recv() => match inbound {
                    Some(Inbound::Audio { frame, at }) => {
                        if !self.on_frame(&frame, at).await {
                            return;
                        }
                    }
                    Some(Inbound::Control { control, at }) => {
                        if self.driver.send(DriverInput::Control { control, at }).await.is_err() {
                            return;
                        }
                    }
                    None => {
                        let _ = self.driver.send(DriverInput::Hangup { at: now() }).await;
                        return;
                    }
                },
            }
        }
    }

    /// One caller frame that arrived at `arrived`. Returns false when the
    /// driver is gone.
    pub(super) async fn on_frame(&mut self, frame: &CallerFrame, arrived: Instant) -> bool {
        self.stats.frames_in.fetch_add(1, Ordering::Relaxed);
        if self.origin.is_none() {
            // The first frame's audio began one frame duration before it arrived.
            self.origin = Some(arrived.checked_sub(frame.duration()).unwrap_or(arrived));
        }
        if let Some(ring) = &self.ring {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(frame.samples());
        }
        let sent = match self.stt.borrow().as_ref() {
            Some(stt) => stt
                .send_samples(frame.samples(), frame.sample_rate_hz())
                .is_ok(),
            None => false,
        };
        if !sent {
            self.stats.stt_dropped.fetch_add(1, Ordering::Relaxed);
        }
        let mut samples = frame.samples();
        while !samples.is_empty() {
            let take = (WINDOW_SAMPLES - self.window_len).min(samples.len());
            self.window[self.window_len..self.window_len + take].copy_from_slice(&samples[..take]);
            self.window_len += take;
            samples = &samples[take..];
            if self.window_len == WINDOW_SAMPLES {
                self.window_len = 0;
                if !self.score_window(arrived).await {
                    return false;
                }
            }
        }
        true
    }

    /// Scores the full window, completed by a frame that arrived at
    /// `arrived`. Returns false when the driver is gone.
    async fn score_window(&mut self, arrived: Instant) -> bool {
        let seq = self.windows;
        self.windows += 1;
        match &mut self.scorer {
            Scorer::Energy { speech_power } => {
                let p = if mean_power(&self.window) >= *speech_power {
                    1.0
                } else {
                    0.0
                };
                self.on_probability(seq, p, arrived).await
            }
            Scorer::Silero { stream, hold, .. } => {
                if hold.windows.len() == VAD_HOLD_WINDOWS {
                    hold.windows.pop_front();
                    self.stats.vad_lost.fetch_add(1, Ordering::Relaxed);
                    record_gap(hold, stream.windows_submitted());
                }
                hold.windows.push_back(self.window);
                self.submit_held().await
            }
        }
    }

    /// Offers the held windows to the VAD service, oldest first, until it
    /// refuses one (then retries after [`VAD_RETRY_DELAY`]). Returns false when
    /// the driver is gone.
    async fn submit_held(&mut self) -> bool {
        let Scorer::Silero {
            stream,
            scratch,
            hold,
            ..
        } = &mut self.scorer
        else {
            return true;
        };
        let retrying = hold.retry_at.take().is_some();
        while let Some(window) = hold.windows.front() {
            for (dst, &s) in scratch.iter_mut().zip(window.iter()) {
                *dst = f32::from(s) / 32768.0;
            }
            match stream.submit(&scratch[..]) {
                Ok(_) => {
                    hold.windows.pop_front();
                    if retrying {
                        self.stats.vad_retried.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(brisvox_models::vad::VadError::QueueFull { .. }) => {
                    hold.retry_at = Some(now() + VAD_RETRY_DELAY);
                    break;
                }
                Err(_) => {
                    // Not an overload (the pool is gone): the window cannot run.
                    hold.windows.pop_front();
                    self.stats.vad_lost.fetch_add(1, Ordering::Relaxed);
                    record_gap(hold, stream.windows_submitted());
                }
            }
        }
        // An inline pool has scored them already: handle them now, in order.
        while let Some(outcome) = try_outcome(&mut self.scorer) {
            if !self.on_outcome(outcome).await {
                return false;
            }
        }
        true
    }

    /// A Silero outcome (decided now, when it came back from the pool).
    /// Returns false when the driver is gone.
    async fn on_outcome(&mut self, outcome: WindowOutcome) -> bool {
        let seq = match &mut self.scorer {
            Scorer::Silero { hold, .. } => hold.audio_seq(outcome.seq),
            Scorer::Energy { .. } => outcome.seq,
        };
        match outcome.probability {
            Ok(p) => self.on_probability(seq, p, now()).await,
            Err(_) => {
                self.stats.vad_lost.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
    }

    /// Runs the stop rule on one window whose probability was known at
    /// `decided`. Returns false when the driver is gone.
    async fn on_probability(&mut self, seq: u64, probability: f32, decided: Instant) -> bool {
        let Some(event) = self.detector.handle_seq(seq, probability) else {
            return true;
        };
        let origin = self.origin.unwrap_or(decided);
        let input = match event {
            VadEvent::SpeechStart { at, decided_at } => {
                if let Some(ring) = &self.ring {
                    let delay = decided_at.saturating_sub(at);
                    ring.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .mark_speech_start(millis(delay));
                }
                DriverInput::SpeechStart {
                    at: origin + at,
                    decided,
                }
            }
            VadEvent::SpeechEnd { speech_end_at, .. } => DriverInput::SpeechEnd {
                speech_end: origin + speech_end_at,
                decided,
            },
            VadEvent::Falling { at, .. } if self.falling_hints => DriverInput::SpeechFalling {
                speech_end: origin + at,
            },
            VadEvent::Falling { .. } => return true,
        };
        self.driver.send(input).await.is_ok()
    }
}

/// Whole milliseconds of `d`, saturating.
fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

/// Mean square of the window, samples scaled to [-1, 1].
///
/// The squares are summed as integers, which vectorises (a float sum must
/// keep its order and does not); the sum is exact either way (each square
/// is below 2^31 and a window's sum far below 2^53), so this gives the same
/// bits as summing `(s / 32768)^2` in `f64`.
fn mean_power(window: &[i16]) -> f32 {
    let sum: u64 = window
        .iter()
        .map(|&s| u64::from(s.unsigned_abs()) * u64::from(s.unsigned_abs()))
        .sum();
    let sum = sum as f64 / (1u64 << 30) as f64;
    (sum / window.len().max(1) as f64) as f32
}

/// Notes a window dropped before the stream's window `next_seq`.
fn record_gap(hold: &mut Held, next_seq: u64) {
    match hold.gaps.back_mut() {
        Some((from, n)) if *from == next_seq => *n += 1,
        _ => hold.gaps.push_back((next_seq, 1)),
    }
}

/// When the held windows are offered again; `None` when none wait.
fn retry_at(scorer: &Scorer) -> Option<Instant> {
    match scorer {
        Scorer::Silero { hold, .. } => hold.retry_at,
        Scorer::Energy { .. } => None,
    }
}

/// The next Silero outcome; never resolves for the energy VAD.
///
/// # Cancel safety
///
/// Cancel safe: an outcome is taken only when this returns it.
async fn next_outcome(scorer: &mut Scorer) -> Option<WindowOutcome> {
    match scorer {
        Scorer::Silero { outcomes, .. } => outcomes.recv().await,
        Scorer::Energy { .. } => std::future::pending().await,
    }
}

fn try_outcome(scorer: &mut Scorer) -> Option<WindowOutcome> {
    match scorer {
        Scorer::Silero { outcomes, .. } => outcomes.try_recv().ok(),
        Scorer::Energy { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_power_of_full_scale_square_is_one() {
        let w = [i16::MIN; WINDOW_SAMPLES];
        assert!((mean_power(&w) - 1.0).abs() < 1e-6);
        assert_eq!(mean_power(&[0; WINDOW_SAMPLES]), 0.0);
    }

    #[test]
    fn mean_power_has_the_bits_of_the_float_sum() {
        fn float_sum(window: &[i16]) -> f32 {
            let sum: f64 = window
                .iter()
                .map(|&s| {
                    let x = f64::from(s) / 32768.0;
                    x * x
                })
                .sum();
            (sum / window.len().max(1) as f64) as f32
        }
        let mut x: u32 = 0x9E37_79B9;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as i16
        };
        let windows: Vec<Vec<i16>> = vec![
            vec![i16::MIN; WINDOW_SAMPLES],
            vec![i16::MAX; WINDOW_SAMPLES],
            vec![1; 7],
            (0..WINDOW_SAMPLES).map(|_| next()).collect(),
            (0..WINDOW_SAMPLES).map(|_| next() / 300).collect(),
            (0..WINDOW_SAMPLES).map(|_| next() / 20).collect(),
        ];
        for w in &windows {
            assert_eq!(mean_power(w).to_bits(), float_sum(w).to_bits(), "{w:?}");
        }
        assert_eq!(mean_power(&[]), 0.0);
    }
}
