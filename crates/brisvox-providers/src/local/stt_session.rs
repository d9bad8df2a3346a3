//! One call's local STT session: the utterance buffer, recognition while the
//! caller speaks (partials), and the final at each Finalize.
//!
//! # Partials
//!
//! While the caller speaks, the session hands the utterance so far to a
//! recognition thread (a *partial*) every [`LocalSttOptions::partial_every_ms`]
//! of new audio and when the caller pauses (the last
//! [`LocalSttOptions::pause_ms`] of audio are quiet after speech; a pause
//! cancels a running cadence partial that started before it), but only when a
//! recognition thread is idle and nothing waits for one, so partials never
//! hold up another call's final. A partial's text is sent as an
//! [`SttEvent::Interim`]. Each recognition gets the last partial's tokens as
//! its draft: the recognizer keeps the ones it confirms on the longer audio
//! and decodes only the rest.
//!
//! # The final
//!
//! At Finalize (the VAD stop, 100-130 ms after the speech ended), when the
//! last partial covered every sample that is not quiet, its text is the final
//! at once: the audio after it is the silence the VAD waited for. A running
//! partial that covers all the speech is waited for; one that does not is
//! cancelled (it stops within a decoder step). Otherwise
//! the whole utterance is recognised, with the last partial's tokens as the
//! draft, so mostly only its end is decoded.
//!
//! "Quiet" is energy: 20 ms blocks at least 30 dB below the utterance's
//! loudest block (and below -40 dBFS), so breath and line noise between words
//! count as quiet and speech does not.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;

use brisvox_audio::StreamResampler;
use brisvox_core::gate::Gated;
use tokio::sync::oneshot;

use super::stt::{Answer, Counters, Job, LocalSttOptions, RECOGNIZER_RATE_HZ, Recognized};
use crate::stt::{SttBackend, SttInput};
use crate::{ProviderError, SttEvent};

/// Samples per energy block (20 ms at 16 kHz).
const BLOCK: usize = RECOGNIZER_RATE_HZ as usize / 50;
/// A quiet block is this far below the loudest one (30 dB, in amplitude).
const QUIET_BELOW_PEAK: f32 = 0.031_6;
/// ... and below this RMS (-40 dBFS), so a quiet recording's pauses still count.
const QUIET_CEILING: f32 = 0.01;
/// The shortest utterance a partial is run on.
const MIN_PARTIAL_SAMPLES: usize = RECOGNIZER_RATE_HZ as usize / 2;

/// The utterance being spoken, at [`RECOGNIZER_RATE_HZ`], with each 20 ms
/// block's RMS.
#[derive(Debug)]
pub(super) struct Utterance {
    samples: Vec<i16>,
    cap: usize,
    truncated: bool,
    /// Samples dropped from the start since the utterance began (the cap).
    dropped: usize,
    /// RMS of each whole block of `samples` (in -1..1 units), oldest first.
    block_rms: Vec<f32>,
    peak_rms: f32,
    /// Converts frames not at 16 kHz; one per input rate, flushed at each end.
    resampler: Option<StreamResampler>,
    scratch: Vec<i16>,
}

impl Utterance {
    pub(super) fn new(cap: usize) -> Self {
        Utterance {
            samples: Vec::new(),
            cap,
            truncated: false,
            dropped: 0,
            block_rms: Vec::new(),
            peak_rms: 0.0,
            resampler: None,
            scratch: Vec::new(),
        }
    }

    /// Appends a frame's `samples` at `rate` Hz, resampled to 16 kHz if needed.
    pub(super) fn push_audio(&mut self, samples: &[i16], rate: u32) -> Result<(), ProviderError> {
        if rate == RECOGNIZER_RATE_HZ {
            self.push(samples);
            return Ok(());
        }
        if self.resampler.as_ref().map(StreamResampler::in_rate_hz) != Some(rate) {
            self.flush_resampler();
            let resampler = StreamResampler::new(rate, RECOGNIZER_RATE_HZ).map_err(|_| {
                ProviderError::Protocol {
                    reason: format!("cannot resample {rate} Hz audio to 16 kHz").into(),
                }
            })?;
            self.resampler = Some(resampler);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        if let Some(resampler) = &mut self.resampler {
            resampler.process_into(samples, &mut scratch);
        }
        self.push(&scratch);
        scratch.clear();
        self.scratch = scratch;
        Ok(())
    }

    fn flush_resampler(&mut self) {
        let mut scratch = std::mem::take(&mut self.scratch);
        if let Some(resampler) = &mut self.resampler {
            resampler.flush(&mut scratch);
        }
        self.push(&scratch);
        scratch.clear();
        self.scratch = scratch;
    }

    pub(super) fn push(&mut self, samples: &[i16]) {
        self.samples.extend_from_slice(samples);
        let over = self.samples.len().saturating_sub(self.cap);
        if over > 0 {
            self.samples.drain(..over);
            self.dropped += over;
            if !self.truncated {
                self.truncated = true;
                tracing::warn!("utterance longer than max_utterance_ms; dropping its start");
            }
        }
        self.measure_blocks();
    }

    /// RMS of the blocks completed since the last push (positions counted from
    /// the utterance's first sample, dropped ones included).
    fn measure_blocks(&mut self) {
        let total = self.dropped + self.samples.len();
        while (self.block_rms.len() + 1) * BLOCK <= total {
            let start = self.block_rms.len() * BLOCK;
            let rms = match start.checked_sub(self.dropped) {
                Some(at) => rms(&self.samples[at..at + BLOCK]),
                None => 0.0,
            };
            self.peak_rms = self.peak_rms.max(rms);
            self.block_rms.push(rms);
        }
    }

    /// Samples since the utterance began (dropped ones included).
    pub(super) fn position(&self) -> usize {
        self.dropped + self.samples.len()
    }

    fn quiet_threshold(&self) -> f32 {
        (self.peak_rms * QUIET_BELOW_PEAK).min(QUIET_CEILING)
    }

    /// Whether every whole block from sample position `from` on is quiet, and
    /// speech was heard at all. A block started before `from` counts.
    pub(super) fn quiet_since(&self, from: usize) -> bool {
        let threshold = self.quiet_threshold();
        self.peak_rms > QUIET_CEILING
            && self.block_rms[(from / BLOCK).min(self.block_rms.len())..]
                .iter()
                .all(|&r| r <= threshold)
    }

    /// Whether the caller is pausing: the last `pause` samples' blocks are
    /// quiet, and a block after `since` was not.
    pub(super) fn pausing_after(&self, since: usize, pause: usize) -> bool {
        let blocks = pause.div_ceil(BLOCK).max(1);
        let n = self.block_rms.len();
        if n < blocks + 1 {
            return false;
        }
        let threshold = self.quiet_threshold();
        let tail_quiet = self.block_rms[n - blocks..].iter().all(|&r| r <= threshold);
        let first = (since / BLOCK).min(n - blocks);
        let speech_since = self.block_rms[first..n - blocks]
            .iter()
            .any(|&r| r > threshold);
        tail_quiet && speech_since
    }

    /// The utterance so far, scaled to -1..1 (for a partial).
    pub(super) fn snapshot(&self) -> Vec<f32> {
        to_f32(&self.samples)
    }

    /// The whole utterance (the resampler's tail included); starts the next.
    /// Returns the samples and whether they lost their start.
    pub(super) fn take(&mut self) -> (Vec<i16>, bool) {
        self.flush_resampler();
        let truncated = std::mem::replace(&mut self.truncated, false);
        self.dropped = 0;
        self.block_rms.clear();
        self.peak_rms = 0.0;
        (std::mem::take(&mut self.samples), truncated)
    }

    /// Whether the start was dropped.
    pub(super) fn truncated(&self) -> bool {
        self.truncated
    }
}

fn rms(block: &[i16]) -> f32 {
    let sum: f64 = block.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    ((sum / block.len().max(1) as f64).sqrt() / 32_768.0) as f32
}

/// Scales PCM16 to `-1.0..1.0`.
pub(super) fn to_f32(samples: &[i16]) -> Vec<f32> {
    samples.iter().map(|&s| f32::from(s) / 32_768.0).collect()
}

/// What the session's running job is.
#[derive(Debug, Clone)]
enum Running {
    /// A partial covering the utterance up to this sample position.
    Partial {
        covered: usize,
        cancel: Arc<AtomicBool>,
        /// Started at a pause (continuing the agreed words) rather than by the cadence.
        at_pause: bool,
    },
    /// The final of the oldest finalized utterance.
    Final,
}

/// A finalized utterance waiting for its final.
struct Finalized {
    samples: Vec<i16>,
    /// A partial's transcript that covered every sample but quiet ones: the final.
    reusable: Option<Recognized>,
    /// The draft of its recognition (the last partial's tokens).
    draft: Vec<u32>,
    /// A partial of this utterance was running at the Finalize (the session
    /// waits for it): `Some(true)` when it covers every sample but quiet ones.
    running_partial: Option<bool>,
}

pub(super) struct SessionTask {
    pub(super) backend: SttBackend,
    pub(super) jobs: std_mpsc::SyncSender<Job>,
    pub(super) counters: Arc<Counters>,
    pub(super) options: LocalSttOptions,
    pub(super) threads: usize,
    pub(super) utterance: Utterance,
    waiting: VecDeque<Finalized>,
    running: Option<(Running, oneshot::Receiver<Answer>)>,
    /// The newest partial: its transcript and the position it covered.
    last_partial: Option<(Recognized, usize)>,
    /// Where the last partial started (sample position).
    last_partial_at: usize,
    closing: bool,
}

/// Waits for the running job, or forever when there is none.
///
/// # Cancel safety
///
/// Cancel safe: the receiver stays in `slot` until it completes.
async fn running(slot: &mut Option<(Running, oneshot::Receiver<Answer>)>) -> Option<Answer> {
    match slot {
        Some((_, reply)) => reply.await.ok(),
        None => std::future::pending().await,
    }
}

enum Step {
    Input(Option<SttInput>),
    /// `None`: the thread dropped the job without answering.
    Answered(Option<Answer>),
}

impl SessionTask {
    pub(super) fn new(
        backend: SttBackend,
        jobs: std_mpsc::SyncSender<Job>,
        counters: Arc<Counters>,
        options: LocalSttOptions,
        threads: usize,
    ) -> Self {
        let cap = u64::from(options.max_utterance_ms) * u64::from(RECOGNIZER_RATE_HZ) / 1000;
        SessionTask {
            backend,
            jobs,
            counters,
            threads,
            utterance: Utterance::new(usize::try_from(cap).unwrap_or(usize::MAX)),
            options,
            waiting: VecDeque::new(),
            running: None,
            last_partial: None,
            last_partial_at: 0,
            closing: false,
        }
    }

    pub(super) async fn run(mut self) {
        // A second handle on the event queue, to notice the engine leaving
        // while `backend` is borrowed by the receive.
        let events = self.backend.events.clone();
        // Polled only once it woke, not at every frame (see `brisvox_core::gate`).
        let mut gone = Gated::new(events.closed());
        loop {
            if self.closing && self.running.is_none() && self.waiting.is_empty() {
                break;
            }
            let step = tokio::select! {
                input = self.backend.recv(), if !self.closing => Step::Input(input),
                answer = running(&mut self.running) => Step::Answered(answer),
                // The engine dropped the events: the call is over. Dropping the
                // task drops the reply slots, so the threads skip its jobs.
                () = &mut gone => return,
            };
            let event = match step {
                Step::Input(Some(SttInput::Audio(frame))) => self
                    .utterance
                    .push_audio(frame.samples(), frame.sample_rate_hz())
                    .err()
                    .map(SttEvent::Error),
                Step::Input(Some(SttInput::Finalize)) => {
                    self.finalize();
                    None
                }
                Step::Input(Some(SttInput::Close) | None) => {
                    self.closing = true;
                    None
                }
                Step::Answered(answer) => self.on_answer(answer),
            };
            if let Some(event) = event
                && self.backend.events.send(event).await.is_err()
            {
                return;
            }
            if !self.start_next().await {
                return;
            }
            self.maybe_start_partial();
        }
        let _ = self.backend.events.send(SttEvent::Closed).await;
    }

    /// The VAD stop: the utterance so far waits for its final.
    fn finalize(&mut self) {
        Counters::bump(&self.counters.utterances);
        let truncated = self.utterance.truncated();
        let usable = |covered: usize| !truncated && self.utterance.quiet_since(covered);
        let reusable = self
            .last_partial
            .as_ref()
            .filter(|(_, covered)| usable(*covered))
            .map(|(t, _)| t.clone());
        // A partial runs only while nothing waits, so a running one is this
        // utterance's.
        let running_partial = match &self.running {
            Some((
                Running::Partial {
                    covered, cancel, ..
                },
                _,
            )) => {
                let usable = usable(*covered);
                if !usable {
                    // Speech came after it: the final needs the thread now.
                    cancel.store(true, Ordering::Relaxed);
                }
                Some(usable)
            }
            _ => None,
        };
        let draft = self.draft();
        let (samples, truncated) = self.utterance.take();
        if truncated {
            Counters::bump(&self.counters.truncated);
        }
        self.waiting.push_back(Finalized {
            samples,
            reusable,
            draft,
            running_partial,
        });
        self.last_partial = None;
        self.last_partial_at = 0;
    }

    /// The draft of the next recognition: the last partial's tokens.
    fn draft(&self) -> Vec<u32> {
        self.last_partial
            .as_ref()
            .map(|(t, _)| t.tokens.clone())
            .unwrap_or_default()
    }

    fn on_answer(&mut self, answer: Option<Answer>) -> Option<SttEvent> {
        let (kind, _) = self.running.take()?;
        match kind {
            Running::Final => {
                self.waiting.pop_front();
                Some(answer_event(answer))
            }
            Running::Partial { covered, .. } => self.on_partial(answer, covered),
        }
    }

    /// A partial finished: for the utterance still being spoken, or for the
    /// oldest finalized one (which waited for it).
    fn on_partial(&mut self, answer: Option<Answer>, covered: usize) -> Option<SttEvent> {
        if let Some(first) = self.waiting.front_mut()
            && let Some(usable) = first.running_partial.take()
        {
            if usable && let Some(Ok(transcript)) = answer {
                first.reusable = Some(transcript);
            }
            return None;
        }
        let Some(Ok(transcript)) = answer else {
            return None;
        };
        let text = transcript.text.trim().to_owned();
        self.last_partial = Some((transcript, covered));
        (!text.is_empty()).then_some(SttEvent::Interim { text })
    }

    /// Answers or starts the oldest finalized utterance when nothing runs.
    /// Returns `false` when the engine is gone.
    async fn start_next(&mut self) -> bool {
        while self.running.is_none()
            && let Some(first) = self.waiting.front_mut()
        {
            let event = if let Some(transcript) = first.reusable.take() {
                Counters::bump(&self.counters.from_partial);
                final_event(transcript.text.trim().to_owned())
            } else if first.samples.is_empty() {
                Counters::bump(&self.counters.empty);
                final_event(String::new())
            } else {
                let job_samples = to_f32(&first.samples);
                let draft = std::mem::take(&mut first.draft);
                if !draft.is_empty() {
                    Counters::bump(&self.counters.with_draft);
                }
                match self.submit(job_samples, draft, None) {
                    Ok(reply) => {
                        self.running = Some((Running::Final, reply));
                        return true;
                    }
                    Err(event) => event,
                }
            };
            self.waiting.pop_front();
            if self.backend.events.send(event).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Starts a partial when the caller pauses or enough new audio came, and
    /// a thread is free, with the last partial's tokens as its draft. A pause
    /// cancels a running cadence partial that started before it: the pause's
    /// partial is the one the final may use.
    fn maybe_start_partial(&mut self) {
        if !self.options.partials
            || self.closing
            || !self.waiting.is_empty()
            || self.utterance.truncated()
        {
            return;
        }
        let position = self.utterance.position();
        let since = self.last_partial_at;
        let ms = |v: u32| v as usize * RECOGNIZER_RATE_HZ as usize / 1000;
        let pausing = self
            .utterance
            .pausing_after(since, ms(self.options.pause_ms));
        if let Some((
            Running::Partial {
                at_pause: false,
                cancel,
                ..
            },
            _,
        )) = &self.running
            && pausing
        {
            cancel.store(true, Ordering::Relaxed);
        }
        if self.running.is_some() || position < MIN_PARTIAL_SAMPLES || position <= since {
            return;
        }
        let cadence = position - since >= ms(self.options.partial_every_ms);
        if !(pausing || cadence) || !self.counters.idle_thread(self.threads) {
            return;
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let draft = self.draft();
        if let Ok(reply) = self.submit(self.utterance.snapshot(), draft, Some(cancel.clone())) {
            Counters::bump(&self.counters.partials);
            let partial = Running::Partial {
                covered: position,
                cancel,
                at_pause: pausing,
            };
            self.running = Some((partial, reply));
            self.last_partial_at = position;
        }
    }

    /// Queues a job (a partial with its cancel flag); a full or closed queue
    /// is the event that answers instead.
    fn submit(
        &mut self,
        samples: Vec<f32>,
        draft: Vec<u32>,
        partial: Option<Arc<AtomicBool>>,
    ) -> Result<oneshot::Receiver<Answer>, SttEvent> {
        let (reply, answer) = oneshot::channel();
        let is_partial = partial.is_some();
        let job = Job {
            samples,
            draft,
            cancel: partial.unwrap_or_default(),
            partial: is_partial,
            reply,
        };
        match self.jobs.try_send(job) {
            Ok(()) => {
                self.counters.queued_add(1);
                Ok(answer)
            }
            Err(std_mpsc::TrySendError::Full(_)) => {
                if !is_partial {
                    Counters::bump(&self.counters.busy);
                    tracing::warn!("local recognizer busy: utterance refused");
                }
                Err(SttEvent::Error(ProviderError::server(
                    503,
                    "local recognizer busy",
                )))
            }
            Err(std_mpsc::TrySendError::Disconnected(_)) => Err(SttEvent::Error(
                ProviderError::disconnected("the local recognition threads are gone"),
            )),
        }
    }
}

fn final_event(text: String) -> SttEvent {
    SttEvent::Final {
        text,
        confidence: None,
        from_finalize: true,
    }
}

fn answer_event(answer: Option<Answer>) -> SttEvent {
    match answer {
        Some(Ok(transcript)) => final_event(transcript.text.trim().to_owned()),
        Some(Err(error)) => {
            tracing::warn!(%error, "local transcription failed");
            SttEvent::Error(ProviderError::Server {
                status: 500,
                reason: error.to_string().into(),
            })
        }
        None => SttEvent::Error(ProviderError::disconnected(
            "a local recognition thread stopped",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_khz_frames_are_kept_as_they_are() {
        let mut u = Utterance::new(16_000);
        let samples: Vec<i16> = (0..320).map(|i| i as i16).collect();
        u.push_audio(&samples, 16_000).unwrap();
        u.push_audio(&samples, 16_000).unwrap();
        let (got, truncated) = u.take();
        assert!(!truncated);
        assert_eq!(got.len(), 640);
        assert_eq!(&got[..320], &samples[..]);
    }

    #[test]
    fn eight_khz_frames_come_out_at_twice_the_length() {
        for frames in [1usize, 7, 50] {
            let mut u = Utterance::new(16_000 * 30);
            let tone: Vec<i16> = (0..160)
                .map(|i| ((i as f32 * 0.3).sin() * 8000.0) as i16)
                .collect();
            for _ in 0..frames {
                u.push_audio(&tone, 8_000).unwrap();
            }
            let (got, _) = u.take();
            let expected = frames * 320;
            // The flush adds the filter's delay (a few ms) and nothing is lost.
            assert!(got.len() >= expected, "{} < {expected}", got.len());
            assert!(
                got.len() <= expected + 16_000 / 10,
                "{} frames: {}",
                frames,
                got.len()
            );
            // A second utterance starts from nothing.
            let (next, _) = u.take();
            assert!(next.is_empty());
        }
    }

    #[test]
    fn the_cap_keeps_the_end_and_reports_truncation_once_per_utterance() {
        let mut u = Utterance::new(1_000);
        for i in 0..10i16 {
            u.push(&[i; 320]);
        }
        assert_eq!(u.position(), 3_200);
        let (got, truncated) = u.take();
        assert!(truncated);
        assert_eq!(got.len(), 1_000);
        assert_eq!(*got.last().unwrap(), 9);
        u.push(&[1; 10]);
        assert_eq!(u.take(), (vec![1; 10], false));
    }

    #[test]
    fn samples_scale_to_unit_range() {
        assert_eq!(to_f32(&[0, 16_384, -32_768]), vec![0.0, 0.5, -1.0]);
    }

    #[test]
    fn a_pause_is_quiet_blocks_after_speech_and_quiet_since_needs_speech_first() {
        let mut u = Utterance::new(16_000 * 30);
        u.push(&[0; 3 * BLOCK]);
        assert!(!u.quiet_since(0), "no speech yet");
        u.push(&[8_000; 10 * BLOCK]);
        assert!(!u.pausing_after(0, 60 * 16));
        u.push(&[100; 3 * BLOCK]); // -50 dBFS: quiet next to 8000
        assert!(u.pausing_after(0, 60 * 16));
        assert!(
            !u.pausing_after(13 * BLOCK, 60 * 16),
            "no speech after that point"
        );
        assert!(u.quiet_since(13 * BLOCK));
        assert!(!u.quiet_since(12 * BLOCK));
        u.push(&[3_000; BLOCK]);
        assert!(!u.quiet_since(13 * BLOCK), "speech again");
    }
}
