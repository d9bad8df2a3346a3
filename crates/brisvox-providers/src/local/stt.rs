//! Local speech recognition with no key and no network: [`LocalStt`], an
//! [`SttProvider`] over any [`Recognizer`] (the server wires in Whisper
//! tiny.en on ONNX Runtime, `brisvox-models::whisper`).
//!
//! A session buffers the caller's audio of the current utterance at 16 kHz
//! ([`RECOGNIZER_RATE_HZ`]; frames at another rate, such as 8 kHz telephone
//! audio, are resampled as they arrive). While the caller speaks it recognises
//! the utterance so far at pauses and at a fixed cadence when a thread is idle
//! (*partials*, sent as interims); at [`SttSender::finalize`] (the VAD stop)
//! the final is a partial that already covered all the speech, or a
//! recognition given the last partial's tokens as a draft, so mostly only the
//! end of the utterance is decoded ([`super::stt_session`]). The final comes
//! back as one [`SttEvent::Final`] with `from_finalize: true`; the buffer then
//! starts over. An empty utterance is answered with an empty final without
//! running the recognizer.
//!
//! # Threads
//!
//! Recognition is blocking CPU work, so it never runs on a tokio worker: the
//! provider owns [`LocalSttOptions::threads`] OS threads (named
//! `brisvox-stt-local`) that share one recognizer (one model in memory for
//! every call) and take jobs from one bounded queue of
//! [`LocalSttOptions::queue_capacity`] jobs. Overflow policy: reject the
//! newest; a final refused that way is answered with a retryable
//! [`ProviderError::Server`] (503, "local recognizer busy") and the session
//! goes on. A partial is only queued when a thread is idle and no job waits.
//! The threads end when the provider and every session are gone.
//!
//! A session runs one job at a time, in order, while it keeps buffering the
//! next utterance. A recognizer failure (or panic) is answered with
//! [`SttEvent::Error`] in place of that utterance's final; the session goes
//! on. There is no deadline on a recognition: the engine's own final timeout
//! ends the turn if a final is late.
//!
//! # Limits and cancellation
//!
//! An utterance holds at most [`LocalSttOptions::max_utterance_ms`] of audio;
//! overflow policy: drop the oldest (the end of an utterance is what the turn
//! depends on), logged once per utterance and counted (no partials are run on
//! it then). A session whose events are dropped (the call ended) stops at
//! once; its jobs still waiting in the queue are skipped by the threads (one
//! already being recognized runs to its end, since a model run cannot be
//! interrupted). `Close` answers the finalized utterances first, then sends
//! [`SttEvent::Closed`]; audio not yet finalized is dropped.
//!
//! [`SttSender::finalize`]: crate::SttSender::finalize

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc as std_mpsc};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use tokio::sync::oneshot;

use super::stt_session::SessionTask;
use crate::{BoxFuture, ProviderError, SttConfig, SttProvider, SttSession};

/// The rate a [`Recognizer`] is given its audio at, in Hz.
pub const RECOGNIZER_RATE_HZ: u32 = 16_000;

/// What a recognizer heard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recognized {
    /// The text.
    pub text: String,
    /// The recognizer's tokens for it (the draft of a later recognition of
    /// the same, longer utterance); empty when the recognizer has none.
    pub tokens: Vec<u32>,
}

/// A speech recognizer for whole utterances. Blocking: it is only ever called
/// on the provider's recognition threads.
pub trait Recognizer: Send + Sync + 'static {
    /// What was said in `samples` (mono, at [`RECOGNIZER_RATE_HZ`], scaled to
    /// `-1.0..=1.0`, never empty). `draft` (empty for none) holds the tokens
    /// of an earlier transcript of the start of the same utterance: a
    /// recognizer may check them against the audio instead of decoding them
    /// again, but must not take them on trust. Once `cancel` is set nobody
    /// needs the result: the recognizer may give up early with an error.
    fn recognize(
        &self,
        samples: &[f32],
        draft: &[u32],
        cancel: &AtomicBool,
    ) -> Result<Recognized, RecognizerError>;

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

/// Settings of a [`LocalStt`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSttOptions {
    /// Longest utterance kept, in ms (older audio is dropped).
    pub max_utterance_ms: u32,
    /// Recognition threads, each running one utterance at a time.
    pub threads: usize,
    /// Jobs waiting for a thread, over every session.
    pub queue_capacity: usize,
    /// Whether to recognise while the caller speaks (partials).
    pub partials: bool,
    /// A partial at the latest after this much new audio, in ms.
    pub partial_every_ms: u32,
    /// Quiet audio after speech that counts as a pause (a partial then), in ms.
    pub pause_ms: u32,
}

impl Default for LocalSttOptions {
    /// 30 s utterances (Whisper's window), one thread, eight waiting; partials
    /// at 60 ms pauses and every 1 s.
    fn default() -> Self {
        LocalSttOptions {
            max_utterance_ms: 30_000,
            threads: 1,
            queue_capacity: 8,
            partials: true,
            partial_every_ms: 1_000,
            pause_ms: 60,
        }
    }
}

/// What a [`LocalStt`] has done so far, over every session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSttStats {
    /// Utterances finalized (every one is answered by a final or an error).
    pub utterances: u64,
    /// Partials started while the caller spoke.
    pub partials: u64,
    /// Finals answered by a partial that had covered all the speech.
    pub from_partial: u64,
    /// Finals recognised with a partial's tokens as the draft.
    pub with_draft: u64,
    /// Utterances answered with an empty final without recognition.
    pub empty: u64,
    /// Jobs (finals and partials) the recognizer ran.
    pub recognized: u64,
    /// Jobs the recognizer failed on (errors and panics).
    pub failed: u64,
    /// Utterances refused because the queue was full.
    pub busy: u64,
    /// Jobs skipped because their session was gone before a thread took them.
    pub skipped: u64,
    /// Partials cancelled because the final needed the thread.
    pub cancelled: u64,
    /// Utterances that reached [`LocalSttOptions::max_utterance_ms`] and lost their start.
    pub truncated: u64,
    /// Time spent in the recognizer, summed, in µs.
    pub recognize_us_total: u64,
    /// The longest recognition, in µs.
    pub recognize_us_max: u64,
}

/// The provider's counters, shared by its sessions and threads.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) utterances: AtomicU64,
    pub(super) partials: AtomicU64,
    pub(super) from_partial: AtomicU64,
    pub(super) with_draft: AtomicU64,
    pub(super) empty: AtomicU64,
    recognized: AtomicU64,
    failed: AtomicU64,
    pub(super) busy: AtomicU64,
    skipped: AtomicU64,
    cancelled: AtomicU64,
    pub(super) truncated: AtomicU64,
    recognize_us_total: AtomicU64,
    recognize_us_max: AtomicU64,
    /// Jobs queued and not yet taken by a thread.
    queued: AtomicUsize,
    /// Threads running a job.
    running: AtomicUsize,
}

impl Counters {
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn queued_add(&self, n: usize) {
        self.queued.fetch_add(n, Ordering::SeqCst);
    }

    /// Whether one of `threads` threads is idle and no job waits.
    pub(super) fn idle_thread(&self, threads: usize) -> bool {
        self.queued.load(Ordering::SeqCst) == 0 && self.running.load(Ordering::SeqCst) < threads
    }

    fn snapshot(&self) -> LocalSttStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LocalSttStats {
            utterances: get(&self.utterances),
            partials: get(&self.partials),
            from_partial: get(&self.from_partial),
            with_draft: get(&self.with_draft),
            empty: get(&self.empty),
            recognized: get(&self.recognized),
            failed: get(&self.failed),
            busy: get(&self.busy),
            skipped: get(&self.skipped),
            cancelled: get(&self.cancelled),
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

pub(super) type Answer = Result<Recognized, RecognizerError>;

/// One recognition for a thread.
pub(super) struct Job {
    pub(super) samples: Vec<f32>,
    pub(super) draft: Vec<u32>,
    /// Set when the answer is no longer needed (a partial overtaken by the final).
    pub(super) cancel: Arc<AtomicBool>,
    /// A partial (else a final), for the log.
    pub(super) partial: bool,
    pub(super) reply: oneshot::Sender<Answer>,
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
        counters.queued.fetch_sub(1, Ordering::SeqCst);
        if job.reply.is_closed() {
            Counters::bump(&counters.skipped);
            continue;
        }
        counters.running.fetch_add(1, Ordering::SeqCst);
        #[allow(clippy::disallowed_methods)] // a worker thread's own wall-clock measurement
        let started = Instant::now();
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            recognizer.recognize(&job.samples, &job.draft, &job.cancel)
        }))
        .unwrap_or_else(|_| Err(RecognizerError::new("the recognizer panicked")));
        let took = started.elapsed();
        counters.record_time(took);
        counters.running.fetch_sub(1, Ordering::SeqCst);
        tracing::debug!(
            partial = job.partial,
            audio_ms = job.samples.len() as u64 * 1000 / u64::from(RECOGNIZER_RATE_HZ),
            draft_tokens = job.draft.len(),
            took_ms = took.as_millis() as u64,
            ok = answer.is_ok(),
            "local recognition"
        );
        match &answer {
            Ok(_) => Counters::bump(&counters.recognized),
            Err(_) if job.cancel.load(Ordering::Relaxed) => Counters::bump(&counters.cancelled),
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
            let task = SessionTask::new(
                backend,
                self.jobs.clone(),
                self.counters.clone(),
                self.options.clone(),
                self.options.threads,
            );
            tokio::spawn(task.run().in_current_span());
            Ok(session)
        })
    }
}
