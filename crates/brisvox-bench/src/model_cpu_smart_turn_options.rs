//! ONNX Runtime session options for the int8 Smart Turn v3.2 graph: the time of
//! one model run under each, and how far each moves the probabilities from the
//! reference (issue #20 item 1).
//!
//! Every configuration runs at one intra-op thread (the server's default) and
//! differs from the reference settings (`ORT_ENABLE_ALL`, sequential execution,
//! memory pattern and CPU arena on, no extra config key) in one option. Each
//! gets its own session, warmed up, and the configurations are interleaved
//! round by round so a noisy neighbour hits all of them alike; each round
//! starts one configuration further on, so none always runs first (the
//! Python sweep, `bench/smart_turn_session_options.py`, always ran the
//! reference first). Timed: the model
//! alone on precomputed features (the features do not depend on the session),
//! wall time and the calling thread's on-CPU time (`/proc/thread-self/schedstat`:
//! all of the work at one intra-op thread).
//!
//! Deviation: every configuration runs the golden cases of
//! `crates/brisvox-models/tests/golden/smart_turn/` (Pipecat's features of the
//! fixtures, cut and complete) and is compared with the golden probabilities
//! (Python onnxruntime 1.32 with the reference settings): the largest absolute
//! difference, and how many verdicts (`p > 0.5`) flip.

use std::fmt::Write as _;
use std::time::Instant;

use brisvox_models::smart_turn::{
    COMPLETE_THRESHOLD, FEATURES_LEN, GraphOptimization, SessionOptions, SmartTurn,
    SmartTurnConfig, SoftmaxKernel,
};

const GOLDEN_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../brisvox-models/tests/golden/smart_turn"
);
const WARM_UP_RUNS: usize = 3;

/// One golden case: Pipecat's features and Python onnxruntime's probability.
struct Golden {
    name: String,
    features: Vec<f32>,
    probability: f32,
}

fn goldens() -> Result<Vec<Golden>, String> {
    let manifest = std::fs::read_to_string(format!("{GOLDEN_DIR}/manifest.tsv"))
        .map_err(|e| format!("{GOLDEN_DIR}/manifest.tsv: {e}"))?;
    let mut out = Vec::new();
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [name, .., probability, _complete, file] = cols.as_slice() else {
            continue;
        };
        let path = format!("{GOLDEN_DIR}/{file}");
        let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        let features: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if features.len() != FEATURES_LEN {
            return Err(format!("{path}: {} values", features.len()));
        }
        let probability = probability
            .parse()
            .map_err(|_| format!("{name}: bad probability {probability}"))?;
        out.push(Golden {
            name: (*name).to_owned(),
            features,
            probability,
        });
    }
    if out.is_empty() {
        return Err(format!("{GOLDEN_DIR}/manifest.tsv: no cases"));
    }
    Ok(out)
}

/// The configurations: a label and the settings (one option off the reference).
/// The reference is Pipecat's run: the shipped graph on ONNX Runtime's own
/// kernels; brisvox's default differs from it in the softmax kernel, the
/// elementwise chains as lookup tables and the attention products' int8
/// second operands (the second row; the third has the first two, the fourth
/// the softmax kernel alone), and every other row is the reference with one
/// option changed.
fn configurations() -> Vec<(&'static str, SmartTurnConfig)> {
    let mut rows = option_rows();
    for (_, config) in &mut rows {
        config.softmax = SoftmaxKernel::OnnxRuntime;
    }
    rows.insert(
        1,
        (
            "brisvox's default (exact softmax, lookup tables, int8 attention operands)",
            SmartTurnConfig::default(),
        ),
    );
    rows.insert(
        2,
        (
            "brisvox's exact softmax and lookup tables, uint8 attention operands",
            SmartTurnConfig {
                signed_attention: false,
                ..SmartTurnConfig::default()
            },
        ),
    );
    rows.insert(
        3,
        (
            "brisvox's exact softmax, no lookup tables",
            SmartTurnConfig {
                lookup_tables: false,
                ..SmartTurnConfig::default()
            },
        ),
    );
    rows
}

fn option_rows() -> Vec<(&'static str, SmartTurnConfig)> {
    let with = |graph: GraphOptimization, session: SessionOptions| SmartTurnConfig {
        graph_optimization: graph,
        session,
        ..SmartTurnConfig::default()
    };
    let all = GraphOptimization::All;
    let reference = SessionOptions::default();
    let key = |k: &str, v: &str| SessionOptions {
        config_entries: vec![(k.to_owned(), v.to_owned())],
        ..SessionOptions::default()
    };
    vec![
        (
            "reference (ENABLE_ALL, sequential, ONNX Runtime's QLinearSoftmax)",
            with(all, reference.clone()),
        ),
        (
            "graph: layout (level 3)",
            with(GraphOptimization::Layout, reference.clone()),
        ),
        (
            "graph: extended (level 2)",
            with(GraphOptimization::Extended, reference.clone()),
        ),
        (
            "graph: basic (level 1)",
            with(GraphOptimization::Basic, reference.clone()),
        ),
        (
            "graph: disabled",
            with(GraphOptimization::Disable, reference.clone()),
        ),
        (
            "intra-op spinning off",
            SmartTurnConfig {
                intra_op_spinning: false,
                ..SmartTurnConfig::default()
            },
        ),
        (
            "memory pattern off",
            with(
                all,
                SessionOptions {
                    memory_pattern: false,
                    ..SessionOptions::default()
                },
            ),
        ),
        (
            "CPU arena off",
            with(
                all,
                SessionOptions {
                    cpu_arena: false,
                    ..SessionOptions::default()
                },
            ),
        ),
        (
            "memory pattern and CPU arena off",
            with(
                all,
                SessionOptions {
                    memory_pattern: false,
                    cpu_arena: false,
                    ..SessionOptions::default()
                },
            ),
        ),
        (
            "parallel execution mode",
            with(
                all,
                SessionOptions {
                    parallel_execution: true,
                    ..SessionOptions::default()
                },
            ),
        ),
        (
            "session.set_denormal_as_zero = 1",
            with(all, key("session.set_denormal_as_zero", "1")),
        ),
        (
            "session.disable_prepacking = 1",
            with(all, key("session.disable_prepacking", "1")),
        ),
        (
            "session.disable_quant_qdq = 1",
            with(all, key("session.disable_quant_qdq", "1")),
        ),
        (
            "session.qdqisint8allowed = 1",
            with(all, key("session.qdqisint8allowed", "1")),
        ),
        (
            "session.x64quantprecision = 1",
            with(all, key("session.x64quantprecision", "1")),
        ),
        (
            "optimization.enable_gelu_approximation = 1",
            with(all, key("optimization.enable_gelu_approximation", "1")),
        ),
    ]
}

/// This thread's CPU time so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// How one configuration did.
#[derive(Default)]
struct Measured {
    wall_ms: Vec<f64>,
    cpu_ms: Vec<f64>,
    /// Largest |p - golden| over the golden cases.
    max_dev: f32,
    /// The case where it was largest.
    worst: String,
    /// Golden cases whose verdict differs from the golden one.
    flips: usize,
}

/// Loads and warms a session per configuration (a configuration ONNX Runtime
/// refuses is reported, not measured).
fn load_all() -> Vec<(&'static str, Result<SmartTurn, String>)> {
    configurations()
        .into_iter()
        .map(|(label, config)| {
            let model = SmartTurn::load(config)
                .and_then(|m| m.warm_up().map(|()| m))
                .map_err(|e| e.to_string());
            (label, model)
        })
        .collect()
}

/// Compares each configuration with the goldens.
fn deviations(
    models: &[(&str, Result<SmartTurn, String>)],
    cases: &[Golden],
    out: &mut [Measured],
) {
    for ((_, model), m) in models.iter().zip(out.iter_mut()) {
        let Ok(model) = model else { continue };
        for case in cases {
            let p = model
                .probability_of_features(&case.features)
                .unwrap_or(f32::NAN);
            let dev = (p - case.probability).abs();
            if dev.is_nan() || dev > m.max_dev {
                m.max_dev = dev;
                m.worst = case.name.clone();
            }
            if (p > COMPLETE_THRESHOLD) != (case.probability > COMPLETE_THRESHOLD) {
                m.flips += 1;
            }
        }
    }
}

/// Measures every configuration and returns a markdown section.
pub(crate) fn smart_turn_options_section(runs: usize) -> Result<String, String> {
    let runs = runs.max(1);
    let cases = goldens()?;
    let models = load_all();
    let mut measured: Vec<Measured> = models.iter().map(|_| Measured::default()).collect();
    deviations(&models, &cases, &mut measured);
    // Timed on one golden case's features (the work does not depend on them).
    let features = &cases[0].features;
    let n = models.len();
    for round in 0..WARM_UP_RUNS + runs {
        for i in (0..n).map(|k| (k + round) % n) {
            let (Ok(model), m) = (&models[i].1, &mut measured[i]) else {
                continue;
            };
            let (cpu0, t0) = (thread_cpu_ns(), Instant::now());
            let p = model.probability_of_features(features);
            let wall = t0.elapsed();
            let cpu = thread_cpu_ns().saturating_sub(cpu0);
            std::hint::black_box(p.ok());
            if round >= WARM_UP_RUNS {
                m.wall_ms.push(wall.as_secs_f64() * 1e3);
                m.cpu_ms.push(cpu as f64 / 1e6);
            }
        }
    }
    Ok(render(&models, &mut measured, runs, cases.len()))
}

fn render(
    models: &[(&str, Result<SmartTurn, String>)],
    measured: &mut [Measured],
    runs: usize,
    cases: usize,
) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Smart Turn v3.2: ONNX Runtime session options (1 intra-op thread)\n\n\
         The model alone on precomputed features, median of {runs} warm runs after \
         {WARM_UP_RUNS} warm-up runs per configuration, the configurations interleaved \
         round by round in one process. CPU = the calling thread's on-CPU time (all of \
         the work at one intra-op thread). Each row changes one option of the \
         reference settings. Deviation: the largest |p - golden| over the {cases} golden \
         cases (Python onnxruntime 1.32, reference settings, Pipecat's features) and the \
         verdicts (p > 0.5) that flip. Ratio: the row's median CPU over the reference's.\n"
    );
    let _ = writeln!(
        md,
        "| configuration | wall p50 ms | CPU p50 ms | CPU vs reference | max deviation | verdicts flipped |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let reference_cpu = median(&mut measured[0].cpu_ms.clone());
    for ((label, model), m) in models.iter().zip(measured.iter_mut()) {
        if let Err(e) = model {
            let _ = writeln!(md, "| {label} | refused: {e} | | | | |");
            continue;
        }
        let cpu = median(&mut m.cpu_ms);
        let worst = if m.max_dev > 0.0 {
            format!("({})", m.worst)
        } else {
            String::new()
        };
        let _ = writeln!(
            md,
            "| {label} | {:.2} | {:.2} | {:.3} | {:.3e} {} | {} of {cases} |",
            median(&mut m.wall_ms),
            cpu,
            cpu / reference_cpu,
            m.max_dev,
            worst,
            m.flips,
        );
    }
    md
}
