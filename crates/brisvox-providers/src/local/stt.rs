//! Local speech recognition at the VAD stop, with no key and no network:
//! [`LocalStt`], an [`SttProvider`] over any [`Recognizer`].
//!
//! A session buffers the caller's audio of the current utterance at 16 kHz
//! ([`RECOGNIZER_RATE_HZ`]; frames at another rate, such as 8 kHz telephone
//! audio, are resampled as they arrive). At [`SttSender::finalize`] (the VAD
//! stop) the utterance is handed to a recognition thread and its text comes
//! back as one [`SttEvent::Final`] with `from_finalize: true`; the buffer then
//! starts over. There are no interims. An empty utterance is answered with an
//! empty final without running the recognizer.
//!
//! # Threads
//!
//! Recognition is blocking CPU work of a second or more, so it never runs on a
//! tokio worker: the provider owns [`LocalSttOptions::threads`] OS threads
//! (named `brisvox-stt-local`) that share one recognizer (one model in memory
//! for every call) and take utterances from one bounded queue of
//! [`LocalSttOptions::queue_capacity`] utterances. Overflow policy: reject the
//! newest; the session answers that utterance with a retryable
//! [`ProviderError::Server`] (503, "local recognizer busy") and goes on. The
//! threads end when the provider and every session are gone.
//!
//! A session sends one utterance at a time, in order, while it keeps buffering
//! the next. A recognizer failure (or panic) is answered with
//! [`SttEvent::Error`] in place of that utterance's final; the session goes on.
//! There is no deadline on a recognition: the engine's own final timeout ends
//! the turn if a final is late.
//!
//! # Limits and cancellation
//!
//! An utterance holds at most [`LocalSttOptions::max_utterance_ms`] of audio;
//! overflow policy: drop the oldest (the end of an utterance is what the turn
//! depends on), logged once per utterance and counted. A session whose events
//! are dropped (the call ended) stops at once; its utterances still waiting in
//! the queue are skipped by the threads (one already being recognized runs to
//! its end, since a model run cannot be interrupted). `Close` answers the
//! finalized utterances first, then sends [`SttEvent::Closed`]; audio not yet
//! finalized is dropped.
//!
//! [`SttSender::finalize`]: crate::SttSender::finalize

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc as std_mpsc};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use brisvox_audio::StreamResampler;
use brisvox_core::AudioFrame;
use tokio::sync::oneshot;

use crate::stt::{SttBackend, SttInput};
use crate::{BoxFuture, ProviderError, SttConfig, SttEvent, SttProvider, SttSession};

/// The rate a [`Recognizer`] is given its audio at, in Hz.
pub const RECOGNIZER_RATE_HZ: u32 = 16_000;

/// The cargo feature of `brisvox-providers` (and `brisvox-server`) that builds
/// the Whisper recognizer.
pub const LOCAL_STT_FEATURE: &str = "local-stt";

/// The command that builds the server with [`LOCAL_STT_FEATURE`] and runs it.
pub const LOCAL_STT_RUN_COMMAND: &str = "scripts/run.sh";

/// The Whisper model's folder inside the models directory (written by
/// `scripts/fetch-models.sh`).
pub const WHISPER_MODEL_DIR: &str = "whisper-tiny.en";

/// The files a Whisper model folder must hold (CTranslate2 model, its
/// tokenizer, and the feature extractor's settings).
pub const WHISPER_MODEL_FILES: [&str; 4] = [
    "model.bin",
    "config.json",
    "tokenizer.json",
    "preprocessor_config.json",
];

/// A speech recognizer for whole utterances. Blocking: it is only ever called
/// on the provider's recognition threads.
pub trait Recognizer: Send + Sync + 'static {
    /// The text of one utterance: mono samples at [`RECOGNIZER_RATE_HZ`],
    /// scaled to `-1.0..=1.0`, never empty.
    fn transcribe(&self, samples: &[f32]) -> Result<String, RecognizerError>;

    /// Whether the recognizer understands `language` (a BCP-47 tag, `en`).
    fn supports_language(&self, language: &str) -> bool {
        let _ = language;
        true
    }
}

/// Why a recognizer could not transcribe an utterance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("local recognizer failed: {reason}")]
pub struct RecognizerError {
    /// What failed (no transcript in it).
    pub reason: String,
}

impl RecognizerError {
    /// An error with `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        RecognizerError {
            reason: reason.into(),
        }
    }
}

/// Why a local STT provider could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalSttError {
    /// The model folder lacks files.
    #[error(
        "the local STT model in {dir} is incomplete (missing {missing}): run scripts/fetch-models.sh"
    )]
    ModelMissing {
        /// The folder looked in.
        dir: String,
        /// The missing files, comma-separated.
        missing: String,
    },
    /// The model files are there but could not be loaded.
    #[error("the local STT model in {dir} could not be loaded: {reason}")]
    Load {
        /// The folder.
        dir: String,
        /// The loader's message.
        reason: String,
    },
    /// This build has no local recognizer.
    #[error(
        "this brisvox was built without local speech recognition: build it with the cargo feature `{LOCAL_STT_FEATURE}` (`{LOCAL_STT_RUN_COMMAND}` does)"
    )]
    NotBuilt,
    /// An option is out of range.
    #[error("local STT option {option}: {reason}")]
    BadOption {
        /// The option's name.
        option: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A recognition thread could not be started.
    #[error("cannot start a local STT thread: {reason}")]
    Spawn {
        /// The OS error.
        reason: String,
    },
}

/// Checks that `dir` holds every file of [`WHISPER_MODEL_FILES`].
pub fn check_whisper_model_dir(dir: &Path) -> Result<(), LocalSttError> {
    let missing: Vec<&str> = WHISPER_MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(LocalSttError::ModelMissing {
            dir: dir.display().to_string(),
            missing: missing.join(", "),
        })
    }
}

/// Settings of a [`LocalStt`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSttOptions {
    /// Longest utterance kept, in ms (older audio is dropped).
    pub max_utterance_ms: u32,
    /// Recognition threads, each running one utterance at a time.
    pub threads: usize,
    /// Utterances waiting for a thread, over every session.
    pub queue_capacity: usize,
}

impl Default for LocalSttOptions {
    /// 30 s utterances (Whisper's window), one thread, eight waiting.
    fn default() -> Self {
        LocalSttOptions {
            max_utterance_ms: 30_000,
            threads: 1,
            queue_capacity: 8,
        }
    }
}

/// What a [`LocalStt`] has done so far, over every session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSttStats {
    /// Utterances finalized (every one is answered by a final or an error).
    pub utterances: u64,
    /// Utterances answered with an empty final without recognition.
    pub empty: u64,
    /// Utterances the recognizer transcribed.
    pub recognized: u64,
    /// Utterances the recognizer failed on (errors and panics).
    pub failed: u64,
    /// Utterances refused because the queue was full.
    pub busy: u64,
    /// Utterances skipped because their session was gone before a thread took them.
    pub skipped: u64,
    /// Utterances that reached [`LocalSttOptions::max_utterance_ms`] and lost their start.
    pub truncated: u64,
    /// Time spent in the recognizer, summed, in µs.
    pub recognize_us_total: u64,
    /// The longest recognition, in µs.
    pub recognize_us_max: u64,
}

#[derive(Debug, Default)]
struct Counters {
    utterances: AtomicU64,
    empty: AtomicU64,
    recognized: AtomicU64,
    failed: AtomicU64,
    busy: AtomicU64,
    skipped: AtomicU64,
    truncated: AtomicU64,
    recognize_us_total: AtomicU64,
    recognize_us_max: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> LocalSttStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LocalSttStats {
            utterances: get(&self.utterances),
            empty: get(&self.empty),
            recognized: get(&self.recognized),
            failed: get(&self.failed),
            busy: get(&self.busy),
            skipped: get(&self.skipped),
            truncated: get(&self.truncated),
            recognize_us_total: get(&self.recognize_us_total),
            recognize_us_max: get(&self.recognize_us_max),
        }
    }

    fn record_time(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.recognize_us_total.fetch_add(us, Ordering::Relaxed);
        self.recognize_us_max.fetch_max(us, Ordering::Relaxed);
    }
}

type Answer = Result<String, RecognizerError>;

/// One utterance for a recognition thread.
struct Job {
    samples: Vec<f32>,
    reply: oneshot::Sender<Answer>,
}

/// The recognition threads' shared inbox.
type JobInbox = Arc<Mutex<std_mpsc::Receiver<Job>>>;

fn lock_inbox(inbox: &Mutex<std_mpsc::Receiver<Job>>) -> MutexGuard<'_, std_mpsc::Receiver<Job>> {
    // Poison-proof: the receiver is valid after any panic (recognizer panics
    // are caught before they reach the lock anyway).
    inbox.lock().unwrap_or_else(|p| p.into_inner())
}

/// Speech recognition on the provider's own threads, as an [`SttProvider`].
/// Cheap to clone; clones share the threads, the queue and the stats.
#[derive(Clone)]
pub struct LocalStt {
    jobs: std_mpsc::SyncSender<Job>,
    recognizer: Arc<dyn Recognizer>,
    counters: Arc<Counters>,
    options: LocalSttOptions,
}

impl std::fmt::Debug for LocalStt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStt")
            .field("options", &self.options)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl LocalStt {
    /// Starts the recognition threads around `recognizer`.
    pub fn new(
        recognizer: Arc<dyn Recognizer>,
        options: LocalSttOptions,
    ) -> Result<Self, LocalSttError> {
        if options.threads == 0 {
            return Err(LocalSttError::BadOption {
                option: "threads",
                reason: "must be at least 1",
            });
        }
        if options.queue_capacity == 0 {
            return Err(LocalSttError::BadOption {
                option: "queue_capacity",
                reason: "must be at least 1",
            });
        }
        if options.max_utterance_ms < 100 {
            return Err(LocalSttError::BadOption {
                option: "max_utterance_ms",
                reason: "must be at least 100",
            });
        }
        let (jobs, inbox) = std_mpsc::sync_channel(options.queue_capacity);
        let inbox: JobInbox = Arc::new(Mutex::new(inbox));
        let counters = Arc::new(Counters::default());
        for _ in 0..options.threads {
            let (inbox, recognizer, counters) =
                (inbox.clone(), recognizer.clone(), counters.clone());
            std::thread::Builder::new()
                .name("brisvox-stt-local".to_owned())
                .spawn(move || recognition_thread(&inbox, &*recognizer, &counters))
                .map_err(|e| LocalSttError::Spawn {
                    reason: e.to_string(),
                })?;
        }
        Ok(LocalStt {
            jobs,
            recognizer,
            counters,
            options,
        })
    }

    /// What every session of this provider has done so far.
    pub fn stats(&self) -> LocalSttStats {
        self.counters.snapshot()
    }
}

/// A recognition thread: takes utterances until every sender is gone.
fn recognition_thread(
    inbox: &Mutex<std_mpsc::Receiver<Job>>,
    recognizer: &dyn Recognizer,
    counters: &Counters,
) {
    loop {
        // The lock is held while waiting, so one idle thread waits on the
        // channel and the others on the lock: each job goes to one thread.
        let job = match lock_inbox(inbox).recv() {
            Ok(job) => job,
            Err(std_mpsc::RecvError) => return,
        };
        if job.reply.is_closed() {
            Counters::bump(&counters.skipped);
            continue;
        }
        #[allow(clippy::disallowed_methods)] // a worker thread's own wall-clock measurement
        let started = Instant::now();
        let answer =
            std::panic::catch_unwind(AssertUnwindSafe(|| recognizer.transcribe(&job.samples)))
                .unwrap_or_else(|_| Err(RecognizerError::new("the recognizer panicked")));
        counters.record_time(started.elapsed());
        match &answer {
            Ok(_) => Counters::bump(&counters.recognized),
            Err(_) => Counters::bump(&counters.failed),
        }
        // The session may be gone by now; then nobody needs the answer.
        let _ = job.reply.send(answer);
    }
}

impl SttProvider for LocalStt {
    fn connect(&self, config: SttConfig) -> BoxFuture<'_, Result<SttSession, ProviderError>> {
        Box::pin(async move {
            if let Some(language) = config.language.as_deref()
                && !self.recognizer.supports_language(language)
            {
                return Err(ProviderError::Connect {
                    reason: format!(
                        "the local recognizer does not understand language {language:?}"
                    )
                    .into(),
                });
            }
            let (session, backend) = SttSession::channel();
            let cap =
                u64::from(self.options.max_utterance_ms) * u64::from(RECOGNIZER_RATE_HZ) / 1000;
            let task = SessionTask {
                backend,
                jobs: self.jobs.clone(),
                counters: self.counters.clone(),
                utterance: Utterance::new(usize::try_from(cap).unwrap_or(usize::MAX)),
                waiting: VecDeque::new(),
                in_flight: None,
                closing: false,
            };
            tokio::spawn(task.run().in_current_span());
            Ok(session)
        })
    }
}

/// The utterance being spoken, at [`RECOGNIZER_RATE_HZ`].
#[derive(Debug)]
struct Utterance {
    samples: Vec<i16>,
    cap: usize,
    truncated: bool,
    /// Converts frames not at 16 kHz; one per input rate, flushed at each end.
    resampler: Option<StreamResampler>,
    scratch: Vec<i16>,
}

impl Utterance {
    fn new(cap: usize) -> Self {
        Utterance {
            samples: Vec::new(),
            cap,
            truncated: false,
            resampler: None,
            scratch: Vec::new(),
        }
    }

    /// Appends a frame, resampled to 16 kHz if needed.
    fn push_frame(&mut self, frame: &AudioFrame) -> Result<(), ProviderError> {
        let rate = frame.sample_rate_hz();
        if rate == RECOGNIZER_RATE_HZ {
            self.push(frame.samples());
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
            resampler.process_into(frame.samples(), &mut scratch);
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

    fn push(&mut self, samples: &[i16]) {
        self.samples.extend_from_slice(samples);
        let over = self.samples.len().saturating_sub(self.cap);
        if over > 0 {
            self.samples.drain(..over);
            if !self.truncated {
                self.truncated = true;
                tracing::warn!("utterance longer than max_utterance_ms; dropping its start");
            }
        }
    }

    /// The whole utterance (the resampler's tail included); starts the next.
    /// Returns the samples and whether they lost their start.
    fn take(&mut self) -> (Vec<i16>, bool) {
        self.flush_resampler();
        let truncated = std::mem::replace(&mut self.truncated, false);
        (std::mem::take(&mut self.samples), truncated)
    }
}

/// Scales PCM16 to `-1.0..1.0`.
fn to_f32(samples: &[i16]) -> Vec<f32> {
    samples.iter().map(|&s| f32::from(s) / 32_768.0).collect()
}

struct SessionTask {
    backend: SttBackend,
    jobs: std_mpsc::SyncSender<Job>,
    counters: Arc<Counters>,
    utterance: Utterance,
    /// Utterances finalized but not yet given to a thread, in order.
    waiting: VecDeque<Vec<i16>>,
    in_flight: Option<oneshot::Receiver<Answer>>,
    closing: bool,
}

/// Waits for the utterance in recognition, or forever when there is none.
///
/// # Cancel safety
///
/// Cancel safe: the receiver stays in `slot` until it completes.
async fn in_flight(slot: &mut Option<oneshot::Receiver<Answer>>) -> Option<Answer> {
    match slot {
        Some(reply) => reply.await.ok(),
        None => std::future::pending().await,
    }
}

#[expect(
    clippy::large_enum_variant,
    reason = "built on the task's stack once per step, never queued"
)]
enum Step {
    Input(Option<SttInput>),
    /// `None`: the thread dropped the job without answering.
    Answered(Option<Answer>),
}

impl SessionTask {
    async fn run(mut self) {
        // A second handle on the event queue, to notice the engine leaving
        // while `backend` is borrowed by the receive.
        let events = self.backend.events.clone();
        loop {
            if self.closing && self.in_flight.is_none() && self.waiting.is_empty() {
                break;
            }
            let step = tokio::select! {
                input = self.backend.recv(), if !self.closing => Step::Input(input),
                answer = in_flight(&mut self.in_flight) => Step::Answered(answer),
                // The engine dropped the events: the call is over. Dropping the
                // task drops the reply slots, so the threads skip its jobs.
                () = events.closed() => return,
            };
            let event = match step {
                Step::Input(Some(SttInput::Audio(frame))) => {
                    self.utterance.push_frame(&frame).err().map(SttEvent::Error)
                }
                Step::Input(Some(SttInput::Finalize)) => {
                    Counters::bump(&self.counters.utterances);
                    let (samples, truncated) = self.utterance.take();
                    if truncated {
                        Counters::bump(&self.counters.truncated);
                    }
                    self.waiting.push_back(samples);
                    None
                }
                Step::Input(Some(SttInput::Close) | None) => {
                    self.closing = true;
                    None
                }
                Step::Answered(answer) => {
                    self.in_flight = None;
                    Some(answer_event(answer))
                }
            };
            if let Some(event) = event
                && self.backend.events.send(event).await.is_err()
            {
                return;
            }
            if !self.start_next().await {
                return;
            }
        }
        let _ = self.backend.events.send(SttEvent::Closed).await;
    }

    /// Gives the next waiting utterance to a thread, answering empty or
    /// refused ones at once. Returns `false` when the engine is gone.
    async fn start_next(&mut self) -> bool {
        while self.in_flight.is_none()
            && let Some(samples) = self.waiting.pop_front()
        {
            let event = if samples.is_empty() {
                Counters::bump(&self.counters.empty);
                final_event(String::new())
            } else {
                let (reply, answer) = oneshot::channel();
                let job = Job {
                    samples: to_f32(&samples),
                    reply,
                };
                match self.jobs.try_send(job) {
                    Ok(()) => {
                        self.in_flight = Some(answer);
                        continue;
                    }
                    Err(std_mpsc::TrySendError::Full(_)) => {
                        Counters::bump(&self.counters.busy);
                        tracing::warn!("local recognizer busy: utterance refused");
                        SttEvent::Error(ProviderError::server(503, "local recognizer busy"))
                    }
                    Err(std_mpsc::TrySendError::Disconnected(_)) => SttEvent::Error(
                        ProviderError::disconnected("the local recognition threads are gone"),
                    ),
                }
            };
            if self.backend.events.send(event).await.is_err() {
                return false;
            }
        }
        true
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
        Some(Ok(text)) => final_event(text.trim().to_owned()),
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

    fn frame(samples: &[i16], rate: u32) -> AudioFrame {
        AudioFrame::from_samples(samples, rate).unwrap()
    }

    #[test]
    fn sixteen_khz_frames_are_kept_as_they_are() {
        let mut u = Utterance::new(16_000);
        let samples: Vec<i16> = (0..320).map(|i| i as i16).collect();
        u.push_frame(&frame(&samples, 16_000)).unwrap();
        u.push_frame(&frame(&samples, 16_000)).unwrap();
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
                u.push_frame(&frame(&tone, 8_000)).unwrap();
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
    fn a_missing_model_file_is_named() {
        let dir = std::env::temp_dir().join(format!("brisvox-stt-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("model.bin"), b"x").unwrap();
        let err = check_whisper_model_dir(&dir).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("tokenizer.json") && text.contains("preprocessor_config.json"));
        assert!(!text.contains("model.bin,"), "{text}");
        assert!(text.contains("scripts/fetch-models.sh"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_not_built_error_names_the_feature_and_the_command() {
        let text = LocalSttError::NotBuilt.to_string();
        assert!(
            text.contains("local-stt") && text.contains("scripts/run.sh"),
            "{text}"
        );
    }
}
