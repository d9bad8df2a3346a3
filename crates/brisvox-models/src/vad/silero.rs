//! The Silero VAD v6 model (`silero_vad.onnx`) on ONNX Runtime.
//!
//! The model scores one window of audio per row: at 16 kHz 512 new samples with the
//! previous window's last 64 prepended (576 in all), at 8 kHz 256 + 32. Each row
//! carries a recurrent state (`[2, batch, 128]`) from one window to the next. Rows of
//! different streams can share one model run (the batch dimension is dynamic); each
//! keeps its own state.
//!
//! - [`SileroModel`] is loaded once per process and shared (`Arc`); it holds a small
//!   set of sessions (ONNX Runtime's `run` takes `&mut`, so each session serves one
//!   run at a time; [`SileroOptions::sessions`] of them serve that many runs at once).
//!   Runs of two rows or more go to a second set built from the same file with the
//!   batch folded into the convolutions' GEMMs (`vad/fold.rs`; about 3x less CPU
//!   per window at 100 rows, `bench/results/model-cpu-silero-folded.md`;
//!   probabilities within [`FOLDED_TOLERANCE`]); a run of
//!   one row (a lone call) keeps the shipped graph. [`SileroOptions::fold_batches`]
//!   turns this off.
//! - At 16 kHz both graphs run with the model's top-level `If` on `sr` replaced by
//!   its 16 kHz branch ([`SileroOptions::inline_16k`], `vad/fold.rs`): the same
//!   nodes, so the same bits, without the subgraph machinery. 8 kHz windows run
//!   on the shipped graph, whose sessions are built at the first of them (never,
//!   for a 16 kHz server).
//! - [`SileroState`] is one stream's context and recurrent state, allocated once.
//! - [`SileroBatch`] holds the input and output buffers of one batched run, sized
//!   once for a row capacity and reused; rows are filled with [`SileroBatch::push`],
//!   run with [`SileroModel::run_batch`], and read back with
//!   [`SileroBatch::probability`] and [`SileroBatch::write_back`].
//!
//! Single windows give Python onnxruntime's probabilities (the goldens in
//! `tests/golden/silero/`, from `scripts/goldens/make-silero-goldens.sh`, within
//! 1e-6); batched runs of the folded graph stay within [`FOLDED_TOLERANCE`] of them.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use ort::session::Session;
pub use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;

use super::VadError;
use super::fold;
use super::native::{NativeSilero, Rows, Scratch};
use crate::runtime;

/// Length of one layer of the recurrent state.
pub const STATE_WIDTH: usize = 128;
/// Layers of the recurrent state.
pub const STATE_LAYERS: usize = 2;
/// Floats of recurrent state per stream.
pub const STATE_LEN: usize = STATE_LAYERS * STATE_WIDTH;
/// Longest context (16 kHz).
const MAX_CONTEXT: usize = 64;
/// Largest |p_folded - p_shipped| a batched run of the folded graph is allowed
/// (float rounding of the reordered sums; the goldens' test measures about 2e-6).
pub const FOLDED_TOLERANCE: f32 = 5e-6;
/// Largest |p_native - p_onnx_runtime| allowed for [`SileroKernel::Native`]
/// (float rounding of sums in another order, carried through the recurrent
/// state; `tests/silero_native_keeps_every_speech_decision.rs` measures it).
pub const NATIVE_TOLERANCE: f32 = 5e-6;

/// The two sample rates the model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SileroRate {
    /// 8 kHz: 256-sample windows, 32 samples of context.
    Hz8000,
    /// 16 kHz: 512-sample windows, 64 samples of context.
    Hz16000,
}

impl SileroRate {
    /// The rate for a sample rate in Hz, if the model takes it.
    pub fn from_hz(hz: u32) -> Option<Self> {
        match hz {
            8_000 => Some(SileroRate::Hz8000),
            16_000 => Some(SileroRate::Hz16000),
            _ => None,
        }
    }

    /// Samples per second.
    pub const fn hz(self) -> u32 {
        match self {
            SileroRate::Hz8000 => 8_000,
            SileroRate::Hz16000 => 16_000,
        }
    }

    /// New samples per window.
    pub const fn window_samples(self) -> usize {
        match self {
            SileroRate::Hz8000 => 256,
            SileroRate::Hz16000 => 512,
        }
    }

    /// Samples of the previous window prepended to each window.
    pub const fn context_samples(self) -> usize {
        match self {
            SileroRate::Hz8000 => 32,
            SileroRate::Hz16000 => MAX_CONTEXT,
        }
    }

    /// Floats per model input row (context + window).
    pub const fn row_len(self) -> usize {
        self.window_samples() + self.context_samples()
    }

    /// Audio time of one window (32 ms at both rates).
    pub const fn window_duration(self) -> Duration {
        Duration::from_millis(32)
    }
}

/// One stream's context and recurrent state; allocated once per stream.
#[derive(Debug, Clone, PartialEq)]
pub struct SileroState {
    rate: SileroRate,
    /// The previous window's last `context_samples` samples (zeros before the first).
    context: [f32; MAX_CONTEXT],
    /// Recurrent state, layer-major (`[layer][128]`).
    state: [f32; STATE_LEN],
    windows: u64,
}

impl SileroState {
    /// A fresh stream at `rate`: zero context, zero state.
    pub fn new(rate: SileroRate) -> Self {
        SileroState {
            rate,
            context: [0.0; MAX_CONTEXT],
            state: [0.0; STATE_LEN],
            windows: 0,
        }
    }

    /// Back to a fresh stream (same rate).
    pub fn reset(&mut self) {
        *self = SileroState::new(self.rate);
    }

    /// The stream's rate.
    pub fn rate(&self) -> SileroRate {
        self.rate
    }

    /// Windows scored so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    fn context(&self) -> &[f32] {
        &self.context[..self.rate.context_samples()]
    }
}

/// How the model's sessions are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SileroOptions {
    /// Sessions (concurrent runs); at least 1. A pool of N threads running VAD
    /// batches wants N.
    pub sessions: usize,
    /// ONNX Runtime intra-op threads per session (1: the pool is the parallelism).
    pub intra_threads: usize,
    /// Graph optimisation level (the Python reference uses ONNX Runtime's default, all).
    pub optimization: GraphOptimizationLevel,
    /// Run batches of two rows or more on the batch-folded graph (module docs);
    /// `false` runs every batch on the shipped graph (half the sessions' memory).
    pub fold_batches: bool,
    /// Run 16 kHz windows on graphs whose top-level `If` on `sr` is replaced by
    /// its 16 kHz branch (`vad/fold.rs` `inline_16k`: the same nodes without the
    /// subgraph machinery); 8 kHz windows then run on the shipped graph, whose
    /// sessions are built at the first 8 kHz run (the model file's 2.3 MB are
    /// kept until then).
    pub inline_16k: bool,
    /// What computes the windows: brisvox's own code (the default) or ONNX
    /// Runtime. With [`SileroKernel::Native`] no ONNX Runtime session is built and
    /// the options above that shape sessions and graphs do not apply.
    pub kernel: SileroKernel,
}

/// What computes Silero's windows (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SileroKernel {
    /// The network computed in Rust from the model file's weights
    /// (`vad/native.rs`): no run overhead, so a lone window or a small batch costs
    /// what its arithmetic costs; probabilities within [`NATIVE_TOLERANCE`] of
    /// ONNX Runtime's.
    #[default]
    Native,
    /// ONNX Runtime sessions of the model's graphs (the shipped one for single
    /// windows, the batch-folded one for batches).
    OnnxRuntime,
}

impl Default for SileroOptions {
    fn default() -> Self {
        SileroOptions {
            sessions: 1,
            intra_threads: 1,
            optimization: GraphOptimizationLevel::All,
            fold_batches: true,
            inline_16k: true,
            kernel: SileroKernel::Native,
        }
    }
}

/// One set of sessions of one graph.
struct Sessions {
    sessions: Box<[Mutex<Session>]>,
    next: AtomicUsize,
}

impl Sessions {
    fn build(model: &[u8], options: SileroOptions) -> Result<Self, VadError> {
        let sessions = (0..options.sessions.max(1))
            .map(|_| SileroModel::session(model, options).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Sessions {
            sessions: sessions.into_boxed_slice(),
            next: AtomicUsize::new(0),
        })
    }

    /// A free session, or (all busy) the next one in turn to wait for.
    fn guard(&self) -> MutexGuard<'_, Session> {
        for s in self.sessions.iter() {
            if let Ok(guard) = s.try_lock() {
                return guard;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.sessions.len();
        // A panic while a run held the lock leaves the session as ONNX Runtime left
        // it; runs share no state through it, so the next run may use it.
        self.sessions[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The Silero model: a small set of ONNX Runtime sessions shared by every stream.
pub struct SileroModel {
    /// The shipped graph: single windows (and every batch without folding); with
    /// `inline_16k` only 8 kHz windows, built at the first.
    shipped: OnceLock<Result<Sessions, VadError>>,
    /// The model file, kept until `shipped` is built.
    bytes: Mutex<Option<Vec<u8>>>,
    /// With `inline_16k`: the shipped graph for 16 kHz, `If` inlined.
    single_16k: Option<Sessions>,
    /// The batch-folded graph, for runs of two rows or more (16 kHz only with
    /// `inline_16k`).
    folded: Option<Sessions>,
    /// With [`SileroKernel::Native`]: the network in Rust; no sessions are built.
    native: Option<NativeSilero>,
    options: SileroOptions,
    path: std::path::PathBuf,
}

impl std::fmt::Debug for SileroModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SileroModel")
            .field("options", &self.options)
            .finish()
    }
}

const INPUT_NAMES: [&str; 3] = ["input", "state", "sr"];

impl SileroModel {
    /// Loads `silero_vad.onnx` from the models folder with default options.
    pub fn load() -> Result<Self, VadError> {
        Self::load_with(SileroOptions::default())
    }

    /// Loads `silero_vad.onnx` from the models folder.
    pub fn load_with(options: SileroOptions) -> Result<Self, VadError> {
        let path = runtime::find_model_file(runtime::SILERO_VAD_FILE)?;
        Self::load_from(&path, options)
    }

    /// Loads the model at `path`.
    pub fn load_from(path: &Path, options: SileroOptions) -> Result<Self, VadError> {
        let bytes = std::fs::read(path).map_err(|e| VadError::ModelFile {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        if options.kernel == SileroKernel::Native {
            return Ok(SileroModel {
                shipped: OnceLock::new(),
                bytes: Mutex::new(None),
                single_16k: None,
                folded: None,
                native: Some(NativeSilero::load(&bytes)?),
                options,
                path: path.to_owned(),
            });
        }
        let rewritten = |what: &str, e: crate::onnx_wire::OnnxWireError| VadError::ModelFile {
            path: path.to_owned(),
            reason: format!("the {what} graph could not be built: {e}"),
        };
        let inline = |graph: Vec<u8>| {
            if options.inline_16k {
                fold::inline_16k(&graph).map_err(|e| rewritten("16 kHz", e))
            } else {
                Ok(graph)
            }
        };
        let folded = if options.fold_batches {
            let graph = fold::fold_batch(&bytes).map_err(|e| rewritten("batch-folded", e))?;
            Some(Sessions::build(&inline(graph)?, options)?)
        } else {
            None
        };
        let single_16k = if options.inline_16k {
            Some(Sessions::build(&inline(bytes.clone())?, options)?)
        } else {
            None
        };
        let model = SileroModel {
            shipped: OnceLock::new(),
            bytes: Mutex::new(Some(bytes)),
            single_16k,
            folded,
            native: None,
            options,
            path: path.to_owned(),
        };
        if !options.inline_16k {
            model.shipped()?;
        }
        Ok(model)
    }

    /// The shipped graph's sessions, built at the first call.
    fn shipped(&self) -> Result<&Sessions, VadError> {
        let built = self.shipped.get_or_init(|| {
            let bytes = self
                .bytes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match bytes {
                Some(bytes) => Sessions::build(&bytes, self.options),
                None => Err(VadError::ModelFile {
                    path: self.path.clone(),
                    reason: "the shipped graph's bytes are gone".to_owned(),
                }),
            }
        });
        built.as_ref().map_err(Clone::clone)
    }

    fn session(model: &[u8], options: SileroOptions) -> Result<Session, VadError> {
        let mut builder = runtime::session_builder()?
            .with_intra_threads(options.intra_threads.max(1))
            .map_err(ort::Error::from)?
            .with_inter_threads(1)
            .map_err(ort::Error::from)?
            .with_parallel_execution(false)
            .map_err(ort::Error::from)?
            .with_optimization_level(options.optimization)
            .map_err(ort::Error::from)?;
        let session = builder.commit_from_memory(model)?;
        let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        if names != INPUT_NAMES {
            return Err(VadError::ModelInterface(format!(
                "inputs {names:?}, expected {INPUT_NAMES:?}"
            )));
        }
        Ok(session)
    }

    /// The options the model was loaded with.
    pub fn options(&self) -> SileroOptions {
        self.options
    }

    /// The sessions a run of `rows` rows at `rate` goes to.
    fn sessions_for(&self, rows: usize, rate: SileroRate) -> Result<&Sessions, VadError> {
        let hz16 = rate == SileroRate::Hz16000;
        match (&self.folded, &self.single_16k) {
            (Some(folded), _) if rows > 1 && (hz16 || !self.options.inline_16k) => Ok(folded),
            (_, Some(single)) if hz16 => Ok(single),
            _ => self.shipped(),
        }
    }

    /// Scores one window of one stream (a batch of one; allocates its buffers).
    ///
    /// For many windows, fill a reused [`SileroBatch`] and call
    /// [`run_batch`](Self::run_batch) instead.
    pub fn process(&self, state: &mut SileroState, window: &[f32]) -> Result<f32, VadError> {
        let mut batch = SileroBatch::new(state.rate(), 1);
        batch.push(state, window)?;
        self.run_batch(&mut batch)?;
        batch.write_back(0, state);
        Ok(batch.probability(0))
    }

    /// Runs every row of `batch` as one model run and stores the outputs in it
    /// (two rows or more on the batch-folded graph unless the options turn it off).
    pub fn run_batch(&self, batch: &mut SileroBatch) -> Result<(), VadError> {
        let rows = batch.rows;
        if rows == 0 {
            return Ok(());
        }
        if let Some(native) = &self.native {
            native_batch(native, batch);
            return Ok(());
        }
        batch.pack_state();
        let row_len = batch.rate.row_len();
        let mut session = self.sessions_for(rows, batch.rate)?.guard();
        let input = TensorRef::from_array_view(([rows, row_len], &batch.input[..rows * row_len]))?;
        let state = TensorRef::from_array_view((
            [STATE_LAYERS, rows, STATE_WIDTH],
            &batch.state_run[..rows * STATE_LEN],
        ))?;
        let sr = TensorRef::from_array_view(((), &batch.sr[..]))?;
        let outputs = session.run(ort::inputs![input, state, sr])?;
        let (_, probs) = outputs[0].try_extract_tensor::<f32>()?;
        let (_, state_out) = outputs[1].try_extract_tensor::<f32>()?;
        if probs.len() != rows || state_out.len() != rows * STATE_LEN {
            return Err(VadError::ModelInterface(format!(
                "outputs of {} and {} floats for {rows} rows",
                probs.len(),
                state_out.len()
            )));
        }
        batch.probs[..rows].copy_from_slice(probs);
        batch.state_out[..rows * STATE_LEN].copy_from_slice(state_out);
        batch.ran = true;
        Ok(())
    }
}

/// Every row of `batch` through the network in Rust, outputs laid out as ONNX
/// Runtime's (`[2, rows, 128]` states).
fn native_batch(native: &NativeSilero, batch: &mut SileroBatch) {
    let scratch = batch.native.get_or_insert_with(|| native.scratch());
    native.run(
        Rows {
            rate: batch.rate,
            rows: batch.rows,
            input: &batch.input,
            state_in: &batch.state_in,
            state_in_stride: batch.capacity,
            state_out: &mut batch.state_out,
            probs: &mut batch.probs,
        },
        scratch,
    );
    batch.ran = true;
}

/// The buffers of one batched run, sized once for `capacity` rows and reused.
#[derive(Debug, Clone)]
pub struct SileroBatch {
    rate: SileroRate,
    capacity: usize,
    rows: usize,
    /// `[capacity, row_len]`: context + window per row.
    input: Vec<f32>,
    /// Layer-major for `capacity` rows: layer l of row r at `(l * capacity + r) * 128`.
    state_in: Vec<f32>,
    /// `[2, rows, 128]`, packed from `state_in` before each run.
    state_run: Vec<f32>,
    state_out: Vec<f32>,
    probs: Vec<f32>,
    sr: [i64; 1],
    ran: bool,
    /// Working memory of [`SileroKernel::Native`], made at the batch's first run.
    native: Option<Scratch>,
}

impl SileroBatch {
    /// Buffers for up to `capacity` rows (at least 1) at `rate`.
    pub fn new(rate: SileroRate, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        SileroBatch {
            rate,
            capacity,
            rows: 0,
            input: vec![0.0; capacity * rate.row_len()],
            state_in: vec![0.0; capacity * STATE_LEN],
            state_run: vec![0.0; capacity * STATE_LEN],
            state_out: vec![0.0; capacity * STATE_LEN],
            probs: vec![0.0; capacity],
            sr: [i64::from(rate.hz())],
            ran: false,
            native: None,
        }
    }

    /// The batch's rate.
    pub fn rate(&self) -> SileroRate {
        self.rate
    }

    /// Rows the batch holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Rows filled.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row is filled.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Empties the batch (keeps its buffers).
    pub fn clear(&mut self) {
        self.rows = 0;
        self.ran = false;
    }

    /// Adds one stream's next window as a row; returns the row index.
    ///
    /// The stream's state is only read: after the run, [`write_back`](Self::write_back)
    /// advances it. A stream must not have two rows in one batch.
    pub fn push(&mut self, state: &SileroState, window: &[f32]) -> Result<usize, VadError> {
        if state.rate != self.rate {
            return Err(VadError::RateMismatch {
                expected_hz: self.rate.hz(),
                actual_hz: state.rate.hz(),
            });
        }
        let expected = self.rate.window_samples();
        if window.len() != expected {
            return Err(VadError::WindowLength {
                rate_hz: self.rate.hz(),
                expected,
                actual: window.len(),
            });
        }
        if self.rows == self.capacity {
            return Err(VadError::BatchFull {
                capacity: self.capacity,
            });
        }
        if self.ran {
            self.clear();
        }
        let row = self.rows;
        let row_len = self.rate.row_len();
        let ctx = self.rate.context_samples();
        let dst = &mut self.input[row * row_len..(row + 1) * row_len];
        dst[..ctx].copy_from_slice(state.context());
        dst[ctx..].copy_from_slice(window);
        // Layer l of row r at l * capacity * 128 + r * 128 until pack_state.
        for layer in 0..STATE_LAYERS {
            let at = (layer * self.capacity + row) * STATE_WIDTH;
            self.state_in[at..at + STATE_WIDTH]
                .copy_from_slice(&state.state[layer * STATE_WIDTH..(layer + 1) * STATE_WIDTH]);
        }
        self.rows += 1;
        Ok(row)
    }

    /// Copies the rows' states into `state_run` as `[2, rows, 128]`.
    fn pack_state(&mut self) {
        let len = self.rows * STATE_WIDTH;
        for layer in 0..STATE_LAYERS {
            let from = layer * self.capacity * STATE_WIDTH;
            self.state_run[layer * len..(layer + 1) * len]
                .copy_from_slice(&self.state_in[from..from + len]);
        }
    }

    /// The speech probability of `row` from the last run.
    ///
    /// Panics if `row` is not a row of the batch's last run.
    pub fn probability(&self, row: usize) -> f32 {
        assert!(self.ran && row < self.rows, "row {row} was not run");
        self.probs[row]
    }

    /// Advances a stream's state past the window it had in `row` of the last run.
    ///
    /// Panics if `row` is not a row of the batch's last run.
    pub fn write_back(&self, row: usize, state: &mut SileroState) {
        assert!(self.ran && row < self.rows, "row {row} was not run");
        let rows = self.rows;
        for layer in 0..STATE_LAYERS {
            let at = (layer * rows + row) * STATE_WIDTH;
            state.state[layer * STATE_WIDTH..(layer + 1) * STATE_WIDTH]
                .copy_from_slice(&self.state_out[at..at + STATE_WIDTH]);
        }
        let row_len = self.rate.row_len();
        let ctx = self.rate.context_samples();
        let end = (row + 1) * row_len;
        state.context[..ctx].copy_from_slice(&self.input[end - ctx..end]);
        state.windows += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_laid_out_as_the_model_expects() {
        let mut batch = SileroBatch::new(SileroRate::Hz8000, 3);
        let mut a = SileroState::new(SileroRate::Hz8000);
        a.state[0] = 1.0; // layer 0
        a.state[STATE_WIDTH] = 2.0; // layer 1
        a.context[31] = 9.0;
        let mut b = SileroState::new(SileroRate::Hz8000);
        b.state[0] = 3.0;
        b.state[STATE_WIDTH] = 4.0;
        let wa = vec![0.5; 256];
        let wb = vec![0.25; 256];
        assert_eq!(batch.push(&a, &wa).unwrap(), 0);
        assert_eq!(batch.push(&b, &wb).unwrap(), 1);
        batch.pack_state();
        // [2, rows=2, 128]: (l0,a) (l0,b) (l1,a) (l1,b)
        assert_eq!(batch.state_run[0], 1.0);
        assert_eq!(batch.state_run[STATE_WIDTH], 3.0);
        assert_eq!(batch.state_run[2 * STATE_WIDTH], 2.0);
        assert_eq!(batch.state_run[3 * STATE_WIDTH], 4.0);
        assert_eq!(batch.input[31], 9.0);
        assert_eq!(batch.input[32], 0.5);
        assert_eq!(batch.input[288 + 32], 0.25);
    }

    #[test]
    fn a_wrong_window_or_rate_is_refused() {
        let mut batch = SileroBatch::new(SileroRate::Hz16000, 1);
        let s8 = SileroState::new(SileroRate::Hz8000);
        let s16 = SileroState::new(SileroRate::Hz16000);
        assert!(matches!(
            batch.push(&s8, &[0.0; 256]),
            Err(VadError::RateMismatch { .. })
        ));
        assert!(matches!(
            batch.push(&s16, &[0.0; 256]),
            Err(VadError::WindowLength { expected: 512, .. })
        ));
        batch.push(&s16, &[0.0; 512]).unwrap();
        assert!(matches!(
            batch.push(&s16, &[0.0; 512]),
            Err(VadError::BatchFull { capacity: 1 })
        ));
    }
}
