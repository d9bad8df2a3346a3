//! `brisvox-bench sim-load`: N simulated calls in one process, in real time,
//! on a multi-thread runtime, with mock providers (issue #7; the spec's
//! "In-process load baseline").
//!
//! Each step of `--sessions` starts its N calls evenly over `--ramp-ms`; every
//! call runs the engine's full pipeline ([`call`]) with its own seeded mocks.
//! While they run, a sampler thread reads the process CPU time, RSS, Rust heap
//! and alive tasks, and a wake probe measures how long a task woken from a
//! plain thread waits to run ([`probes`]). After the last call the step waits
//! up to `--settle-ms` for the alive tasks to fall back to their count before
//! the step (the leak check). The figures are defined in [`metrics`] and
//! `bench/results/README.md`.
//!
//! The results (`OUT` markdown and `OUT` with a `.json` extension, every
//! sample) are written only when every step is clean: no call failed, every
//! turn was answered, no barge-in, no task leaked and no mark missing.
//! Otherwise nothing is written and the command exits non-zero.

mod call;
mod metrics;
mod probes;
mod results;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use call::{CallOutcome, Script};
use probes::{Sampler, WakeProbe};
use results::{Run, Step};

/// Usage of `sim-load`.
pub(crate) const USAGE: &str = "usage: brisvox-bench sim-load [options]
  --sessions LIST   calls per step, comma-separated, run in order (default 100,500,1000)
  --workers N       tokio worker threads (default: the available cores)
  --seed N          seed of every mock latency (default 1)
  --turns N         utterances per call (default 3)
  --speech-ms MS    length of each utterance (default 1200)
  --gap-ms MS       silence after each utterance, room for the answer (default 5000)
  --ramp-ms MS      calls of a step start evenly over this time (default 1000)
  --settle-ms MS    most time to wait for the tasks to end after a step (default 3000)
  --out PATH        writes PATH (markdown) and PATH with .json (every sample);
                    default: the markdown to stdout";

/// Options of `sim-load`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Options {
    /// Calls per step.
    pub(crate) sessions: Vec<usize>,
    /// Tokio worker threads.
    pub(crate) workers: usize,
    /// Seed of the mocks.
    pub(crate) seed: u64,
    /// The caller's script.
    pub(crate) script: Script,
    /// Ramp over which a step's calls start, ms.
    pub(crate) ramp_ms: u64,
    /// Longest wait for the tasks to end after a step, ms.
    pub(crate) settle_ms: u64,
    /// Markdown output (JSON next to it), or stdout.
    pub(crate) out: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sessions: vec![100, 500, 1000],
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            seed: 1,
            script: Script {
                turns: 3,
                speech_ms: 1200,
                gap_ms: 5000,
            },
            ramp_ms: 1000,
            settle_ms: 3000,
            out: None,
        }
    }
}

/// Parses the options; `Ok(None)` for `--help`.
pub(crate) fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
        let bad = || format!("bad value for {flag}: {value}");
        let number = || value.parse::<u64>().map_err(|_| bad());
        match flag.as_str() {
            "--sessions" => {
                o.sessions = value
                    .split(',')
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad())?;
            }
            "--workers" => o.workers = number()? as usize,
            "--seed" => o.seed = number()?,
            "--turns" => o.script.turns = number()? as usize,
            "--speech-ms" => o.script.speech_ms = number()?,
            "--gap-ms" => o.script.gap_ms = number()?,
            "--ramp-ms" => o.ramp_ms = number()?,
            "--settle-ms" => o.settle_ms = number()?,
            "--out" => o.out = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}\n\n{USAGE}")),
        }
    }
    check(&o)?;
    Ok(Some(o))
}

fn check(o: &Options) -> Result<(), String> {
    if o.sessions.is_empty() || o.sessions.contains(&0) {
        return Err("--sessions needs call counts above zero".to_owned());
    }
    if o.workers == 0 || o.script.turns == 0 {
        return Err("--workers and --turns must be above zero".to_owned());
    }
    if o.script.speech_ms < 200 {
        return Err("--speech-ms must be at least 200 (the VAD needs speech)".to_owned());
    }
    Ok(())
}

/// Runs `sim-load`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let Some(options) = parse(args)? else {
        println!("{USAGE}");
        return Ok(());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let audio: Arc<[i16]> = call::caller_samples(options.script).into();
    let mut run = Run::new(&options);
    for &n in &options.sessions {
        eprintln!("sim-load: {n} calls ...");
        let step = runtime.block_on(run_step(n, &options, Arc::clone(&audio)));
        eprintln!("sim-load: {}", step.one_line());
        run.steps.push(step);
    }
    run.finish();
    results::write_if_clean(&run, options.out.as_deref())
}

/// Runs one step of `n` calls and measures it.
async fn run_step(n: usize, o: &Options, audio: Arc<[i16]>) -> Step {
    let handle = tokio::runtime::Handle::current();
    let origin = Instant::now();
    let sampler = Sampler::start(origin, handle.clone());
    let probe = WakeProbe::start(origin, &handle);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = probes::sample(origin, &handle);
    let outcomes = run_calls(n, o, audio).await;
    let settled = settle(before.alive_tasks, o.settle_ms, origin, &handle).await;
    let wakes = probe.finish().await;
    let samples = sampler.finish();
    Step::measure(n, origin, before, settled, &outcomes, &samples, &wakes)
}

/// Starts `n` calls evenly over the ramp and waits for all of them.
async fn run_calls(n: usize, o: &Options, audio: Arc<[i16]>) -> Vec<CallOutcome> {
    let t0 = tokio::time::Instant::now();
    let ramp = Duration::from_millis(o.ramp_ms);
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let due = t0 + ramp.mul_f64(i as f64 / n as f64);
        if due > tokio::time::Instant::now() {
            tokio::time::sleep_until(due).await;
        }
        let audio = Arc::clone(&audio);
        handles.push(tokio::spawn(call::run_one(
            i as u64, o.seed, o.script, audio,
        )));
    }
    let mut outcomes = Vec::with_capacity(n);
    for handle in handles {
        outcomes.push(handle.await.unwrap_or_else(|e| CallOutcome {
            failure: Some(format!("the call's task failed: {e}")),
            turns_expected: o.script.turns as u64,
            ..CallOutcome::default()
        }));
    }
    outcomes
}

/// Waits until no more tasks are alive than `baseline` (or `settle_ms` passed)
/// and samples then.
async fn settle(
    baseline: usize,
    settle_ms: u64,
    origin: Instant,
    handle: &tokio::runtime::Handle,
) -> probes::Sample {
    let deadline = Instant::now() + Duration::from_millis(settle_ms);
    loop {
        let now = probes::sample(origin, handle);
        if now.alive_tasks <= baseline || Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_parse_and_bad_ones_are_refused() {
        let o = parse(&args("--sessions 4,8 --workers 2 --turns 2 --out x.md"))
            .unwrap()
            .unwrap();
        assert_eq!(o.sessions, vec![4, 8]);
        assert_eq!((o.workers, o.script.turns), (2, 2));
        assert_eq!(o.out, Some(PathBuf::from("x.md")));
        assert_eq!(parse(&args("--help")).unwrap(), None);
        for bad in [
            "--sessions 4,x",
            "--sessions 0",
            "--workers 0",
            "--turns",
            "--speech-ms 50",
            "--frobnicate 1",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }
}
