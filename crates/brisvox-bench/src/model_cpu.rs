//! `model-cpu`, Silero part: CPU and wall time per Silero VAD window, unbatched and
//! batched, directly on the model and through the VAD service, and memory per stream.
//!
//! CPU is the process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`: every thread, so the
//! pool's workers are included) over a run of windows, divided by the windows. The
//! configurations are interleaved round by round so a noisy neighbour hits all of
//! them alike; each cell reports the median and the best (minimum) of the rounds.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime;
use brisvox_models::vad::linger::Linger;
use brisvox_models::vad::service::{VadService, VadServiceConfig, VadStream};
use brisvox_models::vad::silero::{
    GraphOptimizationLevel, SileroBatch, SileroKernel, SileroModel, SileroOptions, SileroRate,
    SileroState,
};

use crate::{alloc_count, cpu};

/// Rows per model run in the batched configurations (the service's default cap).
const MAX_BATCH: usize = 128;

/// (streams, linger ms) of the paced runs with a fixed linger.
const LINGER_CASES: [(usize, u64); 4] = [(100, 2), (100, 5), (500, 2), (500, 5)];

/// What the Silero measurement runs.
#[derive(Debug, Clone)]
pub(crate) struct SileroBenchOptions {
    /// CPU seconds per configuration per round (direct runs) / wall seconds (paced).
    pub seconds: f64,
    /// Rounds; configurations are interleaved within each round.
    pub rounds: usize,
    /// Stream counts of the batched rows.
    pub streams: Vec<usize>,
    /// Another Silero model file with the same interface to measure side by side with
    /// the default model (for example the output of
    /// `scripts/goldens/silero_fold_batch.py`).
    pub compare_model: Option<std::path::PathBuf>,
}

/// 16 kHz audio for the windows: a speech fixture when present, else a synthetic
/// voice-like signal (the cost does not depend on the content).
pub(crate) fn audio() -> (Vec<f32>, String) {
    let path = runtime::model_dir_candidates()
        .iter()
        .filter_map(|m| m.parent().map(|p| p.join("fixtures/en_two_utterances.wav")))
        .find(|p| p.is_file());
    if let Some(path) = path
        && let Ok(mut reader) = hound::WavReader::open(&path)
        && reader.spec().sample_rate == 16_000
    {
        let pcm: Vec<f32> = reader
            .samples::<i16>()
            .filter_map(Result::ok)
            .map(|s| f32::from(s) / 32768.0)
            .collect();
        if pcm.len() >= 16_000 {
            return (pcm, "fixtures/en_two_utterances.wav".to_owned());
        }
    }
    let pcm = (0..16_000 * 10)
        .map(|i| {
            let t = i as f32 / 16_000.0;
            let env = (t * 4.0 * std::f32::consts::PI).sin().max(0.0);
            0.3 * env * (2.0 * std::f32::consts::PI * 140.0 * t).sin()
        })
        .collect();
    (pcm, "synthetic 140 Hz voice-like tone".to_owned())
}

pub(crate) struct Windows {
    audio: Vec<f32>,
    count: usize,
}

impl Windows {
    pub(crate) fn new(audio: Vec<f32>) -> Self {
        let count = audio.len() / 512;
        Windows { audio, count }
    }

    /// Window `k` of stream `s` (streams start at different offsets).
    fn get(&self, s: usize, k: u64) -> &[f32] {
        let i = (s * 37 + k as usize) % self.count;
        &self.audio[i * 512..(i + 1) * 512]
    }
}

/// One measured cell over the rounds: per-window CPU and wall in microseconds.
#[derive(Default)]
pub(crate) struct Cell {
    pub(crate) cpu_us: Vec<f64>,
    wall_us: Vec<f64>,
    windows: u64,
    runs: u64,
}

impl Cell {
    pub(crate) fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            f64::NAN
        } else {
            v[v.len() / 2]
        }
    }

    pub(crate) fn min(v: &[f64]) -> f64 {
        v.iter().copied().fold(f64::NAN, f64::min)
    }
}

/// Runs `streams` streams directly on the model (no pool) for `seconds` of CPU:
/// every tick gives each stream one window, in runs of up to `MAX_BATCH` rows.
pub(crate) fn direct(
    model: &SileroModel,
    windows: &Windows,
    streams: usize,
    seconds: f64,
    cell: &mut Cell,
) {
    let mut states: Vec<SileroState> = (0..streams)
        .map(|_| SileroState::new(SileroRate::Hz16000))
        .collect();
    let mut batch = SileroBatch::new(SileroRate::Hz16000, streams.min(MAX_BATCH));
    let cpu0 = cpu::process_ns();
    let t0 = Instant::now();
    let budget = (seconds * 1e9) as u64;
    let (mut n, mut runs, mut tick) = (0u64, 0u64, 0u64);
    let ids: Vec<usize> = (0..streams).collect();
    while cpu::process_ns() - cpu0 < budget || tick < 2 {
        for chunk in ids.chunks(MAX_BATCH) {
            batch.clear();
            for &s in chunk {
                batch
                    .push(&states[s], windows.get(s, tick))
                    .expect("chunk fits the batch");
            }
            model.run_batch(&mut batch).expect("model runs");
            for (row, &s) in chunk.iter().enumerate() {
                std::hint::black_box(batch.probability(row));
                batch.write_back(row, &mut states[s]);
            }
            runs += 1;
            n += chunk.len() as u64;
        }
        tick += 1;
    }
    let cpu = (cpu::process_ns() - cpu0) as f64 / 1e3;
    let wall = t0.elapsed().as_secs_f64() * 1e6;
    cell.cpu_us.push(cpu / n as f64);
    cell.wall_us.push(wall / n as f64);
    cell.windows += n;
    cell.runs += runs;
}

/// Like [`direct`], but each tick follows 32 ms of idleness (as real-time windows
/// do): thread CPU of the tick only, so the cost of cold caches after a pause shows.
fn after_idle(
    model: &SileroModel,
    windows: &Windows,
    streams: usize,
    seconds: f64,
    cell: &mut Cell,
) {
    let mut states: Vec<SileroState> = (0..streams)
        .map(|_| SileroState::new(SileroRate::Hz16000))
        .collect();
    let mut batch = SileroBatch::new(SileroRate::Hz16000, streams.min(MAX_BATCH));
    let ids: Vec<usize> = (0..streams).collect();
    let ticks = ((seconds / 0.032).ceil() as u64).max(4);
    let (mut cpu_ns, mut wall, mut n) = (0u64, Duration::ZERO, 0u64);
    for tick in 0..ticks {
        std::thread::sleep(Duration::from_millis(32));
        let c0 = cpu::thread_ns();
        let t0 = Instant::now();
        for chunk in ids.chunks(MAX_BATCH) {
            batch.clear();
            for &s in chunk {
                batch
                    .push(&states[s], windows.get(s, tick))
                    .expect("chunk fits the batch");
            }
            model.run_batch(&mut batch).expect("model runs");
            for (row, &s) in chunk.iter().enumerate() {
                batch.write_back(row, &mut states[s]);
            }
            n += chunk.len() as u64;
        }
        wall += t0.elapsed();
        cpu_ns += cpu::thread_ns() - c0;
    }
    cell.cpu_us.push(cpu_ns as f64 / 1e3 / n as f64);
    cell.wall_us.push(wall.as_secs_f64() * 1e6 / n as f64);
    cell.windows += n;
}

struct ServiceRig {
    service: VadService,
    streams: Vec<VadStream>,
    /// (stream, seq, when the sink ran, probability)
    done: mpsc::Receiver<(usize, u64, Instant, f32)>,
}

fn service_rig(model: &Arc<SileroModel>, streams: usize, linger: Linger) -> ServiceRig {
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("bench-vad")
    });
    let service = VadService::new(
        Arc::clone(model),
        pool,
        VadServiceConfig {
            max_batch: MAX_BATCH,
            // Room for 1 s of every stream's windows: on a loaded machine the pool's
            // thread falls behind for a while (a backlog, not a failure).
            queue_capacity: streams * 32 + 64,
            linger,
            ..VadServiceConfig::new(SileroRate::Hz16000)
        },
    );
    let (tx, done) = mpsc::channel();
    let streams = (0..streams)
        .map(|s| {
            let tx = tx.clone();
            service.open_stream(move |o| {
                let p = o.probability.unwrap_or(f32::NAN);
                let _ = tx.send((s, o.seq, Instant::now(), p));
            })
        })
        .collect();
    ServiceRig {
        service,
        streams,
        done,
    }
}

/// Latencies (submit to sink) and the service's batching, paced in real time.
#[derive(Default)]
pub(crate) struct Paced {
    pub(crate) cell: Cell,
    pub(crate) allocations_per_window: Vec<f64>,
    pub(crate) latency_us: Vec<f64>,
    pub(crate) mean_rows: Vec<f64>,
    /// The last run's probabilities, window `k` of stream `s` at `k * streams + s`.
    pub(crate) probabilities: Vec<f32>,
}

/// Through the service, windows arriving in real time: stream `s` submits its
/// window `k` at `k * 32 ms + s * 32 ms / streams` (evenly spread, as unsynchronised
/// calls would), for `seconds` of wall time. CPU excludes the pacing thread's own.
pub(crate) fn paced(
    model: &Arc<SileroModel>,
    windows: &Windows,
    streams: usize,
    linger: Linger,
    seconds: f64,
    out: &mut Paced,
) {
    let mut rig = service_rig(model, streams, linger);
    let period = Duration::from_millis(32);
    let ticks = ((seconds / 0.032).ceil() as u64).max(4);
    let total = ticks * streams as u64;
    let sent_at: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let before = rig.service.stats();
    let allocs0 = alloc_count::allocations();
    let cpu0 = cpu::process_ns();
    let me0 = cpu::thread_ns();
    let t0 = Instant::now();
    let mut receipts = Vec::with_capacity(total as usize);
    for k in 0..ticks {
        for s in 0..streams {
            let due = t0 + period * k as u32 + period * s as u32 / streams as u32;
            let now = Instant::now();
            if due > now + Duration::from_micros(200) {
                std::thread::sleep(due - now);
            }
            let at = t0.elapsed().as_nanos() as u64;
            sent_at[k as usize * streams + s].store(at, Ordering::Relaxed);
            rig.streams[s]
                .submit(windows.get(s, k))
                .expect("the queue has room");
        }
        while let Ok(t) = rig.done.try_recv() {
            receipts.push(t);
        }
    }
    while receipts.len() < total as usize {
        receipts.push(rig.done.recv().expect("every window is delivered"));
    }
    let wall = t0.elapsed().as_secs_f64() * 1e6;
    let pacer = (cpu::thread_ns() - me0) as f64 / 1e3;
    let cpu = (cpu::process_ns() - cpu0) as f64 / 1e3 - pacer;
    let after = rig.service.stats();
    // Includes the bench's own receipts vector growth (amortised, a few).
    out.allocations_per_window
        .push((alloc_count::allocations() - allocs0) as f64 / total as f64);
    out.probabilities = vec![f32::NAN; total as usize];
    for &(s, k, t, p) in &receipts {
        out.probabilities[k as usize * streams + s] = p;
        let sent = sent_at[k as usize * streams + s].load(Ordering::Relaxed) as f64 / 1e3;
        out.latency_us
            .push((t.duration_since(t0).as_secs_f64() * 1e6 - sent).max(0.0));
    }
    let runs = after.batches - before.batches;
    out.cell.cpu_us.push(cpu / total as f64);
    out.cell.wall_us.push(wall / total as f64);
    out.cell.windows += total;
    out.cell.runs += runs;
    out.mean_rows.push(total as f64 / runs.max(1) as f64);
}

/// Through the service, bursts: every tick all streams submit at once and the tick
/// ends when every outcome is back. The best case for batching.
fn burst(
    model: &Arc<SileroModel>,
    windows: &Windows,
    streams: usize,
    seconds: f64,
    cell: &mut Cell,
) {
    let mut rig = service_rig(model, streams, Linger::Off);
    let before = rig.service.stats();
    let cpu0 = cpu::process_ns();
    let t0 = Instant::now();
    let budget = (seconds * 1e9) as u64;
    let mut tick = 0u64;
    while cpu::process_ns() - cpu0 < budget || tick < 2 {
        for (s, stream) in rig.streams.iter_mut().enumerate() {
            stream.submit(windows.get(s, tick)).expect("queue has room");
        }
        for _ in 0..streams {
            rig.done.recv().expect("every window is delivered");
        }
        tick += 1;
    }
    let n = tick * streams as u64;
    let cpu = (cpu::process_ns() - cpu0) as f64 / 1e3;
    let wall = t0.elapsed().as_secs_f64() * 1e6;
    cell.cpu_us.push(cpu / n as f64);
    cell.wall_us.push(wall / n as f64);
    cell.windows += n;
    cell.runs += rig.service.stats().batches - before.batches;
}

/// The model on ONNX Runtime (the sections that measure its sessions and graphs).
pub(crate) fn load(
    optimization: GraphOptimizationLevel,
    intra_threads: usize,
) -> Result<SileroModel, String> {
    SileroModel::load_with(SileroOptions {
        sessions: 1,
        intra_threads,
        optimization,
        kernel: SileroKernel::OnnxRuntime,
        ..SileroOptions::default()
    })
    .map_err(|e| e.to_string())
}

/// `model-cpu --only silero-native`: ONNX Runtime's sessions (A: the shipped graph
/// for one row, the batch-folded one for more) beside the network in Rust (B, the
/// default), side by side.
pub(crate) fn silero_native_section(opts: &SileroBenchOptions) -> Result<String, String> {
    let (audio, _) = audio();
    let windows = Windows::new(audio);
    let onnx = Arc::new(load(GraphOptimizationLevel::All, 1)?);
    let native = Arc::new(
        SileroModel::load_with(SileroOptions {
            kernel: SileroKernel::Native,
            ..SileroOptions::default()
        })
        .map_err(|e| e.to_string())?,
    );
    for m in [&onnx, &native] {
        direct(m, &windows, 64, 0.2, &mut Cell::default());
        direct(m, &windows, 1, 0.1, &mut Cell::default());
    }
    let mut md = String::from(
        "## Silero VAD: computed in Rust (`SileroKernel::Native`) beside ONNX Runtime\n\n\
         A: ONNX Runtime, one session, 1 intra-op thread, batches of two rows or more \
         on the folded graph. B: the network in Rust from the same file's weights \
         (`vad/native.rs`). Columns as in the side-by-side table of the Silero section.\n",
    );
    md.push_str(&compare(
        ("ONNX Runtime (`SileroKernel::OnnxRuntime`)", &onnx),
        ("Rust (`SileroKernel::Native`)", &native),
        &windows,
        opts,
    ));
    Ok(md)
}

/// `model-cpu --only silero-inline`: the graphs with the top-level `If` on `sr`
/// (A) beside those with its 16 kHz branch inlined (B), side by side.
pub(crate) fn silero_inline_section(opts: &SileroBenchOptions) -> Result<String, String> {
    let (audio, _) = audio();
    let windows = Windows::new(audio);
    let with_if = Arc::new(load(GraphOptimizationLevel::All, 1)?);
    let inlined = Arc::new(
        SileroModel::load_with(SileroOptions {
            inline_16k: !with_if.options().inline_16k,
            ..with_if.options()
        })
        .map_err(|e| e.to_string())?,
    );
    let (a, b) = if with_if.options().inline_16k {
        (inlined, with_if)
    } else {
        (with_if, inlined)
    };
    for m in [&a, &b] {
        direct(m, &windows, 64, 0.2, &mut Cell::default());
        direct(m, &windows, 1, 0.1, &mut Cell::default());
    }
    let mut md = String::from(
        "## Silero VAD: the `If` on `sr` inlined for 16 kHz (`SileroOptions::inline_16k`)\n\n\
         Both models fold batches of two rows or more; one session each, 1 intra-op thread. \
         Columns as in the side-by-side table of the Silero section.\n",
    );
    md.push_str(&compare(
        ("`inline_16k: false` (the `If` on `sr` runs its branch)", &a),
        ("`inline_16k: true` (the 16 kHz branch inlined)", &b),
        &windows,
        opts,
    ));
    Ok(md)
}

/// The model as it was before batches ran on the folded graph: every run on the
/// shipped graph (its `If` on `sr` too).
fn load_unfolded() -> Result<SileroModel, String> {
    SileroModel::load_with(SileroOptions {
        fold_batches: false,
        inline_16k: false,
        kernel: SileroKernel::OnnxRuntime,
        ..SileroOptions::default()
    })
    .map_err(|e| e.to_string())
}

pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Resident memory in bytes (`/proc/self/statm`).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Memory: the model's fixed cost and the per-stream cost of the service.
fn memory(model: &Arc<SileroModel>) -> Result<String, String> {
    let mut md = String::new();
    let before = rss_bytes();
    let extra = load(GraphOptimizationLevel::All, 1)?;
    let session_bytes = rss_bytes().saturating_sub(before);
    drop(extra);
    let streams = 10_000;
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named("bench-mem")
    });
    let service = VadService::new(
        Arc::clone(model),
        pool,
        VadServiceConfig::new(SileroRate::Hz16000),
    );
    let before = alloc_count::net_bytes();
    let open: Vec<VadStream> = (0..streams).map(|_| service.open_stream(|_| {})).collect();
    let per_stream = (alloc_count::net_bytes() - before) as f64 / streams as f64
        - std::mem::size_of::<VadStream>() as f64;
    drop(open);
    let _ = writeln!(
        md,
        "- One more Silero model (one ONNX Runtime session of the shipped graph for \
         single windows and one of the batch-folded graph for batches, both with the \
         16 kHz branch inlined, plus the model file kept for an 8 kHz session, with their \
         state): {:.1} MiB resident, once per process (per session pair; a pool of N \
         VAD threads wants N).",
        session_bytes as f64 / (1024.0 * 1024.0)
    );
    let _ = writeln!(
        md,
        "- Per stream: `SileroState` is {} bytes (64 context + 256 state floats); an \
         open `VadStream` of the service costs {:.0} bytes of heap (counted by the \
         allocator over {streams} streams: the shared state, its lock and flags, the \
         sink box) plus its {}-byte handle.",
        std::mem::size_of::<SileroState>(),
        per_stream,
        std::mem::size_of::<VadStream>()
    );
    let batch_bytes = MAX_BATCH * (576 + 3 * 256 + 1) * 4;
    let _ = writeln!(
        md,
        "- Per running batch job (not per stream): one reused `SileroBatch` of {MAX_BATCH} \
         rows, {:.0} KiB; windows waiting in the queue take 2 KiB each (the queue is \
         bounded).",
        batch_bytes as f64 / 1024.0
    );
    Ok(md)
}

/// Measures Silero and returns the markdown section.
pub(crate) fn silero_section(opts: &SileroBenchOptions) -> Result<String, String> {
    let (audio, source) = audio();
    let windows = Windows::new(audio);
    let model = Arc::new(load(GraphOptimizationLevel::All, 1)?);
    // Warm-up: first runs allocate ONNX Runtime's buffers.
    direct(&model, &windows, 64, 0.2, &mut Cell::default());

    let variants: Vec<(&str, SileroModel)> = vec![
        (
            "optimisation off",
            load(GraphOptimizationLevel::Disable, 1)?,
        ),
        (
            "optimisation basic (level 1)",
            load(GraphOptimizationLevel::Level1, 1)?,
        ),
        (
            "optimisation extended (level 2)",
            load(GraphOptimizationLevel::Level2, 1)?,
        ),
        ("2 intra-op threads", load(GraphOptimizationLevel::All, 2)?),
    ];
    let variant_streams = 100;

    let mut direct_cells: Vec<Cell> = opts.streams.iter().map(|_| Cell::default()).collect();
    let mut idle_cells: Vec<Cell> = opts.streams.iter().map(|_| Cell::default()).collect();
    let mut burst_cells: Vec<Cell> = opts.streams.iter().map(|_| Cell::default()).collect();
    let mut paced_cells: Vec<Paced> = opts.streams.iter().map(|_| Paced::default()).collect();
    let mut variant_cells: Vec<Cell> = variants.iter().map(|_| Cell::default()).collect();
    let mut linger_cells: Vec<Paced> = LINGER_CASES.iter().map(|_| Paced::default()).collect();
    for round in 0..opts.rounds {
        eprintln!("model-cpu: silero round {}/{}", round + 1, opts.rounds);
        for (i, &n) in opts.streams.iter().enumerate() {
            direct(&model, &windows, n, opts.seconds, &mut direct_cells[i]);
            after_idle(&model, &windows, n, opts.seconds, &mut idle_cells[i]);
            burst(&model, &windows, n, opts.seconds, &mut burst_cells[i]);
            paced(
                &model,
                &windows,
                n,
                Linger::Off,
                opts.seconds,
                &mut paced_cells[i],
            );
        }
        for (i, &(n, linger_ms)) in LINGER_CASES.iter().enumerate() {
            let linger = Linger::Fixed(Duration::from_millis(linger_ms));
            paced(
                &model,
                &windows,
                n,
                linger,
                opts.seconds,
                &mut linger_cells[i],
            );
        }
        for (i, (_, m)) in variants.iter().enumerate() {
            direct(
                m,
                &windows,
                variant_streams,
                opts.seconds,
                &mut variant_cells[i],
            );
        }
    }

    let mut md = String::new();
    let _ = writeln!(md, "## Silero VAD: CPU per 32 ms window\n");
    let _ = writeln!(
        md,
        "Model `silero_vad.onnx` (v6), 16 kHz, 576 floats per row. Session: 1 intra-op \
         thread, sequential execution, graph optimisation `All` unless the row says \
         otherwise; runs of two rows or more on the batch-folded graph (the default, \
         `SileroOptions::fold_batches`; side by side with the shipped graph below). \
         Audio: {source}. CPU = process CPU time (all threads) per window; \
         {} rounds of about {:.1} s per cell, configurations interleaved; median (best) \
         over the rounds. Runs hold at most {MAX_BATCH} rows (the service's default cap), \
         so 500 streams are 4 runs per tick.\n",
        opts.rounds, opts.seconds
    );
    let _ = writeln!(md, "### On the model directly (no pool)\n");
    let _ = writeln!(
        md,
        "Every tick gives each stream one window; the streams of a tick share runs. \
         1 stream = unbatched. Back to back: ticks follow each other at once (hot \
         caches). After 32 ms idle: each tick follows a 32 ms sleep, as real-time \
         windows do; thread CPU of the tick only.\n"
    );
    let _ = writeln!(
        md,
        "| streams | rows per run | back to back: CPU us / window | wall us / window | wall ms / run | after 32 ms idle: CPU us / window |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for (i, &n) in opts.streams.iter().enumerate() {
        let c = &direct_cells[i];
        let rows = c.windows as f64 / c.runs.max(1) as f64;
        let _ = writeln!(
            md,
            "| {n} | {rows:.0} | {:.1} ({:.1}) | {:.1} ({:.1}) | {:.2} | {:.1} ({:.1}) |",
            Cell::median(&c.cpu_us),
            Cell::min(&c.cpu_us),
            Cell::median(&c.wall_us),
            Cell::min(&c.wall_us),
            Cell::median(&c.wall_us) * rows / 1e3,
            Cell::median(&idle_cells[i].cpu_us),
            Cell::min(&idle_cells[i].cpu_us),
        );
    }
    let _ = writeln!(
        md,
        "\n### Session options at {variant_streams} streams (direct)\n"
    );
    let _ = writeln!(md, "| session | CPU us / window | wall us / window |");
    let _ = writeln!(md, "|---|---|---|");
    let base = opts.streams.iter().position(|&n| n == variant_streams);
    if let Some(i) = base {
        let c = &direct_cells[i];
        let _ = writeln!(
            md,
            "| default (all, 1 thread) | {:.1} ({:.1}) | {:.1} ({:.1}) |",
            Cell::median(&c.cpu_us),
            Cell::min(&c.cpu_us),
            Cell::median(&c.wall_us),
            Cell::min(&c.wall_us)
        );
    }
    for (i, (name, _)) in variants.iter().enumerate() {
        let c = &variant_cells[i];
        let _ = writeln!(
            md,
            "| {name} | {:.1} ({:.1}) | {:.1} ({:.1}) |",
            Cell::median(&c.cpu_us),
            Cell::min(&c.cpu_us),
            Cell::median(&c.wall_us),
            Cell::min(&c.wall_us)
        );
    }
    let _ = writeln!(md, "\n### Through the VAD service (1 pool thread)\n");
    let _ = writeln!(
        md,
        "Burst: each tick every stream submits at once and the tick ends when all \
         outcomes are back (the best case for batching). Paced: real time, stream s \
         submits at `k * 32 ms + s * 32 ms / streams` (unsynchronised calls), for about \
         {:.1} s, without a linger (`Linger::Off`; the default adaptive linger is \
         measured beside it in its own section); CPU excludes the pacing thread; \
         latency = submit to sink.\n",
        opts.seconds
    );
    let _ = writeln!(
        md,
        "| streams | burst: CPU us / window | burst: rows per run | paced: CPU us / window | paced: rows per run | paced latency p50 / p99 us | paced: Rust allocations / window |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for (i, &n) in opts.streams.iter().enumerate() {
        let b = &burst_cells[i];
        let p = &paced_cells[i];
        let _ = writeln!(
            md,
            "| {n} | {:.1} ({:.1}) | {:.1} | {:.1} ({:.1}) | {:.1} | {:.0} / {:.0} | {:.2} |",
            Cell::median(&b.cpu_us),
            Cell::min(&b.cpu_us),
            b.windows as f64 / b.runs.max(1) as f64,
            Cell::median(&p.cell.cpu_us),
            Cell::min(&p.cell.cpu_us),
            Cell::median(&p.mean_rows),
            percentile(&p.latency_us, 0.5),
            percentile(&p.latency_us, 0.99),
            Cell::median(&p.allocations_per_window),
        );
    }
    let _ = writeln!(md, "\n### Paced, with a fixed linger (`Linger::Fixed`)\n");
    let _ = writeln!(
        md,
        "A batch job that starts with a small batch waits until the oldest waiting \
         window is `linger` old, so windows arriving meanwhile share the run, even \
         for a call alone (the default, adaptive, waits only with company).\n"
    );
    let _ = writeln!(
        md,
        "| streams | linger ms | CPU us / window | rows per run | latency p50 / p99 us |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (i, &(n, linger_ms)) in LINGER_CASES.iter().enumerate() {
        let p = &linger_cells[i];
        let _ = writeln!(
            md,
            "| {n} | {linger_ms} | {:.1} ({:.1}) | {:.1} | {:.0} / {:.0} |",
            Cell::median(&p.cell.cpu_us),
            Cell::min(&p.cell.cpu_us),
            Cell::median(&p.mean_rows),
            percentile(&p.latency_us, 0.5),
            percentile(&p.latency_us, 0.99),
        );
    }
    let unfolded = Arc::new(load_unfolded()?);
    md.push_str(&compare(
        (
            "shipped graph for every run (`fold_batches: false`, before)",
            &unfolded,
        ),
        ("folded batches (the default, after)", &model),
        &windows,
        opts,
    ));
    if let Some(path) = &opts.compare_model {
        let other = Arc::new(
            SileroModel::load_from(
                path,
                SileroOptions {
                    kernel: SileroKernel::OnnxRuntime,
                    ..SileroOptions::default()
                },
            )
            .map_err(|e| e.to_string())?,
        );
        let name = format!("`{}`", path.display());
        md.push_str(&compare(
            ("default", &model),
            (&name, &other),
            &windows,
            opts,
        ));
    }
    let _ = writeln!(md, "\n### Memory\n");
    md.push_str(&memory(&model)?);
    Ok(md)
}

/// Largest |p_a - p_b| over every window of `streams` streams of the fixture audio,
/// run in batches of `streams` rows through both models.
fn max_difference(a: &SileroModel, b: &SileroModel, windows: &Windows, streams: usize) -> f32 {
    let mut sa: Vec<SileroState> = (0..streams)
        .map(|_| SileroState::new(SileroRate::Hz16000))
        .collect();
    let mut sb = sa.clone();
    let mut ba = SileroBatch::new(SileroRate::Hz16000, streams);
    let mut bb = SileroBatch::new(SileroRate::Hz16000, streams);
    let mut worst = 0.0f32;
    for tick in 0..windows.count as u64 {
        ba.clear();
        bb.clear();
        for s in 0..streams {
            ba.push(&sa[s], windows.get(s, tick)).expect("fits");
            bb.push(&sb[s], windows.get(s, tick)).expect("fits");
        }
        a.run_batch(&mut ba).expect("model runs");
        b.run_batch(&mut bb).expect("model runs");
        for s in 0..streams {
            worst = worst.max((ba.probability(s) - bb.probability(s)).abs());
            ba.write_back(s, &mut sa[s]);
            bb.write_back(s, &mut sb[s]);
        }
    }
    worst
}

/// Side by side, interleaved round by round: two loaded models on the model
/// directly and through the VAD service, and their largest probability difference.
fn compare(
    (a_name, a): (&str, &Arc<SileroModel>),
    (b_name, b): (&str, &Arc<SileroModel>),
    windows: &Windows,
    opts: &SileroBenchOptions,
) -> String {
    let diff_alone = max_difference(a, b, windows, 1);
    let diff_batched = max_difference(a, b, windows, 16);
    // Per stream count: [direct, after idle, burst] x [a, b], paced [a, b].
    let mut cells: Vec<[Cell; 6]> = opts.streams.iter().map(|_| Default::default()).collect();
    let mut paced_cells: Vec<[Paced; 2]> =
        opts.streams.iter().map(|_| Default::default()).collect();
    for round in 0..opts.rounds {
        eprintln!("model-cpu: compare round {}/{}", round + 1, opts.rounds);
        for (i, &n) in opts.streams.iter().enumerate() {
            for (j, m) in [a, b].into_iter().enumerate() {
                direct(m, windows, n, opts.seconds, &mut cells[i][j]);
                after_idle(m, windows, n, opts.seconds, &mut cells[i][2 + j]);
                burst(m, windows, n, opts.seconds, &mut cells[i][4 + j]);
                paced(
                    m,
                    windows,
                    n,
                    Linger::Off,
                    opts.seconds,
                    &mut paced_cells[i][j],
                );
            }
        }
    }
    let mut md = String::new();
    let _ = writeln!(md, "\n### Side by side: A = {a_name}, B = {b_name}\n");
    let _ = writeln!(
        md,
        "The measurements above, A and B interleaved in each round. Largest |p_A - p_B| \
         over {} fixture windows: {diff_alone:.3e} one stream at a time, \
         {diff_batched:.3e} in batches of 16 streams.\n",
        windows.count
    );
    let _ = writeln!(
        md,
        "| streams | direct: A CPU us / window | direct: B | after 32 ms idle: A | after 32 ms idle: B | service burst: A | service burst: B | service paced: A | service paced: B | paced rows per run A / B |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    let f = |c: &Cell| {
        format!(
            "{:.1} ({:.1})",
            Cell::median(&c.cpu_us),
            Cell::min(&c.cpu_us)
        )
    };
    for (i, &n) in opts.streams.iter().enumerate() {
        let c = &cells[i];
        let p = &paced_cells[i];
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} / {:.1} |",
            f(&c[0]),
            f(&c[1]),
            f(&c[2]),
            f(&c[3]),
            f(&c[4]),
            f(&c[5]),
            f(&p[0].cell),
            f(&p[1].cell),
            Cell::median(&p[0].mean_rows),
            Cell::median(&p[1].mean_rows),
        );
    }
    md
}
