//! The Smart Turn executor: analyses run on an inference pool of their own.
//!
//! An analysis holds a pool thread for tens of milliseconds while a Silero window
//! takes well under one, and pool jobs are not preempted: sharing the VAD's pool
//! would make the VAD windows of every other call wait behind each analysis. So the
//! [`SmartTurnService`] owns a second [`InferencePool`] (threads `brisvox-turn-<i>`)
//! that runs only analyses, with the process's one shared [`SmartTurn`].
//!
//! Driving: the caller snapshots its call's [`SmartTurnRing`](super::SmartTurnRing)
//! into a buffer from [`SmartTurnService::snapshot_buffer`] (on its own thread, a
//! memcpy) and awaits [`SmartTurnService::analyze`] with it. The buffer goes back to
//! the service's free list after the features are computed, so steady-state
//! analyses allocate nothing.
//!
//! Overflow policy: the queue is bounded (reject newest). A refused analysis
//! ([`SmartTurnError::Saturated`]) or one that did not start before its deadline
//! ([`SmartTurnError::TimedOut`]) is a failed analysis, counted in
//! [`SmartTurnStats`]; the turn then ends by its fallback, as for any model failure.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::model::{SmartTurn, SmartTurnConfig, SmartTurnError, Verdict};
use super::ring::RING_SAMPLES;
use crate::pool::{InferencePool, JobHandle, PoolConfig, PoolError, Priority};

/// Default executor threads.
pub const DEFAULT_EXECUTOR_THREADS: usize = 1;
/// Default waiting analyses per executor thread before new ones are refused.
pub const DEFAULT_QUEUE_PER_THREAD: usize = 32;
/// Default time an analysis may wait for a thread before it is skipped, in ms.
pub const DEFAULT_START_TIMEOUT_MS: u64 = 1_000;

/// How the executor is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmartTurnServiceConfig {
    /// Executor threads (0 is raised to 1). Each runs one analysis at a time with
    /// `model.intra_threads` ONNX Runtime threads of its own.
    pub threads: usize,
    /// Waiting analyses before new ones are refused (0: `threads * 32`).
    pub queue_capacity: usize,
    /// An analysis not started within this is skipped and fails (`TimedOut`).
    pub start_timeout: Duration,
    /// The model settings; `sessions` is raised to `threads`.
    pub model: SmartTurnConfig,
}

impl Default for SmartTurnServiceConfig {
    fn default() -> Self {
        SmartTurnServiceConfig {
            threads: DEFAULT_EXECUTOR_THREADS,
            queue_capacity: 0,
            start_timeout: Duration::from_millis(DEFAULT_START_TIMEOUT_MS),
            model: SmartTurnConfig::default(),
        }
    }
}

/// Counters of the analyses asked of a [`SmartTurnService`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmartTurnStats {
    /// Analyses that gave a verdict.
    pub completed: u64,
    /// Of those, verdicts "complete".
    pub complete_verdicts: u64,
    /// Analyses refused because the queue was full.
    pub refused: u64,
    /// Analyses skipped because they did not start before their deadline.
    pub timed_out: u64,
    /// Analyses that failed otherwise (model error, panic, shutdown).
    pub failed: u64,
    /// Sum of the feature times of completed analyses, microseconds.
    pub features_us_total: u64,
    /// Sum of the model times of completed analyses, microseconds.
    pub model_us_total: u64,
    /// The longest features + model time of a completed analysis, microseconds.
    pub max_analysis_us: u64,
}

impl SmartTurnStats {
    /// Every analysis that gave no verdict (refused, timed out or failed).
    pub fn failures(&self) -> u64 {
        self.refused + self.timed_out + self.failed
    }
}

#[derive(Debug, Default)]
struct Counters {
    completed: AtomicU64,
    complete_verdicts: AtomicU64,
    refused: AtomicU64,
    timed_out: AtomicU64,
    failed: AtomicU64,
    features_us_total: AtomicU64,
    model_us_total: AtomicU64,
    max_analysis_us: AtomicU64,
}

impl Counters {
    fn count(
        &self,
        result: Result<Result<Verdict, SmartTurnError>, PoolError>,
    ) -> Result<Verdict, SmartTurnError> {
        let outcome = match result {
            Ok(inner) => inner,
            Err(PoolError::Saturated { .. }) => Err(SmartTurnError::Saturated),
            Err(PoolError::TimedOut) => Err(SmartTurnError::TimedOut),
            Err(other) => Err(SmartTurnError::ExecutorFailed {
                reason: other.to_string(),
            }),
        };
        match &outcome {
            Ok(v) => {
                self.completed.fetch_add(1, Ordering::Relaxed);
                if v.complete {
                    self.complete_verdicts.fetch_add(1, Ordering::Relaxed);
                }
                self.features_us_total
                    .fetch_add(v.features_us, Ordering::Relaxed);
                self.model_us_total.fetch_add(v.model_us, Ordering::Relaxed);
                self.max_analysis_us
                    .fetch_max(v.features_us + v.model_us, Ordering::Relaxed);
            }
            Err(SmartTurnError::Saturated) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
            }
            Err(SmartTurnError::TimedOut) => {
                self.timed_out.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        outcome
    }
}

/// Runs Smart Turn analyses on a pool of its own; clone it to share (cheap).
#[derive(Debug, Clone)]
pub struct SmartTurnService {
    model: Arc<SmartTurn>,
    pool: InferencePool,
    buffers: Arc<Mutex<Vec<Vec<i16>>>>,
    max_free_buffers: usize,
    counters: Arc<Counters>,
    start_timeout: Duration,
}

impl SmartTurnService {
    /// Loads the model (once), starts the executor threads and warms the model up.
    ///
    /// Blocks for the load and the warm-up (about a second): call it at startup.
    pub fn start(mut config: SmartTurnServiceConfig) -> Result<Self, SmartTurnError> {
        config.threads = config.threads.max(1);
        config.model.sessions = config.model.sessions.max(config.threads);
        let model = Arc::new(SmartTurn::load(config.model.clone())?);
        model.warm_up()?;
        Ok(Self::with_model(model, &config))
    }

    /// An executor around an already loaded (and warmed-up) model.
    ///
    /// Give the model at least as many sessions as `config.threads`: with fewer,
    /// the extra threads wait for a session instead of running in parallel.
    pub fn with_model(model: Arc<SmartTurn>, config: &SmartTurnServiceConfig) -> Self {
        let threads = config.threads.max(1);
        let queue = if config.queue_capacity == 0 {
            threads * DEFAULT_QUEUE_PER_THREAD
        } else {
            config.queue_capacity
        };
        let pool = InferencePool::new(PoolConfig {
            name: "brisvox-turn".to_owned(),
            threads,
            // Analyses are all Normal; nothing is High on this pool.
            high_capacity: 0,
            normal_capacity: queue,
        });
        SmartTurnService {
            model,
            pool,
            buffers: Arc::new(Mutex::new(Vec::new())),
            max_free_buffers: queue + threads,
            counters: Arc::new(Counters::default()),
            start_timeout: config.start_timeout,
        }
    }

    /// An executor on a pool the caller built: a threaded pool shared with
    /// other work, or [`InferencePool::inline`] for deterministic tests (each
    /// analysis then runs inside [`analyze`](Self::analyze), and its verdict is
    /// ready when that returns). Buffer reuse and counters work as with
    /// [`with_model`](Self::with_model); the start timeout is the default
    /// ([`DEFAULT_START_TIMEOUT_MS`]) and the free list keeps up to the pool's
    /// Normal capacity plus its threads in buffers.
    pub fn with_pool(model: Arc<SmartTurn>, pool: InferencePool) -> Self {
        let config = pool.config();
        let max_free_buffers = config.normal_capacity.saturating_add(config.threads.max(1));
        SmartTurnService {
            model,
            pool,
            buffers: Arc::new(Mutex::new(Vec::new())),
            max_free_buffers,
            counters: Arc::new(Counters::default()),
            start_timeout: Duration::from_millis(DEFAULT_START_TIMEOUT_MS),
        }
    }

    /// The shared model.
    pub fn model(&self) -> &Arc<SmartTurn> {
        &self.model
    }

    /// The executor's pool (for its own stats: queue depth, wait and run times).
    pub fn pool(&self) -> &InferencePool {
        &self.pool
    }

    /// An empty buffer with room for a full ring snapshot, from the free list when
    /// one is there (buffers come back after each analysis).
    pub fn snapshot_buffer(&self) -> Vec<i16> {
        let reused = self
            .buffers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        reused.unwrap_or_else(|| Vec::with_capacity(RING_SAMPLES))
    }

    /// Starts one analysis of `snapshot` (16 kHz PCM16, the turn's audio, oldest
    /// first) and returns the future of its verdict.
    ///
    /// Submits at once, on the caller's thread (so analyses queue in call order):
    /// a full queue is known here, and the future then resolves at once to
    /// [`SmartTurnError::Saturated`]. The analysis must start within the configured
    /// start timeout or it resolves to [`SmartTurnError::TimedOut`].
    pub fn analyze(&self, snapshot: Vec<i16>) -> PendingVerdict {
        let model = Arc::clone(&self.model);
        let buffers = Arc::clone(&self.buffers);
        let max_free = self.max_free_buffers;
        let deadline = Instant::now() + self.start_timeout;
        let submitted = self.pool.submit(Priority::Normal, Some(deadline), move || {
            let verdict = model.analyze(&snapshot);
            give_back(&buffers, max_free, snapshot);
            verdict
        });
        let state = match submitted {
            Ok(handle) => Pending::Running(handle),
            Err(e) => Pending::Ready(Some(self.counters.count(Err(e)))),
        };
        PendingVerdict {
            state,
            counters: Arc::clone(&self.counters),
        }
    }

    /// Returns a buffer from [`snapshot_buffer`](Self::snapshot_buffer) that
    /// was not analysed after all (the caller went on before it was sent),
    /// so the next snapshot reuses it.
    pub fn recycle(&self, snapshot: Vec<i16>) {
        give_back(&self.buffers, self.max_free_buffers, snapshot);
    }

    /// A snapshot of the counters (each read atomically; not one consistent cut).
    pub fn stats(&self) -> SmartTurnStats {
        let c = &self.counters;
        SmartTurnStats {
            completed: c.completed.load(Ordering::Relaxed),
            complete_verdicts: c.complete_verdicts.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            timed_out: c.timed_out.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            features_us_total: c.features_us_total.load(Ordering::Relaxed),
            model_us_total: c.model_us_total.load(Ordering::Relaxed),
            max_analysis_us: c.max_analysis_us.load(Ordering::Relaxed),
        }
    }
}

/// Puts `snapshot` back on the free list, emptied, unless the list is full
/// or the buffer is too small to hold a ring.
fn give_back(buffers: &Mutex<Vec<Vec<i16>>>, max_free: usize, mut snapshot: Vec<i16>) {
    let mut free = buffers.lock().unwrap_or_else(PoisonError::into_inner);
    if free.len() < max_free && snapshot.capacity() >= RING_SAMPLES {
        // `snapshot_buffer` promises an empty buffer.
        snapshot.clear();
        free.push(snapshot);
    }
}

enum Pending {
    Running(JobHandle<Result<Verdict, SmartTurnError>>),
    Ready(Option<Result<Verdict, SmartTurnError>>),
}

/// The verdict of an analysis started by [`SmartTurnService::analyze`].
///
/// # Cancel safety
/// Dropping it before the analysis starts cancels the analysis; a running analysis
/// finishes on its thread and its verdict is discarded (and not counted).
pub struct PendingVerdict {
    state: Pending,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for PendingVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            Pending::Running(_) => "running",
            Pending::Ready(Some(_)) => "ready",
            Pending::Ready(None) => "taken",
        };
        f.debug_struct("PendingVerdict")
            .field("state", &state)
            .finish()
    }
}

impl Future for PendingVerdict {
    type Output = Result<Verdict, SmartTurnError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match &mut this.state {
            Pending::Running(handle) => match Pin::new(handle).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(result) => {
                    this.state = Pending::Ready(None);
                    Poll::Ready(this.counters.count(result))
                }
            },
            Pending::Ready(ready) => match ready.take() {
                Some(result) => Poll::Ready(result),
                None => Poll::Ready(Err(SmartTurnError::ExecutorFailed {
                    reason: "polled after it completed".to_owned(),
                })),
            },
        }
    }
}
