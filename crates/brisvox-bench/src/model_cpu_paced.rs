//! `model-cpu --only silero-paced`: the VAD service with windows arriving in real
//! time from unsynchronised streams, before and after side by side: A = no
//! linger on the graphs with the `If` on `sr` (the behaviour before), B = the
//! defaults (the adaptive linger, the 16 kHz branch inlined), C = the adaptive
//! linger on the graphs with the `If` (the linger's share of B). The
//! configurations run interleaved, the first one rotated round by round so none
//! always runs first.

use std::fmt::Write as _;
use std::sync::Arc;

use brisvox_models::vad::linger::{DEFAULT_MAX_LINGER, Linger};
use brisvox_models::vad::silero::{GraphOptimizationLevel, SileroModel, SileroOptions};

use crate::model_cpu::{Cell, Paced, SileroBenchOptions, Windows, audio, load, paced, percentile};

/// Windows per second of one call (32 ms windows).
const WINDOWS_PER_SECOND: f64 = 1000.0 / 32.0;
/// The detector's start and stop thresholds (`[vad]` defaults): a window on the
/// other side of one of them under B than under A would be a changed decision.
const THRESHOLDS: [f32; 2] = [0.5, 0.35];

/// (name, linger, whether the model inlines the 16 kHz branch).
fn policies() -> [(&'static str, Linger, bool); 3] {
    [
        ("A: before (no linger, `If`)", Linger::Off, false),
        ("B: after (defaults)", Linger::default(), true),
        ("C: adaptive linger, `If`", Linger::default(), false),
    ]
}

/// Largest |p_a - p_b| and the windows on different sides of a threshold.
#[derive(Default, Clone, Copy)]
struct Agreement {
    max_diff: f32,
    flips: usize,
    windows: usize,
}

impl Agreement {
    fn add(&mut self, a: &[f32], b: &[f32]) {
        for (&x, &y) in a.iter().zip(b) {
            self.windows += 1;
            if x.is_nan() || y.is_nan() {
                self.flips += 1;
                continue;
            }
            self.max_diff = self.max_diff.max((x - y).abs());
            self.flips += THRESHOLDS.iter().filter(|&&t| (x > t) != (y > t)).count();
        }
    }
}

/// Measures and returns the markdown section.
pub(crate) fn silero_paced_section(opts: &SileroBenchOptions) -> Result<String, String> {
    let (audio, source) = audio();
    let windows = Windows::new(audio);
    let inlined = Arc::new(load(GraphOptimizationLevel::All, 1)?);
    if !inlined.options().inline_16k {
        return Err("the default model does not inline the 16 kHz branch: B is not after".into());
    }
    let with_if = Arc::new(
        SileroModel::load_with(SileroOptions {
            inline_16k: false,
            ..inlined.options()
        })
        .map_err(|e| e.to_string())?,
    );
    for m in [&inlined, &with_if] {
        crate::model_cpu::direct(m, &windows, 64, 0.2, &mut Cell::default());
    }
    let policies = policies();
    let mut cells: Vec<Vec<Paced>> = opts
        .streams
        .iter()
        .map(|_| policies.iter().map(|_| Paced::default()).collect())
        .collect();
    let mut agreement: Vec<[Agreement; 2]> =
        opts.streams.iter().map(|_| Default::default()).collect();
    for round in 0..opts.rounds {
        eprintln!(
            "model-cpu: silero paced round {}/{}",
            round + 1,
            opts.rounds
        );
        for (i, &n) in opts.streams.iter().enumerate() {
            for j in 0..policies.len() {
                let p = (round + j) % policies.len();
                let (_, linger, inline) = policies[p];
                let model = if inline { &inlined } else { &with_if };
                paced(model, &windows, n, linger, opts.seconds, &mut cells[i][p]);
            }
            let a = &cells[i][0].probabilities;
            for (k, other) in [1, 2].into_iter().enumerate() {
                agreement[i][k].add(a, &cells[i][other].probabilities);
            }
        }
    }
    Ok(render(opts, &source, &cells, &agreement))
}

fn cpu(p: &Paced) -> f64 {
    Cell::median(&p.cell.cpu_us)
}

fn render(
    opts: &SileroBenchOptions,
    source: &str,
    cells: &[Vec<Paced>],
    agreement: &[[Agreement; 2]],
) -> String {
    let policies = policies();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Silero VAD through the service, paced in real time: before and after side by side\n"
    );
    let _ = writeln!(
        md,
        "One VAD pool thread, batches of at most 128 rows, runs of two rows or more on the \
         folded graph. Stream s submits window k at `k * 32 ms + s * 32 ms / streams` \
         (unsynchronised calls) for about {:.1} s per cell; audio: {source}. A = the \
         behaviour before: `Linger::Off` (no wait), graphs with the model's `If` on `sr` \
         (`inline_16k: false`); B = the defaults after: `Linger::Adaptive({} ms)` (waits, \
         at most until the oldest window is {} ms old, only when the streams active over \
         the last 64 ms will send at least two more windows meanwhile) and the 16 kHz \
         branch inlined; C = the adaptive linger on the graphs with the `If` (the \
         linger's share; B / C is the inlining's). {} rounds, the configurations \
         interleaved and the first rotated each round; CPU = process CPU (all threads but \
         the pacer's) per window, median (best) of the rounds; rows per run: median of the \
         rounds; latency = submit to sink over all rounds; CPU per call-second = CPU per \
         window x 31.25 windows.\n",
        opts.seconds,
        DEFAULT_MAX_LINGER.as_millis(),
        DEFAULT_MAX_LINGER.as_millis(),
        opts.rounds,
    );
    let _ = writeln!(
        md,
        "| streams | configuration | CPU us / window | rows per run | latency p50 / p99 us | CPU ms per call-second | Rust allocations / window |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for (i, &n) in opts.streams.iter().enumerate() {
        for (j, (name, _, _)) in policies.iter().enumerate() {
            let p = &cells[i][j];
            let _ = writeln!(
                md,
                "| {n} | {name} | {:.1} ({:.1}) | {:.1} | {:.0} / {:.0} | {:.2} | {:.2} |",
                cpu(p),
                Cell::min(&p.cell.cpu_us),
                Cell::median(&p.mean_rows),
                percentile(&p.latency_us, 0.5),
                percentile(&p.latency_us, 0.99),
                cpu(p) * WINDOWS_PER_SECOND / 1e3,
                Cell::median(&p.allocations_per_window),
            );
        }
    }
    let _ = writeln!(
        md,
        "\n### A / B and A / C: CPU per window before over after, and the decisions\n"
    );
    let _ = writeln!(
        md,
        "Probabilities of the same windows of the same streams in the same round, A against \
         B and against C; a flip is a window above a detector threshold (0.5 start, 0.35 \
         stop) under one configuration and not under the other.\n"
    );
    let _ = writeln!(
        md,
        "| streams | A / B CPU | A / C CPU | max abs(p_A - p_B) | flips A-B | max abs(p_A - p_C) | flips A-C | windows compared (each) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for (i, &n) in opts.streams.iter().enumerate() {
        let (a, b, c) = (cpu(&cells[i][0]), cpu(&cells[i][1]), cpu(&cells[i][2]));
        let [ab, ac] = agreement[i];
        let _ = writeln!(
            md,
            "| {n} | {:.2} | {:.2} | {:.2e} | {} | {:.2e} | {} | {} |",
            a / b,
            a / c,
            ab.max_diff,
            ab.flips,
            ac.max_diff,
            ac.flips,
            ab.windows,
        );
    }
    md
}
