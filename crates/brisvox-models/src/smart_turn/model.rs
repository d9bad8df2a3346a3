//! The Smart Turn v3.2 ONNX model: sessions, execution settings, one analysis.
//!
//! The model is statically quantised (int8 weights, uint8 activations), and how
//! ONNX Runtime executes it changes its output: with graph optimisation off or at
//! the basic level the probabilities move by up to ~0.3 and verdicts flip (see
//! `tests/golden/smart_turn/optimisation-levels.tsv`). The reference is what Pipecat
//! runs: ONNX Runtime 1.32 with `ORT_ENABLE_ALL` and sequential execution. With
//! those settings the probabilities here are bit-identical to Python onnxruntime on
//! every golden case, at 1 and 2 intra-op threads (`tests/smart_turn_*`).
//!
//! The attention softmax, which ONNX Runtime fuses into its scalar
//! `QLinearSoftmax` kernel at `ORT_ENABLE_EXTENDED` and above, runs by default on
//! our own kernel ([`SoftmaxKernel::Exact`], `qsoftmax.rs`): the same numbers bit
//! for bit in less CPU. The kernel is first checked against ONNX Runtime's own
//! on this CPU (rows chosen to tell the ways of computing it apart), then the
//! graph is rewritten in memory; if the check, the rewrite or the session
//! fails, the shipped graph is loaded instead ([`SmartTurn::exact_softmax_nodes`]
//! and [`SmartTurn::softmax_fallback`] say which runs and why).
//!
//! On that rewritten graph, by default ([`SmartTurnConfig::signed_attention`],
//! `qsigned.rs`), the second operand of each attention product (the keys, the
//! values) becomes int8 instead of uint8: the same integers, on ONNX Runtime's
//! uint8 x int8 kernel, which takes about half the time of its uint8 x uint8
//! one on CPUs with AVX-512 VNNI. Then each chain of float operators between
//! two quantised tensors that depends only on the input value and its column
//! (the seven GELUs, the query, key and value projections' bias and scale)
//! becomes a lookup table ([`SmartTurnConfig::lookup_tables`], `qlookup.rs`):
//! ONNX Runtime computes the 256 values of every column once at load and each
//! analysis looks them up. The graph so rewritten is compared with the graph
//! before both rewrites on probe inputs before it is used, to the bit;
//! otherwise that graph runs ([`SmartTurn::lookup_chains`],
//! [`SmartTurn::signed_operands`], [`SmartTurn::lookup_fallback`]).
//!
//! A [`SmartTurn`] is loaded once per process and shared (`Arc`): it holds one
//! ONNX Runtime session per *lane* (one by default) with the feature extractor and
//! the feature buffer that go with it, each lane behind a mutex, so an analysis
//! never allocates its 256 KB of features and never builds a session. An analysis
//! takes tens of milliseconds of CPU: run it on an inference pool
//! ([`SmartTurnService`](super::SmartTurnService)), never on a tokio worker.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::value::TensorRef;

use super::features::{FEATURES_LEN, FeatureExtractor, N_FRAMES, N_MELS, WINDOW_SAMPLES};
use super::{qlookup, qsigned, qsoftmax};
use crate::runtime::{self, RuntimeError};

/// Default ONNX Runtime intra-op threads for one analysis.
///
/// Measured on the 2-core build machine under its usual load (load average 3-7;
/// `brisvox-bench model-cpu`, Smart Turn section, medians of 31 warm runs, several
/// runs): one thread ~26 ms wall / ~26 ms CPU per model run. Two threads cut the
/// wall time to 14-17 ms only while the other core happens to be idle, are slower
/// (33-100 ms) when it is busy, and always cost 2.5-3x the CPU (64-78 ms: the second
/// worker spins after each run). Two threads with spinning off cost about the CPU of
/// one but gained no latency here. One thread is the default: the least CPU and no
/// bet on an idle core. Raise it through [`SmartTurnConfig::intra_threads`] on
/// machines with idle cores; the probabilities are bit-identical at 1 and 2 threads,
/// with and without spinning.
pub const DEFAULT_INTRA_THREADS: usize = 1;

/// Probability above which the model calls the turn complete (Pipecat: `> 0.5`).
pub const COMPLETE_THRESHOLD: f32 = 0.5;

/// ONNX Runtime graph optimisation level for the Smart Turn session.
///
/// Only [`GraphOptimization::All`] (the default) reproduces the reference; the
/// others exist so the tests can show that the level matters for this model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphOptimization {
    /// `ORT_DISABLE_ALL`.
    Disable,
    /// `ORT_ENABLE_BASIC`.
    Basic,
    /// `ORT_ENABLE_EXTENDED`.
    Extended,
    /// `ORT_ENABLE_LAYOUT` (`ort`'s `Level3`).
    Layout,
    /// `ORT_ENABLE_ALL`: what Pipecat runs, the reference.
    #[default]
    All,
}

impl GraphOptimization {
    fn to_ort(self) -> GraphOptimizationLevel {
        match self {
            GraphOptimization::Disable => GraphOptimizationLevel::Disable,
            GraphOptimization::Basic => GraphOptimizationLevel::Level1,
            GraphOptimization::Extended => GraphOptimizationLevel::Level2,
            GraphOptimization::Layout => GraphOptimizationLevel::Level3,
            GraphOptimization::All => GraphOptimizationLevel::All,
        }
    }
}

/// Which kernel runs the attention softmax of the quantised graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SoftmaxKernel {
    /// brisvox's kernel (the default): bit for bit ONNX Runtime's
    /// `QLinearSoftmax`, its rows summed in parallel chains and its outputs
    /// divided in vector registers. Used only where ONNX Runtime would fuse
    /// the softmax itself ([`GraphOptimization::Extended`] and above).
    #[default]
    Exact,
    /// ONNX Runtime's own `QLinearSoftmax` (the shipped graph as it is).
    OnnxRuntime,
}

/// How the Smart Turn model is loaded and run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmartTurnConfig {
    /// ONNX Runtime intra-op threads per analysis (0 is raised to 1).
    pub intra_threads: usize,
    /// Sessions that can run analyses at the same time (0 is raised to 1). One is
    /// enough when one executor thread runs the analyses; give one per executor
    /// thread otherwise. Each costs the session's memory (~20-30 MB).
    pub sessions: usize,
    /// Graph optimisation level; keep the default ([`GraphOptimization::All`]).
    pub graph_optimization: GraphOptimization,
    /// The attention softmax's kernel; the output is the same either way.
    pub softmax: SoftmaxKernel,
    /// Whether the graph's elementwise chains (GELUs, projection bias and
    /// scale) run as lookup tables computed by ONNX Runtime at load (the
    /// default); the output is the same either way. Applies with
    /// [`SoftmaxKernel::Exact`] at the levels that fuse the softmax.
    pub lookup_tables: bool,
    /// Whether the second operand of each attention product (the keys, the
    /// values) is int8 instead of uint8 (the default): the same integers on
    /// ONNX Runtime's faster kernel, so the output is the same either way.
    /// Applies with [`SmartTurnConfig::lookup_tables`].
    pub signed_attention: bool,
    /// Whether ONNX Runtime's intra-op workers spin while waiting for work (its
    /// default, true). Spinning buys latency with CPU: at 2 intra-op threads the
    /// idle worker burns tens of ms of CPU after every analysis. Matters only with
    /// more than one intra-op thread; the output is the same either way.
    pub intra_op_spinning: bool,
    /// The model file; `None` finds `smart-turn-v3.2-cpu.onnx` in the models folder.
    pub model_path: Option<PathBuf>,
    /// Other ONNX Runtime session options; keep the default (the reference
    /// settings). `brisvox-bench model-cpu` sweeps them.
    pub session: SessionOptions,
}

/// ONNX Runtime session options besides the level and the threads. The
/// default is ONNX Runtime's own default with sequential execution: the
/// reference settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// Memory pattern planning (ONNX Runtime's default: on).
    pub memory_pattern: bool,
    /// The CPU execution provider's arena allocator (ONNX Runtime's default: on).
    pub cpu_arena: bool,
    /// Parallel instead of sequential execution mode (the reference: sequential).
    pub parallel_execution: bool,
    /// Session configuration entries (`onnxruntime_session_options_config_keys.h`),
    /// set in order; none by default.
    pub config_entries: Vec<(String, String)>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            memory_pattern: true,
            cpu_arena: true,
            parallel_execution: false,
            config_entries: Vec::new(),
        }
    }
}

impl Default for SmartTurnConfig {
    fn default() -> Self {
        SmartTurnConfig {
            intra_threads: DEFAULT_INTRA_THREADS,
            sessions: 1,
            graph_optimization: GraphOptimization::All,
            softmax: SoftmaxKernel::Exact,
            lookup_tables: true,
            signed_attention: true,
            intra_op_spinning: true,
            model_path: None,
            session: SessionOptions::default(),
        }
    }
}

/// The outcome of one analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// The model's probability that the turn is complete, 0..=1.
    pub probability: f32,
    /// `probability > COMPLETE_THRESHOLD`.
    pub complete: bool,
    /// Wall time of the feature extraction, in microseconds.
    pub features_us: u64,
    /// Wall time of the model run, in microseconds.
    pub model_us: u64,
}

/// Why an analysis produced no verdict.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SmartTurnError {
    /// The runtime or the model file could not be loaded, or ONNX Runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The model's output was not the expected `logits` [1, 1] probability.
    #[error("unexpected Smart Turn output: {reason}")]
    BadOutput {
        /// What was wrong with it.
        reason: String,
    },
    /// Features of the wrong length were passed.
    #[error("features hold {actual} values, expected {expected}")]
    WrongFeatureLength {
        /// `FEATURES_LEN`.
        expected: usize,
        /// The length that was passed.
        actual: usize,
    },
    /// The executor's queue was full; the analysis was refused.
    #[error("the Smart Turn executor is saturated; the analysis was refused")]
    Saturated,
    /// The analysis did not start before its deadline and was skipped.
    #[error("the Smart Turn analysis did not start before its deadline")]
    TimedOut,
    /// The executor failed the job (it panicked or the executor shut down).
    #[error("the Smart Turn analysis failed on its executor: {reason}")]
    ExecutorFailed {
        /// What the executor said.
        reason: String,
    },
}

impl From<ort::Error> for SmartTurnError {
    fn from(e: ort::Error) -> Self {
        SmartTurnError::Runtime(RuntimeError::from(e))
    }
}

/// One session with the scratch an analysis needs next to it.
struct Lane {
    session: Session,
    extractor: FeatureExtractor,
    features: Vec<f32>,
}

/// The loaded Smart Turn v3.2 model; load once per process and share it.
pub struct SmartTurn {
    lanes: Vec<Mutex<Lane>>,
    next_lane: AtomicUsize,
    config: SmartTurnConfig,
    exact_softmax_nodes: usize,
    softmax_fallback: Option<String>,
    lookup_chains: usize,
    signed_operands: usize,
    lookup_fallback: Option<String>,
}

impl std::fmt::Debug for SmartTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmartTurn")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SmartTurn {
    /// Loads ONNX Runtime (once per process) and builds `config.sessions` sessions.
    ///
    /// Takes a few hundred milliseconds: call it at startup, then [`warm_up`](Self::warm_up).
    pub fn load(mut config: SmartTurnConfig) -> Result<Self, SmartTurnError> {
        config.intra_threads = config.intra_threads.max(1);
        config.sessions = config.sessions.max(1);
        let path = match &config.model_path {
            Some(p) => p.clone(),
            None => runtime::find_model_file(runtime::SMART_TURN_FILE)?,
        };
        let fuses_softmax = matches!(
            config.graph_optimization,
            GraphOptimization::Extended | GraphOptimization::Layout | GraphOptimization::All
        );
        let mut softmax_fallback = None;
        if config.softmax == SoftmaxKernel::Exact && fuses_softmax {
            // Any failure here (the kernel differs from ONNX Runtime's on this
            // CPU, a graph the rewrite does not expect, a session that refuses
            // it) falls back to the shipped graph below.
            match Self::exact_lanes(&config, &path) {
                Ok(exact) => {
                    return Ok(SmartTurn {
                        lanes: exact.lanes,
                        next_lane: AtomicUsize::new(0),
                        config,
                        exact_softmax_nodes: exact.softmax_nodes,
                        softmax_fallback: None,
                        lookup_chains: exact.lookup_chains,
                        signed_operands: exact.signed_operands,
                        lookup_fallback: exact.lookup_fallback,
                    });
                }
                Err(why) => softmax_fallback = Some(why),
            }
        }
        let lanes = (0..config.sessions)
            .map(|_| {
                Ok(Lane::new(
                    session_builder(&config)?.commit_from_file(&path)?,
                ))
            })
            .collect::<Result<Vec<_>, SmartTurnError>>()?;
        Ok(SmartTurn {
            lanes,
            next_lane: AtomicUsize::new(0),
            config,
            exact_softmax_nodes: 0,
            softmax_fallback,
            lookup_chains: 0,
            signed_operands: 0,
            lookup_fallback: None,
        })
    }

    /// Sessions on the graph with its softmaxes on our kernel (and its
    /// elementwise chains as tables when asked for and they check out); why not, when the softmax
    /// kernel cannot be used.
    fn exact_lanes(config: &SmartTurnConfig, path: &std::path::Path) -> Result<ExactLanes, String> {
        qsoftmax::check_against_onnx_runtime()?;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (graph, softmax_nodes) = qsoftmax::rewrite_model(&bytes).map_err(|e| e.to_string())?;
        if softmax_nodes == 0 {
            return Err("the graph has no quantised softmax to run".to_owned());
        }
        let build = |graph: &[u8], int8: bool| -> Result<Session, String> {
            let mut builder = session_builder(config).map_err(|e| e.to_string())?;
            if int8 {
                let (key, value) = qsigned::INT8_ALLOWED;
                builder = builder
                    .with_config_entry(key, value)
                    .map_err(|e| e.to_string())?;
            }
            builder
                .with_operators(custom_operators().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?
                .commit_from_memory(graph)
                .map_err(|e| e.to_string())
        };
        let mut lookup_fallback = None;
        if config.lookup_tables {
            match tabled_graph(&graph, config.signed_attention, &build) {
                Ok(tabled) => {
                    let int8 = tabled.signed_operands > 0;
                    let mut lanes = vec![Lane::new(tabled.session)];
                    for _ in 1..config.sessions {
                        lanes.push(Lane::new(build(&tabled.graph, int8)?));
                    }
                    return Ok(ExactLanes {
                        lanes,
                        softmax_nodes,
                        lookup_chains: tabled.chains,
                        signed_operands: tabled.signed_operands,
                        lookup_fallback: None,
                    });
                }
                Err(why) => lookup_fallback = Some(why),
            }
        }
        let lanes = (0..config.sessions)
            .map(|_| Ok(Lane::new(build(&graph, false)?)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(ExactLanes {
            lanes,
            softmax_nodes,
            lookup_chains: 0,
            signed_operands: 0,
            lookup_fallback,
        })
    }

    /// Why the attention softmax runs on ONNX Runtime's kernel although
    /// [`SoftmaxKernel::Exact`] was asked for (at a level that fuses it): the
    /// check against ONNX Runtime's kernel on this CPU failed, or the rewritten
    /// graph could not be loaded. `None` when it was not asked for or is in use.
    pub fn softmax_fallback(&self) -> Option<&str> {
        self.softmax_fallback.as_deref()
    }

    /// Whether brisvox's softmax kernel gives ONNX Runtime's on this CPU, byte
    /// for byte, on rows chosen to tell the ways of computing it apart; what
    /// differs otherwise. Run once per process; [`SmartTurn::load`] runs it
    /// before using the kernel.
    pub fn exact_softmax_check() -> Result<(), String> {
        qsoftmax::check_against_onnx_runtime()
    }

    /// How many attention softmaxes run on our kernel ([`SoftmaxKernel::Exact`]):
    /// 4 for Smart Turn v3.2 by default; 0 when ONNX Runtime runs them (asked
    /// for, an optimisation level that does not fuse them, or the fallback).
    pub fn exact_softmax_nodes(&self) -> usize {
        self.exact_softmax_nodes
    }

    /// How many elementwise chains run as lookup tables ([`SmartTurnConfig::lookup_tables`]):
    /// 19 for Smart Turn v3.2 by default (7 GELUs, 12 projections: query, key
    /// and value of 4 layers); 0 when they run on ONNX Runtime's operators (not
    /// asked for, the softmax on ONNX Runtime's kernel, or the fallback).
    pub fn lookup_chains(&self) -> usize {
        self.lookup_chains
    }

    /// How many attention products take their second operand as int8
    /// ([`SmartTurnConfig::signed_attention`]): 8 for Smart Turn v3.2 by
    /// default (keys and values of 4 layers); 0 when not asked for, without
    /// lookup tables, or in the fallback.
    pub fn signed_operands(&self) -> usize {
        self.signed_operands
    }

    /// Why the elementwise chains run on ONNX Runtime's operators (and the
    /// attention operands stay uint8) although tables were asked for: the
    /// tables could not be computed, the rewritten graph could not be loaded,
    /// or it differed from the graph before the rewrites on a probe input.
    /// `None` when not asked for or in use.
    pub fn lookup_fallback(&self) -> Option<&str> {
        self.lookup_fallback.as_deref()
    }

    /// The configuration in use (thread and session counts raised to at least 1).
    pub fn config(&self) -> &SmartTurnConfig {
        &self.config
    }

    /// Runs every session twice on speech-like input so the first real analysis
    /// does not pay ONNX Runtime's first-run costs (allocations, kernel selection).
    pub fn warm_up(&self) -> Result<(), SmartTurnError> {
        let pcm = chirp();
        for lane in &self.lanes {
            let mut lane = lock(lane);
            for _ in 0..2 {
                lane.analyze(&pcm)?;
            }
        }
        Ok(())
    }

    /// Features and model on `pcm` (16 kHz mono int16; the last 8 s are used).
    ///
    /// Blocks for the whole analysis (tens of ms): call it from a pool thread.
    pub fn analyze(&self, pcm: &[i16]) -> Result<Verdict, SmartTurnError> {
        self.lane().analyze(pcm)
    }

    /// The model alone on precomputed features (`[80][800]`, [`FEATURES_LEN`] values).
    pub fn probability_of_features(&self, features: &[f32]) -> Result<f32, SmartTurnError> {
        if features.len() != FEATURES_LEN {
            return Err(SmartTurnError::WrongFeatureLength {
                expected: FEATURES_LEN,
                actual: features.len(),
            });
        }
        run_model(&mut self.lane().session, features)
    }

    /// A free lane if there is one, else waits on the next in turn.
    fn lane(&self) -> MutexGuard<'_, Lane> {
        for lane in &self.lanes {
            if let Ok(guard) = lane.try_lock() {
                return guard;
            }
        }
        let i = self.next_lane.fetch_add(1, Ordering::Relaxed) % self.lanes.len();
        lock(&self.lanes[i])
    }
}

/// What [`SmartTurn::exact_lanes`] built.
struct ExactLanes {
    lanes: Vec<Mutex<Lane>>,
    softmax_nodes: usize,
    lookup_chains: usize,
    signed_operands: usize,
    lookup_fallback: Option<String>,
}

/// The custom operators of the rewritten graphs: the softmax and the lookups.
fn custom_operators() -> ort::Result<ort::operator::OperatorDomain> {
    qlookup::add_operators(qsoftmax::domain()?)
}

/// A deterministic chirp with an envelope, 4 s: not silence, so every code
/// path of the quantised graph sees realistic ranges.
fn chirp() -> Vec<i16> {
    (0..WINDOW_SAMPLES / 2)
        .map(|i| {
            let t = i as f64 / 16_000.0;
            let env = (t * 3.0 * std::f64::consts::PI).sin().abs();
            (env * (2.0 * std::f64::consts::PI * (150.0 + 400.0 * t) * t).sin() * 6000.0) as i16
        })
        .collect()
}

/// Builds a session on a graph, allowing int8 activations when told to.
type BuildSession<'a> = &'a dyn Fn(&[u8], bool) -> Result<Session, String>;

/// What [`tabled_graph`] made.
struct Tabled {
    graph: Vec<u8>,
    session: Session,
    chains: usize,
    signed_operands: usize,
}

/// `graph` with, when `signed`, its attention products' second operands int8
/// ([`qsigned`]), then its elementwise chains as lookup tables, and a session
/// on it; checked first against `graph` itself on probe inputs (the chirp,
/// and 8 s of noise from a fixed seed), probability bit for bit. `build`
/// makes a session, allowing int8 activations when told to.
fn tabled_graph(graph: &[u8], signed: bool, build: BuildSession<'_>) -> Result<Tabled, String> {
    let (signed_graph, signed_operands) = if signed {
        qsigned::rewrite_model(graph)?
    } else {
        (graph.to_vec(), 0)
    };
    let (tabled, chains) = qlookup::rewrite_model(&signed_graph)?;
    if chains == 0 {
        return Err("the graph has no elementwise chain to tabulate".to_owned());
    }
    let mut reference = build(graph, false)?;
    let mut candidate = build(&tabled, signed_operands > 0)?;
    let mut seed = 0x9e37_79b9_u32;
    let noise: Vec<i16> = (0..WINDOW_SAMPLES)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed >> 20) as i16 - 2048
        })
        .collect();
    let mut extractor = FeatureExtractor::new();
    for (what, pcm) in [("the chirp", chirp()), ("the noise", noise)] {
        let features = extractor.compute(&pcm);
        let a = run_model(&mut reference, &features).map_err(|e| e.to_string())?;
        let b = run_model(&mut candidate, &features).map_err(|e| e.to_string())?;
        if a.to_bits() != b.to_bits() {
            return Err(format!(
                "on {what} the graph with lookup tables gives {b}, the graph before them {a}"
            ));
        }
    }
    Ok(Tabled {
        graph: tabled,
        session: candidate,
        chains,
        signed_operands,
    })
}

/// A session builder with `config`'s execution settings.
fn session_builder(config: &SmartTurnConfig) -> Result<SessionBuilder, SmartTurnError> {
    let options = &config.session;
    let mut builder = runtime::session_builder()?
        .with_optimization_level(config.graph_optimization.to_ort())
        .map_err(ort::Error::from)?
        .with_parallel_execution(options.parallel_execution)
        .map_err(ort::Error::from)?
        .with_inter_threads(1)
        .map_err(ort::Error::from)?
        .with_intra_threads(config.intra_threads)
        .map_err(ort::Error::from)?
        .with_intra_op_spinning(config.intra_op_spinning)
        .map_err(ort::Error::from)?;
    if !options.memory_pattern {
        builder = builder
            .with_memory_pattern(false)
            .map_err(ort::Error::from)?;
    }
    if !options.cpu_arena {
        let cpu = ort::ep::CPU::default().with_arena_allocator(false).build();
        builder = builder
            .with_execution_providers([cpu])
            .map_err(ort::Error::from)?;
    }
    for (key, value) in &options.config_entries {
        builder = builder
            .with_config_entry(key, value)
            .map_err(ort::Error::from)?;
    }
    Ok(builder)
}

/// A poisoned lane is still usable: the session and buffers hold no invariant a
/// panic in the middle of an analysis could break (the next analysis overwrites them).
fn lock(lane: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    lane.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Lane {
    fn new(session: Session) -> Mutex<Lane> {
        Mutex::new(Lane {
            session,
            extractor: FeatureExtractor::new(),
            features: vec![0.0; FEATURES_LEN],
        })
    }

    fn analyze(&mut self, pcm: &[i16]) -> Result<Verdict, SmartTurnError> {
        let started = Instant::now();
        // `features` is allocated with FEATURES_LEN values, the only error case.
        self.extractor
            .compute_into(pcm, &mut self.features)
            .expect("lane buffer is FEATURES_LEN long");
        let features_done = Instant::now();
        let probability = run_model(&mut self.session, &self.features)?;
        let model_done = Instant::now();
        Ok(Verdict {
            probability,
            complete: probability > COMPLETE_THRESHOLD,
            features_us: micros(features_done - started),
            model_us: micros(model_done - features_done),
        })
    }
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn run_model(session: &mut Session, features: &[f32]) -> Result<f32, SmartTurnError> {
    let input = TensorRef::from_array_view(([1usize, N_MELS, N_FRAMES], features))?;
    let outputs = session.run(ort::inputs!["input_features" => input])?;
    let logits = outputs
        .get("logits")
        .ok_or_else(|| SmartTurnError::BadOutput {
            reason: "no output named `logits`".to_owned(),
        })?;
    let (_, values) = logits.try_extract_tensor::<f32>()?;
    match values {
        [p] if p.is_finite() => Ok(*p),
        other => Err(SmartTurnError::BadOutput {
            reason: format!("expected one finite value, got {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx_wire::{MODEL_GRAPH, Message};

    /// A graph without a chain to tabulate is refused before any session is
    /// built, with the reason `SmartTurn::lookup_fallback` gives and the
    /// server logs.
    #[test]
    fn a_graph_without_elementwise_chains_keeps_its_operators_and_says_why() {
        let mut model = Message::default();
        model.push_bytes(MODEL_GRAPH, Message::default().encode());
        let build =
            |_: &[u8], _: bool| -> Result<Session, String> { panic!("no session is built") };
        let Err(why) = tabled_graph(&model.encode(), true, &build) else {
            panic!("a graph without chains cannot run tables");
        };
        assert_eq!(why, "the graph has no elementwise chain to tabulate");
    }
}
