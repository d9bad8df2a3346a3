//! What `sim-load` watches while the calls run, from plain OS threads.
//!
//! - [`Sampler`]: every [`SAMPLE_EVERY`] reads the process CPU time, the
//!   resident set (`VmRSS`), the Rust heap (the counting allocator) and the
//!   runtime's alive tasks.
//! - [`WakeProbe`]: every [`WAKE_EVERY`] a plain thread sends the current time
//!   to a task on the runtime through an unbounded channel; the task records how
//!   long it waited until it ran (the scheduling delay a task woken from outside
//!   the runtime sees, e.g. by a socket or a model thread).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::{alloc_count, cpu};

/// How often the sampler reads its clocks and counters.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How often the wake probe wakes its task.
pub(crate) const WAKE_EVERY: Duration = Duration::from_millis(5);

/// One reading of the sampler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// When, seconds since the step's origin.
    pub(crate) wall_s: f64,
    /// Process CPU time, seconds.
    pub(crate) cpu_s: f64,
    /// Resident set, bytes (0 when /proc is not readable).
    pub(crate) rss_bytes: u64,
    /// Bytes allocated by Rust code.
    pub(crate) heap_bytes: i64,
    /// Tasks alive on the runtime.
    pub(crate) alive_tasks: usize,
}

/// Takes one sample now.
pub(crate) fn sample(origin: Instant, runtime: &Handle) -> Sample {
    Sample {
        wall_s: origin.elapsed().as_secs_f64(),
        cpu_s: cpu::process_ns() as f64 / 1e9,
        rss_bytes: rss_bytes(),
        heap_bytes: alloc_count::net_bytes(),
        alive_tasks: runtime.metrics().num_alive_tasks(),
    }
}

/// The resident set of this process (`VmRSS` in /proc/self/status), bytes.
pub(crate) fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// A thread that samples until stopped.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Starts sampling on absolute deadlines `SAMPLE_EVERY` apart.
    pub(crate) fn start(origin: Instant, runtime: Handle) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::with_capacity(4096);
            let mut next = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                samples.push(sample(origin, &runtime));
                next += SAMPLE_EVERY;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            samples.push(sample(origin, &runtime));
            samples
        });
        Sampler { stop, thread }
    }

    /// Stops the thread and returns its samples in time order.
    pub(crate) fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One wake-up: when it was sent (seconds since the origin) and how long the
/// task took to run after it (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wake {
    /// When the thread sent it, seconds since the step's origin.
    pub(crate) sent_s: f64,
    /// From the send to the task running, milliseconds.
    pub(crate) delay_ms: f64,
}

/// The wake probe: a thread and the task it wakes.
pub(crate) struct WakeProbe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    task: tokio::task::JoinHandle<Vec<Wake>>,
}

impl WakeProbe {
    /// Spawns the task on `runtime` and starts the thread.
    pub(crate) fn start(origin: Instant, runtime: &Handle) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Instant>();
        let task = runtime.spawn(async move {
            let mut wakes = Vec::with_capacity(8192);
            while let Some(sent) = rx.recv().await {
                wakes.push(Wake {
                    sent_s: sent.saturating_duration_since(origin).as_secs_f64(),
                    delay_ms: sent.elapsed().as_secs_f64() * 1000.0,
                });
            }
            wakes
        });
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                next += WAKE_EVERY;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                if tx.send(Instant::now()).is_err() {
                    break;
                }
            }
        });
        WakeProbe { stop, thread, task }
    }

    /// Stops the thread (which closes the channel) and collects the wakes.
    pub(crate) async fn finish(self) -> Vec<Wake> {
        self.stop.store(true, Ordering::Relaxed);
        // The thread only sleeps and sends; it ends within one period.
        let _ = self.thread.join();
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_set_is_read_from_proc() {
        assert!(rss_bytes() > 1024 * 1024, "a running process holds > 1 MiB");
    }

    #[test]
    fn the_wake_probe_sees_every_wake_up_and_the_sampler_its_task() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let origin = Instant::now();
        let sampler = Sampler::start(origin, rt.handle().clone());
        let probe = WakeProbe::start(origin, rt.handle());
        std::thread::sleep(Duration::from_millis(200));
        let wakes = rt.block_on(probe.finish());
        let samples = sampler.finish();
        // 200 ms at one per 5 ms: about 40 (a loaded machine may lose a few).
        assert!((20..=45).contains(&wakes.len()), "{} wakes", wakes.len());
        assert!(wakes.iter().all(|w| w.delay_ms >= 0.0 && w.sent_s > 0.0));
        assert!(samples.len() >= 5, "{} samples", samples.len());
        assert!(samples.iter().any(|s| s.alive_tasks == 1), "the probe task");
        assert!(samples.windows(2).all(|w| w[0].wall_s <= w[1].wall_s));
    }
}
