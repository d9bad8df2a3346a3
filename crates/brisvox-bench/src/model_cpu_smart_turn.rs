//! CPU and wall time of one Smart Turn v3.2 analysis, by part and thread count.
//!
//! Measures, each as the median of `runs` warm runs (after 3 warm-up runs):
//!
//! - the Rust feature extractor alone (8 s of audio -> [80, 800]);
//! - the model alone at 1 and 2 ONNX Runtime intra-op threads, and at 2 threads
//!   with intra-op spinning off;
//! - a whole analysis (features + model) in the same three configurations;
//! - the 8 s ring snapshot on the caller's thread.
//!
//! CPU is read two ways: the process's on-CPU time summed over all its threads from
//! `/proc/self/task/*/schedstat` (nanoseconds), so ONNX Runtime's intra-op workers
//! are included. Their spinning after a run is included too: each run is followed
//! by a 100 ms pause before the CPU is read (ONNX Runtime's workers spin for tens of
//! ms after a parallel run), and the CPU of an idle 100 ms pause (the
//! control, measured the same way) is subtracted; and the calling thread's own
//! on-CPU time (`/proc/thread-self/schedstat`), which is all of the work at one
//! intra-op thread and is not disturbed by other threads of the process. The
//! configurations are interleaved round by round so a noisy neighbour hits all of
//! them alike.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use brisvox_models::smart_turn::{
    FEATURES_LEN, FeatureExtractor, SmartTurn, SmartTurnConfig, SmartTurnRing, WINDOW_SAMPLES,
    snapshot_buffer,
};

/// Pause after each run before reading the CPU, so spinning workers are counted.
const SETTLE: Duration = Duration::from_millis(100);
const WARM_UP_RUNS: usize = 3;

/// Process CPU time so far (all threads), in nanoseconds.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Deterministic speech-like test audio: noise bursts under a syllable-rate envelope.
fn test_audio(samples: usize) -> Vec<i16> {
    let mut state: u32 = 0x1234_5678;
    (0..samples)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let noise = f64::from(state) / f64::from(u32::MAX) - 0.5;
            let t = i as f64 / 16_000.0;
            let envelope = (t * 4.0 * std::f64::consts::PI).sin().max(0.0);
            let voice = (2.0 * std::f64::consts::PI * 140.0 * t).sin();
            ((0.6 * voice + 0.4 * noise) * envelope * 9_000.0) as i16
        })
        .collect()
}

#[derive(Default)]
struct Samples {
    wall_us: Vec<f64>,
    process_cpu_us: Vec<f64>,
    thread_cpu_us: Vec<f64>,
}

/// CPU of an idle settle pause, subtracted from every run.
#[derive(Clone, Copy)]
struct Control {
    process_ns: f64,
    thread_ns: f64,
}

impl Samples {
    fn push(&mut self, run: &Run, control: Control) {
        self.wall_us.push(run.wall.as_secs_f64() * 1e6);
        self.process_cpu_us
            .push((run.process_ns as f64 - control.process_ns).max(0.0) / 1e3);
        self.thread_cpu_us
            .push((run.thread_ns as f64 - control.thread_ns).max(0.0) / 1e3);
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// This thread's CPU time so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One timed run: wall time of the call; CPU of the call plus the settle pause,
/// of the whole process and of the calling thread alone.
struct Run {
    wall: Duration,
    process_ns: u64,
    thread_ns: u64,
}

fn measure(f: &mut dyn FnMut()) -> Run {
    let (p0, t0_cpu) = (process_cpu_ns(), thread_cpu_ns());
    let t0 = Instant::now();
    f();
    let wall = t0.elapsed();
    std::thread::sleep(SETTLE);
    Run {
        wall,
        process_ns: process_cpu_ns().saturating_sub(p0),
        thread_ns: thread_cpu_ns().saturating_sub(t0_cpu),
    }
}

/// Measures one Smart Turn analysis and returns a markdown section (no header
/// lines about the machine: the caller's report has them).
pub(crate) fn smart_turn_section(runs: usize) -> Result<String, String> {
    let runs = runs.max(1);
    let audio = test_audio(WINDOW_SAMPLES);
    // (label, session): 1 and 2 intra-op threads with ONNX Runtime's default
    // spinning, and 2 threads with spinning off.
    let models: Vec<(&str, SmartTurn)> = [
        (1usize, true, "1"),
        (2, true, "2"),
        (2, false, "2, no spin"),
    ]
    .into_iter()
    .map(|(threads, spinning, label)| {
        let config = SmartTurnConfig {
            intra_threads: threads,
            intra_op_spinning: spinning,
            ..SmartTurnConfig::default()
        };
        let model = SmartTurn::load(config).map_err(|e| e.to_string())?;
        model.warm_up().map_err(|e| e.to_string())?;
        Ok((label, model))
    })
    .collect::<Result<_, String>>()?;
    let mut extractor = FeatureExtractor::new();
    let mut features = vec![0.0f32; FEATURES_LEN];
    extractor
        .compute_into(&audio, &mut features)
        .map_err(|e| e.to_string())?;

    // Control: CPU of an idle settle pause.
    let idle: Vec<Run> = (0..runs.min(20)).map(|_| measure(&mut || {})).collect();
    let control = Control {
        process_ns: percentile(
            &idle.iter().map(|r| r.process_ns as f64).collect::<Vec<_>>(),
            0.5,
        ),
        thread_ns: percentile(
            &idle.iter().map(|r| r.thread_ns as f64).collect::<Vec<_>>(),
            0.5,
        ),
    };

    let mut feats = Samples::default();
    let mut model_only: Vec<Samples> = models.iter().map(|_| Samples::default()).collect();
    let mut whole: Vec<Samples> = models.iter().map(|_| Samples::default()).collect();
    let mut probabilities = Vec::new();
    for round in 0..WARM_UP_RUNS + runs {
        let keep = round >= WARM_UP_RUNS;
        let run = measure(&mut || {
            // `features` was allocated with FEATURES_LEN values, the only error case.
            extractor
                .compute_into(&audio, &mut features)
                .expect("buffer is FEATURES_LEN long");
        });
        if keep {
            feats.push(&run, control);
        }
        for (i, (_, model)) in models.iter().enumerate() {
            let mut p = 0.0;
            let model_run = measure(&mut || {
                p = model.probability_of_features(&features).unwrap_or(f32::NAN);
            });
            let mut verdict = None;
            let whole_run = measure(&mut || verdict = model.analyze(&audio).ok());
            if keep {
                model_only[i].push(&model_run, control);
                whole[i].push(&whole_run, control);
                probabilities.push(p);
            }
        }
    }
    let (snap_8s_us, snap_3s_us) = ring_snapshot_us();

    let mut md = String::new();
    let _ = writeln!(md, "## Smart Turn v3.2: CPU and wall time per analysis\n");
    let _ = writeln!(
        md,
        "Median (p50) and p90 of {runs} warm runs after {WARM_UP_RUNS} warm-up runs, \
         configurations interleaved round by round. Input: 8 s of deterministic \
         speech-like audio (the work does not depend on the content: the model input \
         is always [1, 80, 800]). Process CPU = on-CPU time of every thread of the \
         process (`/proc/self/task/*/schedstat`), read 100 ms after each run so ONNX \
         Runtime's spinning intra-op workers are counted, minus an idle 100 ms control \
         ({:.0} us); it also catches any other thread of the process that ran meanwhile. \
         Caller CPU = the calling thread's own on-CPU time \
         (`/proc/thread-self/schedstat`): all of the work at 1 intra-op thread and for \
         the features, the caller's share at 2. Session: ENABLE_ALL, sequential, 1 inter-op thread (the \
         reference settings).\n",
        control.process_ns / 1e3
    );
    let _ = writeln!(
        md,
        "| what | intra-op threads | wall p50 ms | wall p90 ms | process CPU p50 ms | \
         process CPU p90 ms | caller CPU p50 ms |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let mut row = |what: &str, threads: &str, s: &Samples| {
        let _ = writeln!(
            md,
            "| {what} | {threads} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            percentile(&s.wall_us, 0.5) / 1e3,
            percentile(&s.wall_us, 0.9) / 1e3,
            percentile(&s.process_cpu_us, 0.5) / 1e3,
            percentile(&s.process_cpu_us, 0.9) / 1e3,
            percentile(&s.thread_cpu_us, 0.5) / 1e3,
        );
    };
    row("features (Rust)", "-", &feats);
    for (i, (threads, _)) in models.iter().enumerate() {
        row("model", threads, &model_only[i]);
    }
    for (i, (threads, _)) in models.iter().enumerate() {
        row("analysis (features + model)", threads, &whole[i]);
    }
    let spread = probabilities
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
    let _ = writeln!(
        md,
        "\nRing snapshot on the caller's thread (copy into a recycled buffer, median \
         of 2,000): full 8 s {snap_8s_us:.2} us, 3 s turn {snap_3s_us:.2} us.\n\n\
         Probabilities over all runs and configurations: min {:.9}, max {:.9} \
         (identical runs give identical bits).",
        spread.0, spread.1
    );
    Ok(md)
}

/// Median time of a ring snapshot of a full 8 s turn and of a 3 s turn, in us.
fn ring_snapshot_us() -> (f64, f64) {
    let audio = test_audio(WINDOW_SAMPLES + 16_000);
    let mut out = snapshot_buffer();
    let mut time = |ring: &SmartTurnRing| {
        let mut t = Vec::with_capacity(2_000);
        for _ in 0..2_000 {
            let t0 = Instant::now();
            std::hint::black_box(ring.snapshot_into(&mut out));
            t.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        percentile(&t, 0.5)
    };
    let mut full = SmartTurnRing::new();
    for frame in audio.chunks(320) {
        full.push(frame);
    }
    let mut short = SmartTurnRing::new();
    for (k, frame) in audio.chunks(320).enumerate() {
        short.push(frame);
        if k == 299 {
            short.end_turn(); // the turn's audio is the last 3 s (150 frames)
        }
    }
    (time(&full), time(&short))
}
