//! The inference pool: model calls run on named OS threads, never on tokio workers.
//!
//! An [`InferencePool`] owns a fixed set of worker threads (`<name>-<i>`) and two
//! bounded lines of waiting jobs: [`Priority::High`] (the VAD batches, which every
//! call's stop and start events wait for) and [`Priority::Normal`] (everything
//! else). A worker that becomes free takes a waiting High job first.
//!
//! Driving rules, all of them decided at submit or at job start:
//!
//! - **Bounded.** A line that is full refuses the job at once with
//!   [`PoolError::Saturated`] (reject newest): shed load rather than build latency.
//! - **Deadline.** A job whose deadline has passed when a worker picks it up is
//!   skipped, and its caller gets [`PoolError::TimedOut`]. A running job is never
//!   interrupted.
//! - **Cancellation.** A job whose [`JobHandle`] was dropped before it started is
//!   skipped (counted as `cancelled`).
//! - **Panic isolation.** A job that panics fails only itself
//!   ([`PoolError::Panicked`]); its worker keeps serving.
//! - **Observable.** Lock-free counters and per-job wait / run timing
//!   ([`InferencePool::stats`]). A job is counted (its ending and its run time)
//!   before its result is sent, so a caller who holds a result sees its job in
//!   the next snapshot.
//!
//! Results come back through a `tokio::sync::oneshot` inside the [`JobHandle`],
//! which is a future for async callers and has [`JobHandle::wait`] for threads.
//! The pool needs no tokio runtime.
//!
//! **Inline mode** ([`InferencePool::inline`]) runs each job on the caller's
//! thread inside `submit`, so its result is ready when `submit` returns. The
//! deterministic simulator uses it: on tokio's paused clock, real threads would
//! make the order of events depend on the OS scheduler.
//!
//! The handle is cheap to clone; the threads are joined when the last handle is
//! dropped (jobs still waiting then are dropped, and their callers get
//! [`PoolError::ShutDown`]).

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Which line a job waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Priority {
    /// Latency-critical work (VAD batches): taken before any waiting Normal job.
    High,
    /// Everything else (turn analyses, heavy DSP).
    Normal,
}

/// How a pool is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Thread name prefix; workers are named `<name>-<index>`.
    pub name: String,
    /// Number of worker threads (0 is raised to 1).
    pub threads: usize,
    /// How many High jobs may wait (not counting running ones) before submit refuses.
    pub high_capacity: usize,
    /// How many Normal jobs may wait before submit refuses.
    pub normal_capacity: usize,
}

/// Default number of waiting jobs per line.
pub const DEFAULT_LINE_CAPACITY: usize = 1024;

impl PoolConfig {
    /// The defaults under a name: half the cores (at least 1) and
    /// [`DEFAULT_LINE_CAPACITY`] waiting jobs per line.
    pub fn named(name: impl Into<String>) -> Self {
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        PoolConfig {
            name: name.into(),
            threads: (cores / 2).max(1),
            high_capacity: DEFAULT_LINE_CAPACITY,
            normal_capacity: DEFAULT_LINE_CAPACITY,
        }
    }
}

/// Why a job produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// The job's line was full; the job was not queued.
    #[error("PoolSaturated: the {priority:?} line already holds {capacity} waiting jobs")]
    Saturated {
        /// The line that refused.
        priority: Priority,
        /// That line's capacity.
        capacity: usize,
    },
    /// The job's deadline passed before a worker started it; it never ran.
    #[error("the job's deadline passed before it started; it was skipped")]
    TimedOut,
    /// The job panicked; only this job failed.
    #[error("the job panicked: {message}")]
    Panicked {
        /// The panic payload when it was a string.
        message: String,
    },
    /// The pool shut down before the job ran.
    #[error("the inference pool shut down before the job ran")]
    ShutDown,
}

/// Bounds (upper, inclusive) of the timing histogram buckets, in microseconds;
/// the last bucket holds everything above the last bound. A 1-2-5 series from
/// 10 µs to 5 s, fine enough to read a p95 queue wait off the buckets (the
/// server exports them on `/metrics`).
pub const TIMING_BUCKET_BOUNDS_US: [u64; 19] = [
    10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
    500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
];

/// Number of histogram buckets in a [`TimingStats`].
pub const TIMING_BUCKETS: usize = TIMING_BUCKET_BOUNDS_US.len() + 1;

/// Wait or run time of the jobs seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimingStats {
    /// Jobs measured.
    pub count: u64,
    /// Sum of their times, microseconds.
    pub total_us: u64,
    /// The longest, microseconds.
    pub max_us: u64,
    /// Counts per bucket of [`TIMING_BUCKET_BOUNDS_US`] (last: above the last bound).
    pub buckets: [u64; TIMING_BUCKETS],
}

impl TimingStats {
    /// Mean time in microseconds (0 when nothing was measured).
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_us as f64 / self.count as f64
        }
    }
}

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Worker threads (0 in inline mode).
    pub threads: usize,
    /// Jobs accepted by `submit` (refused ones are not counted here).
    pub submitted: u64,
    /// Jobs refused because their line was full.
    pub rejected: u64,
    /// Jobs skipped because their deadline passed before they started.
    pub timed_out: u64,
    /// Jobs skipped because their handle was dropped before they started.
    pub cancelled: u64,
    /// Jobs that panicked.
    pub panicked: u64,
    /// Jobs that ran to completion (a panicking job is not counted here).
    pub completed: u64,
    /// High jobs waiting now.
    pub queued_high: usize,
    /// Normal jobs waiting now.
    pub queued_normal: usize,
    /// Time from submit to start, of every started job.
    pub wait: TimingStats,
    /// Time from start to end, of every started job.
    pub run: TimingStats,
}

/// A submitted job's result: a future for async callers, [`JobHandle::wait`] for threads.
///
/// Dropping the handle before the job starts cancels the job.
#[derive(Debug)]
pub struct JobHandle<T> {
    rx: oneshot::Receiver<Result<T, PoolError>>,
}

impl<T> JobHandle<T> {
    /// Blocks the current thread until the result is there.
    ///
    /// Panics when called on a tokio runtime thread (tokio forbids blocking there);
    /// await the handle instead.
    pub fn wait(self) -> Result<T, PoolError> {
        self.rx.blocking_recv().unwrap_or(Err(PoolError::ShutDown))
    }

    /// The result if it is ready (always, in inline mode), without blocking.
    pub fn try_take(&mut self) -> Option<Result<T, PoolError>> {
        match self.rx.try_recv() {
            Ok(result) => Some(result),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(PoolError::ShutDown)),
        }
    }
}

/// Cancel safety: dropping the future before it resolves cancels an unstarted job;
/// a running job finishes and its result is discarded.
impl<T> Future for JobHandle<T> {
    type Output = Result<T, PoolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(PoolError::ShutDown)))
    }
}

/// What a worker tells a queued job.
enum Start {
    /// Run it.
    Run,
    /// Do not run it; hand the caller this error.
    Skip(PoolError),
}

/// How a job ended, for the counters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum JobEnd {
    Completed,
    Panicked,
    Skipped,
    Cancelled,
}

/// Records how a job ended (and its run time); a task calls it exactly once,
/// before it hands the result to its caller.
type Record<'a> = &'a dyn Fn(JobEnd);

type Task = Box<dyn FnOnce(Start, Record<'_>) + Send>;

struct QueuedJob {
    enqueued_at: Instant,
    deadline: Option<Instant>,
    task: Task,
}

struct Lines {
    high: VecDeque<QueuedJob>,
    normal: VecDeque<QueuedJob>,
    shutting_down: bool,
}

#[derive(Default)]
struct AtomicTiming {
    count: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
    buckets: [AtomicU64; TIMING_BUCKETS],
}

impl AtomicTiming {
    fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        let bucket = TIMING_BUCKET_BOUNDS_US
            .iter()
            .position(|&bound| us <= bound)
            .unwrap_or(TIMING_BUCKETS - 1);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> TimingStats {
        TimingStats {
            count: self.count.load(Ordering::Relaxed),
            total_us: self.total_us.load(Ordering::Relaxed),
            max_us: self.max_us.load(Ordering::Relaxed),
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
        }
    }
}

#[derive(Default)]
struct Counters {
    submitted: AtomicU64,
    rejected: AtomicU64,
    timed_out: AtomicU64,
    cancelled: AtomicU64,
    panicked: AtomicU64,
    completed: AtomicU64,
    queued_high: AtomicUsize,
    queued_normal: AtomicUsize,
    wait: AtomicTiming,
    run: AtomicTiming,
}

impl Counters {
    fn count_end(&self, end: JobEnd) {
        let counter = match end {
            JobEnd::Completed => &self.completed,
            JobEnd::Panicked => &self.panicked,
            JobEnd::Skipped => &self.timed_out,
            JobEnd::Cancelled => &self.cancelled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the workers and the handles share.
struct Core {
    config: PoolConfig,
    lines: Mutex<Lines>,
    work: Condvar,
    counters: Counters,
}

impl Core {
    /// The lines, even if a thread panicked while holding the lock: the lock is only
    /// held for queue pushes and pops, which leave the queues consistent.
    fn lines(&self) -> MutexGuard<'_, Lines> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_job(&self) -> Option<QueuedJob> {
        let mut lines = self.lines();
        loop {
            if lines.shutting_down {
                return None;
            }
            if let Some(job) = lines.high.pop_front() {
                self.counters.queued_high.fetch_sub(1, Ordering::Relaxed);
                return Some(job);
            }
            if let Some(job) = lines.normal.pop_front() {
                self.counters.queued_normal.fetch_sub(1, Ordering::Relaxed);
                return Some(job);
            }
            lines = self
                .work
                .wait(lines)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Starts (or skips) one job; the task records its timing and ending
    /// before it sends the result.
    fn start(&self, job: QueuedJob) {
        let started = Instant::now();
        if job.deadline.is_some_and(|d| started > d) {
            let record = |end| self.counters.count_end(end);
            (job.task)(Start::Skip(PoolError::TimedOut), &record);
            return;
        }
        self.counters.wait.record(started - job.enqueued_at);
        let record = |end| {
            if end != JobEnd::Cancelled {
                self.counters.run.record(started.elapsed());
            }
            self.counters.count_end(end);
        };
        (job.task)(Start::Run, &record);
    }
}

fn worker_loop(core: Arc<Core>) {
    while let Some(job) = core.next_job() {
        core.start(job);
    }
}

/// Owned by the handles; dropping the last one stops and joins the workers.
struct Shared {
    core: Arc<Core>,
    /// Empty in inline mode.
    workers: Vec<(ThreadId, JoinHandle<()>)>,
    inline: bool,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.core.lines().shutting_down = true;
        self.core.work.notify_all();
        // Queued jobs are dropped with `core` once the workers are gone; their
        // callers see `ShutDown`.
        let me = thread::current().id();
        for (id, handle) in self.workers.drain(..) {
            // The last handle may be dropped by a job on a worker: that worker
            // exits by itself after the job and cannot join itself.
            if id != me {
                let _ = handle.join();
            }
        }
        let mut lines = self.core.lines();
        lines.high.clear();
        lines.normal.clear();
    }
}

/// A pool of named OS threads running model calls; see the module docs.
#[derive(Clone)]
pub struct InferencePool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for InferencePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InferencePool")
            .field("name", &self.shared.core.config.name)
            .field("threads", &self.shared.workers.len())
            .field("inline", &self.shared.inline)
            .finish()
    }
}

impl InferencePool {
    /// Starts `config.threads` workers (at least 1).
    ///
    /// Panics if the OS refuses to start a thread (out of resources at startup).
    pub fn new(mut config: PoolConfig) -> Self {
        config.threads = config.threads.max(1);
        let core = Self::core(config);
        let workers = (0..core.config.threads)
            .map(|i| {
                let core = Arc::clone(&core);
                let handle = thread::Builder::new()
                    .name(format!("{}-{i}", core.config.name))
                    .spawn(move || worker_loop(core))
                    // Thread creation fails only when the process is out of
                    // resources at startup; there is nothing to degrade to.
                    .expect("the OS starts an inference pool thread");
                (handle.thread().id(), handle)
            })
            .collect();
        InferencePool {
            shared: Arc::new(Shared {
                core,
                workers,
                inline: false,
            }),
        }
    }

    /// A pool without threads: each job runs on the caller's thread inside
    /// [`submit`](Self::submit), so its result is ready when `submit` returns.
    ///
    /// Counters and panic isolation work as in a threaded pool; `threads` is
    /// ignored, the capacities never refuse (nothing waits), and a deadline that
    /// has already passed at submit gives `TimedOut`.
    pub fn inline(config: PoolConfig) -> Self {
        InferencePool {
            shared: Arc::new(Shared {
                core: Self::core(config),
                workers: Vec::new(),
                inline: true,
            }),
        }
    }

    fn core(config: PoolConfig) -> Arc<Core> {
        Arc::new(Core {
            lines: Mutex::new(Lines {
                high: VecDeque::with_capacity(config.high_capacity),
                normal: VecDeque::with_capacity(config.normal_capacity),
                shutting_down: false,
            }),
            config,
            work: Condvar::new(),
            counters: Counters::default(),
        })
    }

    /// The configuration the pool runs with (threads raised to at least 1).
    pub fn config(&self) -> &PoolConfig {
        &self.shared.core.config
    }

    /// Whether jobs run on the caller's thread ([`InferencePool::inline`]).
    pub fn is_inline(&self) -> bool {
        self.shared.inline
    }

    /// Queues `job` on the `priority` line.
    ///
    /// Refuses at once with [`PoolError::Saturated`] when that line is full. A job
    /// not started by `deadline` is skipped and its handle resolves to
    /// [`PoolError::TimedOut`].
    pub fn submit<T: Send + 'static>(
        &self,
        priority: Priority,
        deadline: Option<Instant>,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JobHandle<T>, PoolError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            priority,
            deadline,
            Box::new(move |start, record| run_task(start, record, tx, job)),
        )?;
        Ok(JobHandle { rx })
    }

    /// Queues a job nobody waits for: it reports through its own side effects.
    ///
    /// Same lines, bounds, deadline and panic isolation as [`submit`](Self::submit),
    /// but there is no handle, so it cannot be cancelled (and costs no channel).
    pub fn submit_detached(
        &self,
        priority: Priority,
        deadline: Option<Instant>,
        job: impl FnOnce() + Send + 'static,
    ) -> Result<(), PoolError> {
        self.enqueue(
            priority,
            deadline,
            Box::new(move |start, record| {
                record(match start {
                    Start::Skip(_) => JobEnd::Skipped,
                    Start::Run => match catch_unwind(AssertUnwindSafe(job)) {
                        Ok(()) => JobEnd::Completed,
                        Err(_) => JobEnd::Panicked,
                    },
                })
            }),
        )
    }

    fn enqueue(
        &self,
        priority: Priority,
        deadline: Option<Instant>,
        task: Task,
    ) -> Result<(), PoolError> {
        let core = &self.shared.core;
        let queued = QueuedJob {
            enqueued_at: Instant::now(),
            deadline,
            task,
        };
        if self.shared.inline {
            core.counters.submitted.fetch_add(1, Ordering::Relaxed);
            core.start(queued);
            return Ok(());
        }
        {
            let mut lines = core.lines();
            let (line, capacity, depth) = match priority {
                Priority::High => (
                    &mut lines.high,
                    core.config.high_capacity,
                    &core.counters.queued_high,
                ),
                Priority::Normal => (
                    &mut lines.normal,
                    core.config.normal_capacity,
                    &core.counters.queued_normal,
                ),
            };
            if line.len() >= capacity {
                drop(lines);
                core.counters.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(PoolError::Saturated { priority, capacity });
            }
            line.push_back(queued);
            depth.fetch_add(1, Ordering::Relaxed);
            core.counters.submitted.fetch_add(1, Ordering::Relaxed);
        }
        core.work.notify_one();
        Ok(())
    }

    /// A snapshot of the counters (each read atomically; not one consistent cut).
    ///
    /// A job is counted before its result is sent: once a caller has a job's
    /// result, every later snapshot includes that job.
    pub fn stats(&self) -> PoolStats {
        let c = &self.shared.core.counters;
        PoolStats {
            threads: self.shared.workers.len(),
            submitted: c.submitted.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            timed_out: c.timed_out.load(Ordering::Relaxed),
            cancelled: c.cancelled.load(Ordering::Relaxed),
            panicked: c.panicked.load(Ordering::Relaxed),
            completed: c.completed.load(Ordering::Relaxed),
            queued_high: c.queued_high.load(Ordering::Relaxed),
            queued_normal: c.queued_normal.load(Ordering::Relaxed),
            wait: c.wait.snapshot(),
            run: c.run.snapshot(),
        }
    }
}

/// Runs (or skips) the user's job, records how it ended, then sends its result.
///
/// Recording first is what lets a caller who has its result see the job in
/// [`InferencePool::stats`]: the channel's send happens before its receive.
fn run_task<T>(
    start: Start,
    record: Record<'_>,
    tx: oneshot::Sender<Result<T, PoolError>>,
    job: impl FnOnce() -> T,
) {
    let (end, result) = match start {
        Start::Skip(err) => (JobEnd::Skipped, Err(err)),
        Start::Run if tx.is_closed() => return record(JobEnd::Cancelled),
        Start::Run => match catch_unwind(AssertUnwindSafe(job)) {
            Ok(value) => (JobEnd::Completed, Ok(value)),
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                (JobEnd::Panicked, Err(PoolError::Panicked { message }))
            }
        },
    };
    record(end);
    let _ = tx.send(result);
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_use_half_the_cores_and_at_least_one_thread() {
        let config = PoolConfig::named("t");
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(config.threads, (cores / 2).max(1));
        assert!(config.threads >= 1);
        let pool = InferencePool::new(PoolConfig {
            threads: 0,
            ..PoolConfig::named("zero")
        });
        assert_eq!(pool.stats().threads, 1);
    }

    #[test]
    fn timing_buckets_split_at_their_bounds() {
        let t = AtomicTiming::default();
        t.record(Duration::from_micros(10));
        t.record(Duration::from_micros(11));
        t.record(Duration::from_millis(30));
        t.record(Duration::from_secs(50));
        let s = t.snapshot();
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[1], 1);
        let at_50ms = TIMING_BUCKET_BOUNDS_US.iter().position(|&b| b == 50_000);
        assert_eq!(s.buckets[at_50ms.unwrap()], 1);
        assert_eq!(s.buckets[TIMING_BUCKETS - 1], 1);
        assert_eq!(s.max_us, 50_000_000);
        assert_eq!(s.count, 4);
        assert!(TIMING_BUCKET_BOUNDS_US.windows(2).all(|w| w[0] < w[1]));
    }
}
