//! The VAD service: the windows of many streams as one batched Silero run.
//!
//! Each call opens a [`VadStream`] with a sink (a callback) and submits its 32 ms
//! windows in order. A submitted window waits in one bounded queue shared by all
//! streams. When no batch job is already waiting on the inference pool, the submit
//! queues one on the pool's **High** line. The job, when a worker starts it, takes
//! **every** eligible window waiting (up to [`VadServiceConfig::max_batch`]) and runs
//! them as one model run, one row per stream, each with that stream's recurrent
//! state; then it hands each stream its probability through the stream's sink.
//!
//! So batching is opportunistic: a lone window is run at once in a batch of one and
//! waits for nothing but a free worker; under load, windows that arrive while a
//! batch runs are collected by the next job and batch by themselves. There is no
//! tick that every window waits for. Between the two, when many calls send
//! windows that arrive one by one, a job may wait a few milliseconds for company
//! ([`VadServiceConfig::linger`], by default [`Linger::Adaptive`]: only when the
//! streams active lately will send at least two more windows meanwhile, never for
//! a call alone; `vad/linger.rs`).
//!
//! Rules:
//!
//! - **Order per stream.** A stream has at most one row in flight: a window whose
//!   stream is in a running batch (or already in this one) is deferred to the next
//!   batch, in order.
//! - **Bounded.** The queue holds at most [`VadServiceConfig::queue_capacity`]
//!   windows over all streams; a submit beyond it is refused
//!   ([`VadError::QueueFull`], reject newest). A refused window never ran: the
//!   stream's state is unchanged and the caller may offer it again.
//! - **Overload is delay.** When the pool refuses the batch job (its High line
//!   is full), the window stays queued and the refusal is counted
//!   ([`VadServiceStats::schedule_retries`]); the job is offered again by the next
//!   submit of any stream or at the end of the running batch, so while calls'
//!   audio flows the retry comes within one window (32 ms). Only a pool that has
//!   shut down fails the submit ([`VadError::Pool`]).
//! - **Sinks run on the pool's thread.** A sink must be quick and must not block
//!   (a `try_send` into a bounded channel, an atomic store). A dropped [`VadStream`]
//!   gets no more outcomes; its waiting windows are discarded.
//!
//! In steady state the per-window path does not allocate: the window is copied into
//! the queue (whose storage is kept), then into a reused [`SileroBatch`]; a batch
//! job costs one pool submission.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::VadError;
use super::linger::{ActiveStreams, Linger};
use super::silero::{SileroBatch, SileroModel, SileroRate, SileroState};
use crate::pool::{InferencePool, PoolError, Priority};

/// Longest window (16 kHz).
const MAX_WINDOW: usize = 512;

/// How a [`VadService`] batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VadServiceConfig {
    /// Sample rate of every stream of this service.
    pub rate: SileroRate,
    /// Most rows in one model run.
    pub max_batch: usize,
    /// Most windows waiting over all streams.
    pub queue_capacity: usize,
    /// Whether a batch job that starts with fewer than `max_batch` windows waiting
    /// holds its worker to let the batch grow, and for how long at most (measured
    /// from the oldest waiting window); it runs as soon as `max_batch` windows
    /// wait. Default: [`Linger::Adaptive`] up to 4 ms, which waits only when the
    /// streams active lately will send at least two more windows meanwhile (never
    /// for a call alone). Fewer, bigger model runs under moderate load, at the
    /// cost of up to the bound of VAD latency. Ignored on an inline pool.
    pub linger: Linger,
}

/// Default [`VadServiceConfig::max_batch`].
pub const DEFAULT_MAX_BATCH: usize = 128;
/// Default [`VadServiceConfig::queue_capacity`] (a few windows per call for
/// about a thousand calls).
pub const DEFAULT_QUEUE_CAPACITY: usize = 4096;

impl VadServiceConfig {
    /// Defaults for a rate: batches of up to [`DEFAULT_MAX_BATCH`] rows, a queue of
    /// [`DEFAULT_QUEUE_CAPACITY`] windows.
    pub fn new(rate: SileroRate) -> Self {
        VadServiceConfig {
            rate,
            max_batch: DEFAULT_MAX_BATCH,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            linger: Linger::default(),
        }
    }
}

/// One window's result, handed to its stream's sink.
#[derive(Debug, Clone)]
pub struct WindowOutcome {
    /// The window's index in its stream (0 for the first window submitted); its
    /// audio ends at `(seq + 1) * 32 ms` of the stream.
    pub seq: u64,
    /// The speech probability, or why the model run failed.
    pub probability: Result<f32, VadError>,
}

/// Counters of a service (each read atomically; not one consistent cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VadServiceStats {
    /// Windows accepted by `submit`.
    pub windows_submitted: u64,
    /// Windows refused (queue full or pool refused).
    pub windows_rejected: u64,
    /// Windows that got a probability.
    pub windows_scored: u64,
    /// Windows whose model run failed.
    pub windows_failed: u64,
    /// Model runs.
    pub batches: u64,
    /// Rows of the largest run.
    pub max_batch_rows: u64,
    /// Times a window was left for a later batch because its stream was in flight
    /// or the batch was full.
    pub deferrals: u64,
    /// Windows waiting now.
    pub queued: u64,
    /// Batch jobs the pool refused (line full); their windows stayed queued
    /// and were offered again.
    pub schedule_retries: u64,
    /// Batch jobs that waited for more windows ([`VadServiceConfig::linger`]).
    pub lingers: u64,
}

impl VadServiceStats {
    /// Mean rows per model run.
    pub fn mean_batch_rows(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            (self.windows_scored + self.windows_failed) as f64 / self.batches as f64
        }
    }
}

type Sink = Box<dyn Fn(WindowOutcome) + Send + Sync>;

struct StreamShared {
    state: Mutex<SileroState>,
    sink: Sink,
    /// A window of this stream is in a batch being gathered or run.
    in_flight: AtomicBool,
    /// The last gather that deferred a window of this stream: later windows of the
    /// stream in that gather are deferred too, even if `in_flight` clears meanwhile.
    deferred_in: AtomicU64,
    closed: AtomicBool,
}

impl StreamShared {
    fn state(&self) -> MutexGuard<'_, SileroState> {
        // The state lock is only held to copy floats in or out; a poisoned lock
        // means a sink panicked elsewhere, the state itself is whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct PendingWindow {
    stream: Arc<StreamShared>,
    seq: u64,
    samples: [f32; MAX_WINDOW],
    /// When it was submitted, on the service's clock (only read when lingering).
    submitted_at: Duration,
}

struct Queue {
    windows: VecDeque<PendingWindow>,
    /// A batch job is on the pool and has not yet started gathering.
    job_waiting: bool,
    /// Streams that submitted lately (for the adaptive linger).
    active: ActiveStreams,
    /// A job is lingering: a submit that fills a batch wakes it (`filled`).
    lingering: bool,
}

struct Scratch {
    batch: SileroBatch,
    rows: Vec<(Arc<StreamShared>, u64)>,
}

#[derive(Default)]
struct Counters {
    submitted: AtomicU64,
    rejected: AtomicU64,
    scored: AtomicU64,
    failed: AtomicU64,
    batches: AtomicU64,
    max_rows: AtomicU64,
    deferrals: AtomicU64,
    queued: AtomicU64,
    schedule_retries: AtomicU64,
    lingers: AtomicU64,
}

/// The service's time since it started (injectable: [`VadService::with_clock`]).
type Clock = Box<dyn Fn() -> Duration + Send + Sync>;

struct ServiceInner {
    model: Arc<SileroModel>,
    pool: InferencePool,
    config: VadServiceConfig,
    queue: Mutex<Queue>,
    /// Signalled when a lingering job's batch is full.
    filled: Condvar,
    clock: Clock,
    /// Batch buffers not in use (one per concurrently running job, made on demand).
    scratch: Mutex<Vec<Scratch>>,
    /// Numbers the gathers (from 1) for [`StreamShared::deferred_in`].
    gathers: AtomicU64,
    counters: Counters,
}

/// Runs the windows of many streams as batched Silero runs on an inference pool.
#[derive(Clone)]
pub struct VadService {
    inner: Arc<ServiceInner>,
}

impl std::fmt::Debug for VadService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VadService")
            .field("config", &self.inner.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl VadService {
    /// A service running `model` on `pool`'s High line.
    pub fn new(model: Arc<SileroModel>, pool: InferencePool, config: VadServiceConfig) -> Self {
        let origin = Instant::now();
        Self::with_clock(model, pool, config, move || origin.elapsed())
    }

    /// [`new`](Self::new) with the clock the linger reads (`clock()`: time since
    /// any fixed origin, never decreasing): a test can freeze or step it. Only the
    /// decision to linger and its bound read it; the wait itself is real time.
    pub fn with_clock(
        model: Arc<SileroModel>,
        pool: InferencePool,
        mut config: VadServiceConfig,
        clock: impl Fn() -> Duration + Send + Sync + 'static,
    ) -> Self {
        config.max_batch = config.max_batch.max(1);
        config.queue_capacity = config.queue_capacity.max(1);
        VadService {
            inner: Arc::new(ServiceInner {
                model,
                pool,
                config,
                queue: Mutex::new(Queue {
                    windows: VecDeque::new(),
                    job_waiting: false,
                    active: ActiveStreams::default(),
                    lingering: false,
                }),
                filled: Condvar::new(),
                clock: Box::new(clock),
                scratch: Mutex::new(Vec::new()),
                gathers: AtomicU64::new(0),
                counters: Counters::default(),
            }),
        }
    }

    /// The service's configuration.
    pub fn config(&self) -> VadServiceConfig {
        self.inner.config
    }

    /// Opens a stream whose outcomes go to `sink`, called on a pool thread (or, with
    /// an inline pool, inside [`VadStream::submit`]) once per window, in order.
    pub fn open_stream(&self, sink: impl Fn(WindowOutcome) + Send + Sync + 'static) -> VadStream {
        VadStream {
            shared: Arc::new(StreamShared {
                state: Mutex::new(SileroState::new(self.inner.config.rate)),
                sink: Box::new(sink),
                in_flight: AtomicBool::new(false),
                deferred_in: AtomicU64::new(0),
                closed: AtomicBool::new(false),
            }),
            service: Arc::clone(&self.inner),
            next_seq: 0,
            active_mark: 0,
        }
    }

    /// The pool the batches run on (for its own stats: batch jobs waiting,
    /// their wait for a worker and their run times).
    pub fn pool(&self) -> &InferencePool {
        &self.inner.pool
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> VadServiceStats {
        let c = &self.inner.counters;
        VadServiceStats {
            windows_submitted: c.submitted.load(Ordering::Relaxed),
            windows_rejected: c.rejected.load(Ordering::Relaxed),
            windows_scored: c.scored.load(Ordering::Relaxed),
            windows_failed: c.failed.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            max_batch_rows: c.max_rows.load(Ordering::Relaxed),
            deferrals: c.deferrals.load(Ordering::Relaxed),
            queued: c.queued.load(Ordering::Relaxed),
            schedule_retries: c.schedule_retries.load(Ordering::Relaxed),
            lingers: c.lingers.load(Ordering::Relaxed),
        }
    }
}

/// One stream of a [`VadService`]: submit its windows in order.
///
/// Dropping it discards its waiting windows; no outcome is delivered after that.
pub struct VadStream {
    shared: Arc<StreamShared>,
    service: Arc<ServiceInner>,
    next_seq: u64,
    /// This stream's mark in the service's [`ActiveStreams`].
    active_mark: u64,
}

impl std::fmt::Debug for VadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VadStream")
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl Drop for VadStream {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

impl VadStream {
    /// Submits the stream's next window (512 samples at 16 kHz, 256 at 8 kHz, f32
    /// in [-1, 1]); returns its `seq`. The outcome arrives at the sink.
    ///
    /// On an error the window was not queued and `seq` is not used up.
    pub fn submit(&mut self, window: &[f32]) -> Result<u64, VadError> {
        let inner = &self.service;
        let rate = inner.config.rate;
        if window.len() != rate.window_samples() {
            return Err(VadError::WindowLength {
                rate_hz: rate.hz(),
                expected: rate.window_samples(),
                actual: window.len(),
            });
        }
        let seq = self.next_seq;
        let (schedule, wake) = {
            let mut queue = inner.queue();
            // Read under the lock, so stamps reach the queue and the activity
            // count in order (the oldest window is the queue's front).
            let now = (inner.clock)();
            if queue.windows.len() >= inner.config.queue_capacity {
                drop(queue);
                inner.counters.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(VadError::QueueFull {
                    capacity: inner.config.queue_capacity,
                });
            }
            let mut samples = [0.0; MAX_WINDOW];
            samples[..window.len()].copy_from_slice(window);
            queue.windows.push_back(PendingWindow {
                submitted_at: now,
                stream: Arc::clone(&self.shared),
                seq,
                samples,
            });
            queue.active.note(now, &mut self.active_mark);
            inner.counters.queued.fetch_add(1, Ordering::Relaxed);
            let wake = queue.lingering && queue.windows.len() >= inner.config.max_batch;
            (!std::mem::replace(&mut queue.job_waiting, true), wake)
        };
        if wake {
            inner.filled.notify_all();
        }
        if schedule && let Err(e) = ServiceInner::schedule(inner) {
            if !matches!(e, VadError::Pool(PoolError::Saturated { .. })) {
                inner.withdraw(&self.shared, seq);
                inner.counters.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
            // The window stays queued: the next submit or batch end offers the job again.
            inner
                .counters
                .schedule_retries
                .fetch_add(1, Ordering::Relaxed);
        }
        inner.counters.submitted.fetch_add(1, Ordering::Relaxed);
        self.next_seq += 1;
        Ok(seq)
    }

    /// Windows submitted so far (the next window's `seq`).
    pub fn windows_submitted(&self) -> u64 {
        self.next_seq
    }
}

impl ServiceInner {
    /// The queue, even after a panic elsewhere: it is only held for pushes, pops and
    /// flag flips, which leave it consistent.
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a batch job on the pool (the caller has set `job_waiting`). Never
    /// called with the queue locked: an inline pool runs the job right here.
    fn schedule(this: &Arc<Self>) -> Result<(), VadError> {
        let job_inner = Arc::clone(this);
        this.pool
            .submit_detached(Priority::High, None, move || job_inner.run_job())
            .map_err(|e| {
                this.queue().job_waiting = false;
                VadError::Pool(e)
            })
    }

    /// One batch job: gather every eligible waiting window, run them, deliver.
    ///
    /// A job that finds nothing eligible (every waiting window belongs to a stream in
    /// another run) ends at once without rescheduling, so jobs never spin: the run
    /// holding those streams looks at the queue when it ends.
    fn run_job(self: Arc<Self>) {
        self.linger();
        let mut scratch = self.take_scratch();
        self.gather(&mut scratch);
        let ran = !scratch.rows.is_empty();
        if ran {
            self.run_and_deliver(&mut scratch);
        }
        self.give_back(scratch);
        if ran {
            self.schedule_leftovers();
        }
    }

    /// Waits as the [`Linger`] policy says: at most until the oldest waiting
    /// window is the bound old, or until a full batch waits.
    fn linger(&self) {
        if self.config.linger == Linger::Off || self.pool.is_inline() {
            return;
        }
        let max_batch = self.config.max_batch;
        let mut queue = self.queue();
        let Some(oldest) = queue.windows.front().map(|w| w.submitted_at) else {
            return;
        };
        let now = (self.clock)();
        let active = queue.active.estimate(now);
        let wait = self
            .config
            .linger
            .wait(now, oldest, queue.windows.len(), max_batch, active);
        if wait.is_zero() {
            return;
        }
        self.counters.lingers.fetch_add(1, Ordering::Relaxed);
        queue.lingering = true;
        let (mut queue, _) = self
            .filled
            .wait_timeout_while(queue, wait, |q| q.windows.len() < max_batch)
            .unwrap_or_else(PoisonError::into_inner);
        queue.lingering = false;
    }

    /// Moves every eligible waiting window into the batch.
    fn gather(&self, scratch: &mut Scratch) {
        scratch.batch.clear();
        scratch.rows.clear();
        let window_len = self.config.rate.window_samples();
        let mut queue = self.queue();
        queue.job_waiting = false;
        let gather = self.gathers.fetch_add(1, Ordering::Relaxed) + 1;
        // One full rotation keeps the order of the windows left behind, because once
        // a stream has a window deferred, all its later windows in this gather are
        // deferred too (`deferred_in`).
        let waiting = queue.windows.len();
        let mut deferred = 0u64;
        for _ in 0..waiting {
            let Some(w) = queue.windows.pop_front() else {
                break;
            };
            if w.stream.closed.load(Ordering::Acquire) {
                self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            let room = scratch.rows.len() < self.config.max_batch;
            if !room
                || w.stream.deferred_in.load(Ordering::Relaxed) == gather
                || w.stream.in_flight.load(Ordering::Acquire)
            {
                w.stream.deferred_in.store(gather, Ordering::Relaxed);
                deferred += 1;
                queue.windows.push_back(w);
                continue;
            }
            let pushed = scratch
                .batch
                .push(&w.stream.state(), &w.samples[..window_len]);
            self.counters.queued.fetch_sub(1, Ordering::Relaxed);
            match pushed {
                Ok(_) => {
                    w.stream.in_flight.store(true, Ordering::Release);
                    scratch.rows.push((w.stream, w.seq));
                }
                // Rate and length were checked at submit and the batch has room.
                Err(e) => deliver(
                    &w.stream,
                    WindowOutcome {
                        seq: w.seq,
                        probability: Err(e),
                    },
                ),
            }
        }
        self.counters
            .deferrals
            .fetch_add(deferred, Ordering::Relaxed);
    }

    fn run_and_deliver(&self, scratch: &mut Scratch) {
        let result = self.model.run_batch(&mut scratch.batch);
        let rows = scratch.rows.len() as u64;
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        self.counters.max_rows.fetch_max(rows, Ordering::Relaxed);
        let counter = if result.is_ok() {
            &self.counters.scored
        } else {
            &self.counters.failed
        };
        counter.fetch_add(rows, Ordering::Relaxed);
        for (row, (stream, seq)) in scratch.rows.drain(..).enumerate() {
            let probability = match &result {
                Ok(()) => {
                    scratch.batch.write_back(row, &mut stream.state());
                    Ok(scratch.batch.probability(row))
                }
                Err(e) => Err(e.clone()),
            };
            if !stream.closed.load(Ordering::Acquire) {
                deliver(&stream, WindowOutcome { seq, probability });
            }
            // Only now may the stream's next window run: outcomes leave in order.
            stream.in_flight.store(false, Ordering::Release);
        }
    }

    /// After a run: windows may wait that no job will look at (left behind because
    /// the batch was full or their stream was in this run); schedule one if so.
    fn schedule_leftovers(self: &Arc<Self>) {
        let schedule = {
            let mut queue = self.queue();
            !queue.windows.is_empty() && !std::mem::replace(&mut queue.job_waiting, true)
        };
        // A refusal here (the High line full of other work) leaves the windows for
        // the job the next submit schedules.
        if schedule && Self::schedule(self).is_err() {
            self.counters
                .schedule_retries
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    fn take_scratch(&self) -> Scratch {
        let free = self
            .scratch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        free.unwrap_or_else(|| Scratch {
            batch: SileroBatch::new(self.config.rate, self.config.max_batch),
            rows: Vec::with_capacity(self.config.max_batch),
        })
    }

    fn give_back(&self, scratch: Scratch) {
        self.scratch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(scratch);
    }

    /// Removes a window that could not be scheduled (the last one of `stream` with `seq`).
    fn withdraw(&self, stream: &Arc<StreamShared>, seq: u64) {
        let mut queue = self.queue();
        if let Some(pos) = queue
            .windows
            .iter()
            .rposition(|w| w.seq == seq && Arc::ptr_eq(&w.stream, stream))
        {
            queue.windows.remove(pos);
            self.counters.queued.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Calls a stream's sink; a panicking sink fails only its own delivery, so the other
/// rows of the batch are still delivered and released.
fn deliver(stream: &StreamShared, outcome: WindowOutcome) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (stream.sink)(outcome)));
}
