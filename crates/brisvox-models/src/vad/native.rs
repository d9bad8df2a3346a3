//! Silero VAD v6 computed in Rust from the model file's weights, without ONNX Runtime.
//!
//! One window through ONNX Runtime costs tens of microseconds of run overhead with
//! hot caches and several hundred after idle (`bench/results/model-cpu.md`), which
//! a lone call, or a batch of a few windows, pays in full: at 32 calls on one core
//! the VAD thread used about as much CPU as Smart Turn. The network is small, so
//! here it is computed directly, with the weights read from `silero_vad.onnx`
//! (the `Constant` nodes of the top-level `If`'s branch for the rate):
//!
//! 1. the row (context + window) padded on the right by reflection (64 samples
//!    at 16 kHz, 32 at 8 kHz);
//! 2. the STFT: the model's basis is a Hann-windowed DFT (checked at load, to
//!    1e-6), so each of the 4 frames of `n_fft` samples every `hop` is windowed
//!    and put through a real FFT; magnitude per bin;
//! 3. four kernel-3 convolutions with ReLU (strides 1, 2, 2, 1), as im2col dot
//!    products;
//! 4. one LSTM cell step (hidden 128, PyTorch's gate order i, f, g, o) on the
//!    stream's state `[h, c]`;
//! 5. ReLU, a 1x1 convolution to one value, sigmoid: the probability.
//!
//! Rows are computed in blocks of up to [`BLOCK`] (the rows of a batched run):
//! each weight row is loaded once per block and used for every row of it, so a
//! batch reads the 0.9 MB of weights once per block instead of once per window.
//!
//! The sums run in another order than ONNX Runtime's (sixteen lanes, fused
//! multiply-adds where the CPU has them; taps past the ends of a one-step
//! output left out), the STFT is an FFT, and the
//! exponentials are a polynomial, so probabilities differ from the Python
//! reference by float rounding only: `tests/silero_native_keeps_every_speech_decision.rs`
//! bounds it on every golden window ([`super::silero::NATIVE_TOLERANCE`]) and
//! checks that the stop rule makes the same decisions.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use super::VadError;
use super::fold::{Branch, top_if_branch};
use super::silero::{STATE_LAYERS, STATE_LEN, STATE_WIDTH, SileroRate};

/// STFT frames per row (both rates).
const FRAMES: usize = 4;
/// Encoder convolutions: (input channels or `None` for the STFT's bins, output
/// channels, stride); kernel 3, padding 1.
const ENCODER: [(Option<usize>, usize, usize); 4] = [
    (None, 128, 1),
    (Some(128), 64, 2),
    (Some(64), 64, 2),
    (Some(64), 128, 1),
];
/// The LSTM's gates: four blocks of [`STATE_WIDTH`].
const GATES: usize = 4 * STATE_WIDTH;
/// Lanes of one partial sum in the dot products.
const LANES: usize = 16;
/// Rows computed together (module docs).
pub(crate) const BLOCK: usize = 8;
/// How far the model's STFT basis may be from a Hann-windowed DFT.
const BASIS_TOLERANCE: f32 = 1e-6;

/// One kernel-3 convolution: `weight` is `[out][tap][in]` (the model stores
/// `[out][in][tap]`), so that an output's inputs are three whole time steps.
#[derive(Debug, Clone)]
struct Conv {
    inputs: usize,
    outputs: usize,
    stride: usize,
    weight: Vec<f32>,
    bias: Vec<f32>,
}

impl Conv {
    fn out_len(&self, in_len: usize) -> usize {
        (in_len + 2 - 3) / self.stride + 1
    }
}

/// The network of one rate.
struct Network {
    rate: SileroRate,
    n_fft: usize,
    hop: usize,
    bins: usize,
    /// The STFT's window (the basis's zero-frequency row).
    window: Vec<f32>,
    fft: Arc<dyn RealToComplex<f32>>,
    encoder: [Conv; 4],
    /// `[GATES][2 * STATE_WIDTH]`: row j is `weight_ih[j]` then `weight_hh[j]`.
    lstm: Vec<f32>,
    /// `bias_ih + bias_hh`.
    lstm_bias: Vec<f32>,
    decoder: Vec<f32>,
    decoder_bias: f32,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// Silero VAD computed in Rust (module docs); both rates, loaded once and shared.
#[derive(Debug)]
pub(crate) struct NativeSilero {
    hz16: Network,
    hz8: Network,
    fma: bool,
}

/// Working memory of one run, kept by its batch so that runs do not allocate.
#[derive(Clone)]
pub(crate) struct Scratch {
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    fft_scratch: Vec<Complex<f32>>,
    /// Per row of the block: the layer's input `[channels][len]`.
    act_in: Vec<f32>,
    /// Per row of the block: the layer's output.
    act_out: Vec<f32>,
    /// Per row of the block: im2col columns.
    cols: Vec<f32>,
    /// Per row of the block: `[x, h]`, then the gates.
    xh: Vec<f32>,
    gates: Vec<f32>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").finish_non_exhaustive()
    }
}

/// Floats of one row's activations (the widest layer: bins or channels by frames).
const ACT: usize = 129 * FRAMES;
/// Floats of one row's im2col columns (the widest: 3 * bins by frames).
const COLS: usize = 3 * 129 * FRAMES;

impl Scratch {
    fn new(fft_scratch: usize) -> Self {
        Scratch {
            frame: vec![0.0; 256],
            spectrum: vec![Complex::default(); 129],
            fft_scratch: vec![Complex::default(); fft_scratch],
            act_in: vec![0.0; BLOCK * ACT],
            act_out: vec![0.0; BLOCK * ACT],
            cols: vec![0.0; BLOCK * COLS],
            xh: vec![0.0; BLOCK * 2 * STATE_WIDTH],
            gates: vec![0.0; BLOCK * GATES],
        }
    }
}

/// The rows of one run, as [`super::silero::SileroBatch`] lays them out.
pub(crate) struct Rows<'a> {
    pub(crate) rate: SileroRate,
    pub(crate) rows: usize,
    /// `[rows, row_len]`.
    pub(crate) input: &'a [f32],
    /// Layer `l` of row `r` at `(l * stride + r) * 128`.
    pub(crate) state_in: &'a [f32],
    pub(crate) state_in_stride: usize,
    /// `[2, rows, 128]`.
    pub(crate) state_out: &'a mut [f32],
    pub(crate) probs: &'a mut [f32],
}

fn interface(what: String) -> VadError {
    VadError::ModelInterface(what)
}

fn weight(branch: &Branch, prefix: &str, name: &str, dims: &[usize]) -> Result<Vec<f32>, VadError> {
    let t = branch
        .constant(&format!("{prefix}{name}"))
        .map_err(|e| interface(format!("{name}: {e}")))?;
    let len: usize = dims.iter().product();
    if t.values.len() != len {
        return Err(interface(format!(
            "{name} has dims {:?}, expected {dims:?}",
            t.dims
        )));
    }
    Ok(t.values)
}

impl Network {
    fn load(model: &[u8], rate: SileroRate) -> Result<Self, VadError> {
        let (which, prefix) = match rate {
            SileroRate::Hz16000 => ("then_branch", "If_0_then_branch__Inline_0__"),
            SileroRate::Hz8000 => ("else_branch", "If_0_else_branch__Inline_0__"),
        };
        let branch = top_if_branch(model, which).map_err(|e| interface(e.to_string()))?;
        let (n_fft, hop, pad) = match rate {
            SileroRate::Hz16000 => (256, 128, 64),
            SileroRate::Hz8000 => (128, 64, 32),
        };
        let bins = n_fft / 2 + 1;
        if (rate.row_len() + pad - n_fft) / hop + 1 != FRAMES {
            return Err(interface(format!("{rate:?}: not {FRAMES} STFT frames")));
        }
        let basis = weight(
            &branch,
            prefix,
            "stft.forward_basis_buffer",
            &[2 * bins, n_fft],
        )?;
        let window = basis[..n_fft].to_vec();
        check_basis(&basis, &window, bins)
            .map_err(|e| interface(format!("{rate:?} STFT basis: {e}")))?;
        let mut convs = Vec::with_capacity(4);
        for (layer, (inputs, outputs, stride)) in ENCODER.into_iter().enumerate() {
            let inputs = inputs.unwrap_or(bins);
            let name = format!("encoder.{layer}.reparam_conv");
            let stored = weight(
                &branch,
                prefix,
                &format!("{name}.weight"),
                &[outputs, inputs, 3],
            )?;
            let mut by_tap = vec![0.0f32; stored.len()];
            for co in 0..outputs {
                for ci in 0..inputs {
                    for tap in 0..3 {
                        by_tap[(co * 3 + tap) * inputs + ci] = stored[(co * inputs + ci) * 3 + tap];
                    }
                }
            }
            convs.push(Conv {
                inputs,
                outputs,
                stride,
                weight: by_tap,
                bias: weight(&branch, prefix, &format!("{name}.bias"), &[outputs])?,
            });
        }
        let encoder: [Conv; 4] = convs.try_into().expect("four layers");
        let w = |name: &str, dims: &[usize]| weight(&branch, prefix, name, dims);
        let ih = w("decoder.rnn.weight_ih", &[GATES, STATE_WIDTH])?;
        let hh = w("decoder.rnn.weight_hh", &[GATES, STATE_WIDTH])?;
        let b_ih = w("decoder.rnn.bias_ih", &[GATES])?;
        let b_hh = w("decoder.rnn.bias_hh", &[GATES])?;
        let mut lstm = Vec::with_capacity(GATES * 2 * STATE_WIDTH);
        for j in 0..GATES {
            lstm.extend_from_slice(&ih[j * STATE_WIDTH..(j + 1) * STATE_WIDTH]);
            lstm.extend_from_slice(&hh[j * STATE_WIDTH..(j + 1) * STATE_WIDTH]);
        }
        let lstm_bias = b_ih.iter().zip(&b_hh).map(|(a, b)| a + b).collect();
        let decoder = w("decoder.decoder.2.weight", &[STATE_WIDTH])?;
        let decoder_bias = w("decoder.decoder.2.bias", &[1])?[0];
        Ok(Network {
            rate,
            n_fft,
            hop,
            bins,
            window,
            fft: RealFftPlanner::<f32>::new().plan_fft_forward(n_fft),
            encoder,
            lstm,
            lstm_bias,
            decoder,
            decoder_bias,
        })
    }
}

/// Whether `basis` (`[2 * bins][n_fft]`) is `window` times the DFT's cosines
/// (real rows) and negated sines (imaginary rows), to [`BASIS_TOLERANCE`].
fn check_basis(basis: &[f32], window: &[f32], bins: usize) -> Result<(), String> {
    let n_fft = window.len();
    let mut worst = 0.0f64;
    for k in 0..bins {
        for n in 0..n_fft {
            let angle = 2.0 * std::f64::consts::PI * (k * n % n_fft) as f64 / n_fft as f64;
            let w = f64::from(window[n]);
            let re = f64::from(basis[k * n_fft + n]) - w * angle.cos();
            let im = f64::from(basis[(bins + k) * n_fft + n]) + w * angle.sin();
            worst = worst.max(re.abs()).max(im.abs());
        }
    }
    if worst <= f64::from(BASIS_TOLERANCE) {
        Ok(())
    } else {
        Err(format!(
            "not a windowed DFT (off by {worst:e}, allowed {BASIS_TOLERANCE:e})"
        ))
    }
}

impl NativeSilero {
    /// Reads both rates' weights from the bytes of `silero_vad.onnx`.
    pub(crate) fn load(model: &[u8]) -> Result<Self, VadError> {
        Ok(NativeSilero {
            hz16: Network::load(model, SileroRate::Hz16000)?,
            hz8: Network::load(model, SileroRate::Hz8000)?,
            fma: fma_available(),
        })
    }

    /// Working memory for [`run`](Self::run), at either rate.
    pub(crate) fn scratch(&self) -> Scratch {
        Scratch::new(
            self.hz16
                .fft
                .get_scratch_len()
                .max(self.hz8.fft.get_scratch_len()),
        )
    }

    /// Turns the AVX2 and FMA code off (what a CPU without them runs; for tests).
    #[cfg(test)]
    fn without_simd(mut self) -> Self {
        self.fma = false;
        self
    }

    /// Scores every row: probabilities and next states into `rows`.
    pub(crate) fn run(&self, mut rows: Rows<'_>, scratch: &mut Scratch) {
        let net = match rows.rate {
            SileroRate::Hz16000 => &self.hz16,
            SileroRate::Hz8000 => &self.hz8,
        };
        let row_len = net.rate.row_len();
        assert!(
            rows.input.len() >= rows.rows * row_len
                && rows.state_out.len() >= rows.rows * STATE_LEN
                && rows.probs.len() >= rows.rows
                && rows.state_in_stride >= rows.rows
                && rows.state_in.len()
                    >= (STATE_LAYERS - 1) * rows.state_in_stride * STATE_WIDTH
                        + rows.rows * STATE_WIDTH,
            "buffers of {} rows",
            rows.rows
        );
        let mut first = 0;
        while first < rows.rows {
            let n = (rows.rows - first).min(BLOCK);
            #[cfg(target_arch = "x86_64")]
            if self.fma {
                avx2::block(net, &mut rows, first, n, scratch);
                first += n;
                continue;
            }
            block::<false>(net, &mut rows, first, n, scratch);
            first += n;
        }
    }
}

fn fma_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // Calling a function compiled for AVX2 and FMA; see the SAFETY note.
mod avx2 {
    use super::{Network, Rows, Scratch};

    pub(super) fn block(
        net: &Network,
        rows: &mut Rows<'_>,
        first: usize,
        n: usize,
        s: &mut Scratch,
    ) {
        // SAFETY: `NativeSilero::fma` is true only when `fma_available` found AVX2 and FMA.
        unsafe { block_avx2(net, rows, first, n, s) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn block_avx2(net: &Network, rows: &mut Rows<'_>, first: usize, n: usize, s: &mut Scratch) {
        super::block::<true>(net, rows, first, n, s);
    }
}

/// Rows `first..first + n` (at most [`BLOCK`]) through the network, layer by layer.
#[inline(always)]
fn block<const FMA: bool>(
    net: &Network,
    rows: &mut Rows<'_>,
    first: usize,
    n: usize,
    s: &mut Scratch,
) {
    let row_len = net.rate.row_len();
    // 1-2. Padding and STFT magnitudes, `[FRAMES][bins]` per row (time-major,
    // as every activation here).
    for r in 0..n {
        let input = &rows.input[(first + r) * row_len..(first + r + 1) * row_len];
        let mag = &mut s.act_in[r * ACT..r * ACT + net.bins * FRAMES];
        for f in 0..FRAMES {
            for (i, x) in s.frame[..net.n_fft].iter_mut().enumerate() {
                let at = f * net.hop + i;
                // Reflection on the right: sample `row_len + j` is `row_len - 2 - j`.
                let v = if at < row_len {
                    input[at]
                } else {
                    input[2 * row_len - 2 - at]
                };
                *x = v * net.window[i];
            }
            net.fft
                .process_with_scratch(
                    &mut s.frame[..net.n_fft],
                    &mut s.spectrum[..net.bins],
                    &mut s.fft_scratch,
                )
                .expect("buffers sized for the plan");
            for (k, c) in s.spectrum[..net.bins].iter().enumerate() {
                mag[f * net.bins + k] = (c.re * c.re + c.im * c.im).sqrt();
            }
        }
    }
    // 3. The encoder: each layer's output becomes the next one's input.
    let mut len = FRAMES;
    for conv in &net.encoder {
        len = conv_relu::<FMA>(conv, n, len, s);
        std::mem::swap(&mut s.act_in, &mut s.act_out);
    }
    debug_assert_eq!(len, 1);
    // 4. The LSTM cell on [x, h].
    let k = 2 * STATE_WIDTH;
    for r in 0..n {
        let xh = &mut s.xh[r * k..(r + 1) * k];
        xh[..STATE_WIDTH].copy_from_slice(&s.act_in[r * ACT..r * ACT + STATE_WIDTH]);
        let at = first + r;
        xh[STATE_WIDTH..].copy_from_slice(&rows.state_in[at * STATE_WIDTH..(at + 1) * STATE_WIDTH]);
    }
    for j in (0..GATES).step_by(4) {
        let w: [&[f32]; 4] = std::array::from_fn(|i| &net.lstm[(j + i) * k..(j + i + 1) * k]);
        for r in 0..n {
            let sums = dots_rows4::<FMA>(w, &s.xh[r * k..(r + 1) * k]);
            let gates = &mut s.gates[r * GATES + j..r * GATES + j + 4];
            for ((g, v), b) in gates.iter_mut().zip(sums).zip(&net.lstm_bias[j..j + 4]) {
                *g = v + b;
            }
        }
    }
    // 4-5. The gates, the next state, the decoder.
    let out_rows = rows.rows;
    for r in 0..n {
        let at = first + r;
        let g = &mut s.gates[r * GATES..(r + 1) * GATES];
        sigmoid_in_place::<FMA>(&mut g[..2 * STATE_WIDTH]);
        tanh_in_place::<FMA>(&mut g[2 * STATE_WIDTH..3 * STATE_WIDTH]);
        sigmoid_in_place::<FMA>(&mut g[3 * STATE_WIDTH..]);
        let c_in = &rows.state_in[(rows.state_in_stride + at) * STATE_WIDTH
            ..(rows.state_in_stride + at + 1) * STATE_WIDTH];
        // c' = f * c + i * g, kept in the i block; tanh(c') in the g block.
        let (ifg, o) = g.split_at_mut(3 * STATE_WIDTH);
        let (i_gate, fg) = ifg.split_at_mut(STATE_WIDTH);
        let (f_gate, g_gate) = fg.split_at_mut(STATE_WIDTH);
        for u in 0..STATE_WIDTH {
            i_gate[u] = f_gate[u] * c_in[u] + i_gate[u] * g_gate[u];
        }
        g_gate.copy_from_slice(i_gate);
        tanh_in_place::<FMA>(g_gate);
        let c_out =
            &mut rows.state_out[(out_rows + at) * STATE_WIDTH..(out_rows + at + 1) * STATE_WIDTH];
        c_out.copy_from_slice(i_gate);
        let h_out = &mut rows.state_out[at * STATE_WIDTH..(at + 1) * STATE_WIDTH];
        let mut logit = 0.0f32;
        for u in 0..STATE_WIDTH {
            let h = o[u] * g_gate[u];
            h_out[u] = h;
            logit += net.decoder[u] * h.max(0.0);
        }
        rows.probs[at] = 1.0 / (1.0 + (-(logit + net.decoder_bias)).exp());
    }
}

/// One convolution with ReLU for `n` rows: each row's input `[in_len][inputs]`
/// in `s.act_in`, its output `[out_len][outputs]` into `s.act_out`. An output
/// step's inputs are three input steps side by side (zeros past either end), so
/// they are copied, not gathered; each weight row is used for every row of the
/// block before the next is loaded. With one output step the taps that fall
/// past the ends are left out of the sums instead of multiplied by zeros.
#[inline(always)]
fn conv_relu<const FMA: bool>(conv: &Conv, n: usize, in_len: usize, s: &mut Scratch) -> usize {
    let out_len = conv.out_len(in_len);
    let ci = conv.inputs;
    let k = ci * 3;
    for r in 0..n {
        let x = &s.act_in[r * ACT..r * ACT + in_len * ci];
        let cols = &mut s.cols[r * COLS..r * COLS + out_len * k];
        for t in 0..out_len {
            for tap in 0..3 {
                let dst = &mut cols[t * k + tap * ci..t * k + (tap + 1) * ci];
                match (t * conv.stride + tap)
                    .checked_sub(1)
                    .filter(|&a| a < in_len)
                {
                    Some(a) => dst.copy_from_slice(&x[a * ci..(a + 1) * ci]),
                    None => dst.fill(0.0),
                }
            }
        }
    }
    // The taps that meet input when there is one output step.
    let live = |tap: usize| tap.checked_sub(1).is_some_and(|a| a < in_len);
    let lo = (0..3).find(|&tap| live(tap)).unwrap_or(0);
    let hi = (0..3).rev().find(|&tap| live(tap)).map_or(0, |t| t + 1);
    for co in 0..conv.outputs {
        let w = &conv.weight[co * k..(co + 1) * k];
        let b = conv.bias[co];
        for r in 0..n {
            let cols = &s.cols[r * COLS..r * COLS + out_len * k];
            let out = &mut s.act_out[r * ACT..r * ACT + out_len * conv.outputs];
            let col = |t: usize| &cols[t * k..(t + 1) * k];
            match out_len {
                4 => {
                    let v = dots::<4, FMA>(w, [col(0), col(1), col(2), col(3)]);
                    for (t, v) in v.into_iter().enumerate() {
                        out[t * conv.outputs + co] = (v + b).max(0.0);
                    }
                }
                2 => {
                    let v = dots::<2, FMA>(w, [col(0), col(1)]);
                    for (t, v) in v.into_iter().enumerate() {
                        out[t * conv.outputs + co] = (v + b).max(0.0);
                    }
                }
                1 => {
                    let [v] = dots::<1, FMA>(&w[lo * ci..hi * ci], [&col(0)[lo * ci..hi * ci]]);
                    out[co] = (v + b).max(0.0);
                }
                _ => {
                    for t in 0..out_len {
                        let [v] = dots::<1, FMA>(w, [col(t)]);
                        out[t * conv.outputs + co] = (v + b).max(0.0);
                    }
                }
            }
        }
    }
    out_len
}

/// Sums partial sums in a fixed order: lane `l` with lane `l + half`, then in order.
#[inline(always)]
fn reduce(acc: &[f32; LANES]) -> f32 {
    let mut s = 0.0f32;
    for l in 0..LANES / 2 {
        s += acc[l] + acc[l + LANES / 2];
    }
    s
}

/// `C` dot products of one weight row with `C` columns of at least its length,
/// in [`LANES`] partial sums each (AVX2 and FMA when `FMA`).
#[inline(always)]
fn dots<const C: usize, const FMA: bool>(w: &[f32], cols: [&[f32]; C]) -> [f32; C] {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        #[allow(unsafe_code)]
        // SAFETY: `FMA` is true only under `avx2::block`, whose caller found AVX2 and FMA.
        return unsafe { simd::dots(w, cols) };
    }
    let n = w.len();
    let whole = n - n % LANES;
    let mut acc = [[0.0f32; LANES]; C];
    for (i, wc) in w[..whole].chunks_exact(LANES).enumerate() {
        let at = i * LANES;
        for c in 0..C {
            let xc = &cols[c][at..at + LANES];
            for l in 0..LANES {
                acc[c][l] += wc[l] * xc[l];
            }
        }
    }
    std::array::from_fn(|c| {
        let mut tail = 0.0f32;
        for i in whole..n {
            tail += w[i] * cols[c][i];
        }
        reduce(&acc[c]) + tail
    })
}

/// Four weight rows against one column whose length is a multiple of [`LANES`]
/// (the LSTM's matrix-vector product).
#[inline(always)]
fn dots_rows4<const FMA: bool>(w: [&[f32]; 4], x: &[f32]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        #[allow(unsafe_code)]
        // SAFETY: as in `dots`.
        return unsafe { simd::dots_rows4(w, x) };
    }
    let mut acc = [[0.0f32; LANES]; 4];
    for (i, xc) in x.chunks_exact(LANES).enumerate() {
        let at = i * LANES;
        for r in 0..4 {
            let wr = &w[r][at..at + LANES];
            for l in 0..LANES {
                acc[r][l] += wr[l] * xc[l];
            }
        }
    }
    acc.map(|a| reduce(&a))
}

#[inline(always)]
fn sigmoid_in_place<const FMA: bool>(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        #[allow(unsafe_code)]
        // SAFETY: as in `dots`.
        return unsafe { simd::sigmoid_in_place(x) };
    }
    for v in x {
        *v = 1.0 / (1.0 + (-*v).exp());
    }
}

#[inline(always)]
fn tanh_in_place<const FMA: bool>(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        #[allow(unsafe_code)]
        // SAFETY: as in `dots`.
        return unsafe { simd::tanh_in_place(x) };
    }
    for v in x {
        *v = v.tanh();
    }
}

/// AVX2 and FMA: the dot products (the same [`LANES`] partial sums as the
/// portable code, each lane's products fused) and the exponential of the gates
/// (a degree-6 polynomial after range reduction, within a few units in the
/// last place of `f32::exp` over the range the gates take).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // Intrinsics on checked lengths; see the SAFETY notes.
mod simd {
    use std::arch::x86_64::{
        __m256, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT, _mm_add_ps, _mm_add_ss,
        _mm_cvtss_f32, _mm_movehdup_ps, _mm_movehl_ps, _mm256_add_epi32, _mm256_add_ps,
        _mm256_castps256_ps128, _mm256_castsi256_ps, _mm256_cvtps_epi32, _mm256_div_ps,
        _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_loadu_ps, _mm256_max_ps,
        _mm256_min_ps, _mm256_mul_ps, _mm256_round_ps, _mm256_set1_epi32, _mm256_set1_ps,
        _mm256_setzero_ps, _mm256_slli_epi32, _mm256_storeu_ps, _mm256_sub_ps,
    };

    use super::LANES;

    /// The sum of the 16 lanes of `lo` and `hi` (halves added pairwise, then
    /// quarters, then pairs).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn hsum(lo: __m256, hi: __m256) -> f32 {
        let v = _mm256_add_ps(lo, hi);
        let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
        _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)))
    }

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn dots<const C: usize>(w: &[f32], cols: [&[f32]; C]) -> [f32; C] {
        let n = w.len();
        for c in cols {
            assert!(c.len() >= n, "a column shorter than its weight row");
        }
        let whole = n - n % LANES;
        let mut lo = [_mm256_setzero_ps(); C];
        let mut hi = [_mm256_setzero_ps(); C];
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 16 <= whole <= n, and every column holds at least n floats.
            unsafe {
                let w0 = _mm256_loadu_ps(w.as_ptr().add(i));
                let w1 = _mm256_loadu_ps(w.as_ptr().add(i + 8));
                for c in 0..C {
                    let x = cols[c].as_ptr().add(i);
                    lo[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), lo[c]);
                    hi[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x.add(8)), hi[c]);
                }
            }
            i += LANES;
        }
        let mut out = [0.0f32; C];
        for c in 0..C {
            let mut tail = 0.0f32;
            for j in whole..n {
                tail = w[j].mul_add(cols[c][j], tail);
            }
            out[c] = hsum(lo[c], hi[c]) + tail;
        }
        out
    }

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn dots_rows4(w: [&[f32]; 4], x: &[f32]) -> [f32; 4] {
        let n = x.len();
        assert!(n.is_multiple_of(LANES), "a column of whole lanes");
        for r in w {
            assert!(r.len() >= n, "a weight row shorter than the column");
        }
        let mut lo = [_mm256_setzero_ps(); 4];
        let mut hi = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i < n {
            // SAFETY: i + 16 <= n, and every row holds at least n floats.
            unsafe {
                let x0 = _mm256_loadu_ps(x.as_ptr().add(i));
                let x1 = _mm256_loadu_ps(x.as_ptr().add(i + 8));
                for r in 0..4 {
                    let p = w[r].as_ptr().add(i);
                    lo[r] = _mm256_fmadd_ps(_mm256_loadu_ps(p), x0, lo[r]);
                    hi[r] = _mm256_fmadd_ps(_mm256_loadu_ps(p.add(8)), x1, hi[r]);
                }
            }
            i += LANES;
        }
        let mut out = [0.0f32; 4];
        for r in 0..4 {
            out[r] = hsum(lo[r], hi[r]);
        }
        out
    }

    /// `exp(x)` for 8 lanes, `x` clamped to [-87, 88] (where `exp` is a normal float).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn exp8(x: __m256) -> __m256 {
        let x = _mm256_min_ps(
            _mm256_max_ps(x, _mm256_set1_ps(-87.0)),
            _mm256_set1_ps(88.0),
        );
        // x = n ln2 + r, |r| <= ln2 / 2; ln2 split in two for an exact n * ln2_hi.
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
        // exp(r) = 1 + r + r^2 (1/2 + r (1/6 + r (1/24 + r (1/120 + r (1/720 + r / 5040)))))
        let mut p = _mm256_set1_ps(1.987_569_1e-4);
        for c in [
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            0.166_666_65,
            0.5,
        ] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let p = _mm256_fmadd_ps(
            _mm256_mul_ps(p, r),
            r,
            _mm256_add_ps(r, _mm256_set1_ps(1.0)),
        );
        // 2^n: n + 127 in the exponent bits (n is within [-126, 127] after the clamp).
        let pow2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        )));
        _mm256_mul_ps(p, pow2)
    }

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn sigmoid_in_place(x: &mut [f32]) {
        let one = _mm256_set1_ps(1.0);
        let mut chunks = x.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds 8 floats.
            unsafe {
                let v = _mm256_loadu_ps(c.as_ptr());
                let e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
                _mm256_storeu_ps(c.as_mut_ptr(), _mm256_div_ps(one, _mm256_add_ps(one, e)));
            }
        }
        for v in chunks.into_remainder() {
            *v = 1.0 / (1.0 + (-*v).exp());
        }
    }

    /// `tanh(x) = 1 - 2 / (exp(2x) + 1)`.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn tanh_in_place(x: &mut [f32]) {
        let one = _mm256_set1_ps(1.0);
        let two = _mm256_set1_ps(2.0);
        let mut chunks = x.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds 8 floats.
            unsafe {
                let v = _mm256_loadu_ps(c.as_ptr());
                let e = exp8(_mm256_mul_ps(v, two));
                let t = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
                _mm256_storeu_ps(c.as_mut_ptr(), t);
            }
        }
        for v in chunks.into_remainder() {
            *v = v.tanh();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Option<Vec<u8>> {
        let path = crate::runtime::find_model_file(crate::runtime::SILERO_VAD_FILE).ok()?;
        std::fs::read(path).ok()
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_simd_exponentials_are_within_a_few_ulps() {
        if !fma_available() {
            return;
        }
        let xs: Vec<f32> = (-2000..=2000).map(|i| i as f32 * 0.01).collect();
        let mut s = xs.clone();
        let mut t = xs.clone();
        #[allow(unsafe_code)]
        // SAFETY: checked above.
        unsafe {
            simd::sigmoid_in_place(&mut s);
            simd::tanh_in_place(&mut t);
        }
        for (i, &x) in xs.iter().enumerate() {
            let want_s = 1.0 / (1.0 + f64::from(-x).exp());
            let want_t = f64::from(x).tanh();
            assert!(
                (f64::from(s[i]) - want_s).abs() <= 2e-7,
                "sigmoid({x}) = {}",
                s[i]
            );
            assert!(
                (f64::from(t[i]) - want_t).abs() <= 4e-7,
                "tanh({x}) = {}",
                t[i]
            );
        }
    }

    #[test]
    fn the_portable_and_simd_paths_agree_and_blocks_do_not_mix_rows() {
        let Some(bytes) = model() else { return };
        let fast = NativeSilero::load(&bytes).unwrap();
        let portable = NativeSilero::load(&bytes).unwrap().without_simd();
        // 11 rows: one full block and a partial one; different audio per row.
        let rate = SileroRate::Hz16000;
        let rows = 11;
        let input: Vec<f32> = (0..rows * rate.row_len())
            .map(|i| ((i as f32 * 0.013).sin() * 0.3) * ((i / rate.row_len()) as f32 + 1.0) / 11.0)
            .collect();
        let state_in: Vec<f32> = (0..2 * rows * STATE_WIDTH)
            .map(|i| ((i as f32) * 0.07).cos() * 0.1)
            .collect();
        let run = |m: &NativeSilero, n: usize| {
            let mut out = vec![0.0; n * STATE_LEN];
            let mut probs = vec![0.0; n];
            let mut scratch = m.scratch();
            m.run(
                Rows {
                    rate,
                    rows: n,
                    input: &input[..n * rate.row_len()],
                    state_in: &state_in,
                    state_in_stride: rows,
                    state_out: &mut out,
                    probs: &mut probs,
                },
                &mut scratch,
            );
            (probs, out)
        };
        let (pf, sf) = run(&fast, rows);
        let (pp, sp) = run(&portable, rows);
        let worst = pf
            .iter()
            .zip(&pp)
            .chain(sf.iter().zip(&sp))
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 1e-5, "SIMD vs portable {worst:e}");
        assert!(pf.iter().any(|&p| p != pf[0]), "rows differ");
        // The first row alone gives what it gave in the block.
        let (p1, s1) = run(&fast, 1);
        assert_eq!(p1[0].to_bits(), pf[0].to_bits());
        assert_eq!(s1[..STATE_WIDTH], sf[..STATE_WIDTH]);
        assert_eq!(
            s1[STATE_WIDTH..2 * STATE_WIDTH],
            sf[rows * STATE_WIDTH..(rows + 1) * STATE_WIDTH]
        );
    }

    #[test]
    fn a_basis_that_is_not_a_windowed_dft_is_refused() {
        let n = 8;
        let bins = n / 2 + 1;
        let window: Vec<f32> = (0..n).map(|i| 0.5 - 0.5 * (i as f32 * 0.7).cos()).collect();
        let mut basis = vec![0.0f32; 2 * bins * n];
        for k in 0..bins {
            for i in 0..n {
                let a = 2.0 * std::f64::consts::PI * (k * i) as f64 / n as f64;
                basis[k * n + i] = (f64::from(window[i]) * a.cos()) as f32;
                basis[(bins + k) * n + i] = (-f64::from(window[i]) * a.sin()) as f32;
            }
        }
        assert!(check_basis(&basis, &window, bins).is_ok());
        basis[(bins + 1) * n + 2] += 1e-3;
        assert!(check_basis(&basis, &window, bins).is_err());
    }
}
