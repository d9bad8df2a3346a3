//! The attention softmax of the int8 Smart Turn graph, bit for bit ONNX
//! Runtime's `QLinearSoftmax`, in fewer cycles.
//!
//! At `ORT_ENABLE_EXTENDED` and above, ONNX Runtime fuses each attention
//! softmax of the quantised graph (`DequantizeLinear -> Softmax ->
//! QuantizeLinear`, uint8 in and out) into its contrib kernel `QLinearSoftmax`:
//! per row of 400 scores the maximum, the sum of a 256-entry table of
//! exponentials in one dependent chain of float additions, then one division
//! per element. Its four nodes took about a quarter to a third of the model's kernel time in
//! ONNX Runtime's profiler on the build machines
//! (`bench/results/smart-turn-runtimes.md`).
//!
//! [`softmax_rows`] computes the same numbers with the same operations in the
//! same order where the order matters:
//!
//! - the table: the same expression ONNX Runtime evaluates (the largest float
//!   over the row length and its natural log in float, less 5 reserve bits and
//!   over the input scale in double; `exp` in double of each shifted entry,
//!   rounded to float);
//! - the sum of each row: float additions in element order, as ONNX Runtime
//!   does; eight rows are summed at once in eight independent chains, so the
//!   additions overlap in the CPU instead of waiting on each other, but each
//!   row's own sum is the same sequence of roundings;
//! - the output: `entry * floor(1 / y_scale) / sum` in double precision,
//!   rounded half to even, plus `y_zero_point`, capped at 255, element by
//!   element. That is what the onnxruntime 1.32 library gives on the machines
//!   checked (0 differences over the 61 million softmax outputs of the golden
//!   cases and over random rows), where a float quotient differs on about one
//!   output in ten million. Here it is computed once per value present in the
//!   row, not per element (`quantise_row`), with AVX2 when the CPU has it.
//!
//! ONNX Runtime picks its kernels by CPU, and other ways of computing this
//! softmax (a float quotient, halves away from zero, sums over vector lanes)
//! differ from it on about one element in ten million. So before the kernel is
//! used, [`check_against_onnx_runtime`] runs rows chosen to tell those ways
//! apart (`qsoftmax_check/`, made by `scripts/goldens/qsoftmax_check.py`)
//! through ONNX Runtime's own kernel on this CPU and through this one; a single
//! differing byte keeps ONNX Runtime's kernel (the shipped graph).
//!
//! [`rewrite_model`] replaces each such triple in the model's graph with one
//! node of the custom domain [`DOMAIN`], and [`domain`] gives ONNX Runtime the
//! kernel for it. `tests/smart_turn_exact_softmax_matches_onnx_runtime.rs` holds the model's output
//! to ONNX Runtime's own, bit for bit, on every golden case; the unit tests
//! below hold [`softmax_rows`] to a literal transcription of the scalar kernel
//! on random rows. ONNX Runtime's input zero point does not enter its kernel
//! (a softmax does not change when every input moves by the same amount), and
//! it does not here either.

use std::collections::HashMap;

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorDomain, OperatorInput,
    OperatorOutput,
};
use ort::value::TensorElementType;

use crate::onnx_wire::{
    ATTR_I, ATTR_NAME, GRAPH_NODE, GRAPH_OUTPUT, MODEL_GRAPH, Message, NODE_ATTRIBUTE, NODE_INPUT,
    NODE_OP_TYPE, NODE_OUTPUT, OnnxWireError, VALUE_INFO_NAME, Value, add_opset_import,
    custom_node,
};

/// The custom operator domain of the rewritten graph.
pub(crate) const DOMAIN: &str = "ai.brisvox";
/// The custom operator's name.
pub(crate) const OP: &str = "QLinearSoftmaxExact";

/// Rows summed at once (independent chains of additions).
const ROWS_AT_ONCE: usize = 8;

/// What one softmax node computes with: ONNX Runtime's table and output scale.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// `table[i]`: the exponential of entry `i - 255` (shifted), as ONNX Runtime builds it.
    table: [f32; 256],
    /// `floor(1 / y_scale)`.
    y_scale: f32,
    y_zero_point: u8,
}

impl Params {
    /// The parameters for rows of `row_len` scores quantised with `x_scale`,
    /// output quantised with `y_scale` and `y_zero_point`.
    pub(crate) fn new(x_scale: f32, y_scale: f32, y_zero_point: u8, row_len: usize) -> Params {
        // ONNX Runtime: log(FLT_MAX / reduce_len), the quotient and its log in
        // float (a log in double gives a table that differed from the library's
        // in one output of a million on random rows), then in double less 5
        // reserve bits, floored at 0, over the scale.
        let largest = f32::MAX / row_len as f32;
        let shift = (f64::from(largest.ln()) - 5.0).max(0.0) / f64::from(x_scale);
        let mut table = [0.0f32; 256];
        for (i, entry) in table.iter_mut().enumerate() {
            *entry = ((i as f64 - 255.0 + shift) * f64::from(x_scale)).exp() as f32;
        }
        Params {
            table,
            y_scale: (1.0f32 / y_scale).floor(),
            y_zero_point,
        }
    }
}

/// Softmax of every row of `x` (rows of `row_len`) into `y`, as ONNX Runtime's
/// `QLinearSoftmax` (uint8) computes it.
///
/// # Panics
/// If `row_len` is 0, or `x` and `y` differ in length or are not whole rows.
pub(crate) fn softmax_rows(params: &Params, x: &[u8], y: &mut [u8], row_len: usize) {
    assert!(row_len > 0 && x.len() == y.len() && x.len().is_multiple_of(row_len));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        avx2::softmax_rows(params, x, y, row_len);
        return;
    }
    rows(params, x, y, row_len);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // Calling a function compiled for AVX2; see the SAFETY note.
mod avx2 {
    use super::Params;

    pub(super) fn softmax_rows(params: &Params, x: &[u8], y: &mut [u8], row_len: usize) {
        // SAFETY: the only caller checked `is_x86_feature_detected!("avx2")`.
        unsafe { rows_avx2(params, x, y, row_len) }
    }

    #[target_feature(enable = "avx2")]
    fn rows_avx2(params: &Params, x: &[u8], y: &mut [u8], row_len: usize) {
        super::rows(params, x, y, row_len);
    }
}

/// The kernel, inlined into each instruction-set variant: the rows in blocks
/// of [`ROWS_AT_ONCE`] (their sums side by side), then any rows left one by one.
#[inline(always)]
fn rows(params: &Params, x: &[u8], y: &mut [u8], row_len: usize) {
    let block = ROWS_AT_ONCE * row_len;
    let mut x_blocks = x.chunks_exact(block);
    let mut y_blocks = y.chunks_exact_mut(block);
    for (xs, ys) in (&mut x_blocks).zip(&mut y_blocks) {
        let r: [&[u8]; ROWS_AT_ONCE] = std::array::from_fn(|k| &xs[k * row_len..(k + 1) * row_len]);
        let ranges = r.map(min_max);
        let sums = sums_of_eight(params, &r, &ranges, row_len);
        for (k, out) in ys.chunks_exact_mut(row_len).enumerate() {
            quantise_row(params, r[k], ranges[k], sums[k], out);
        }
    }
    for (row, out) in x_blocks
        .remainder()
        .chunks_exact(row_len)
        .zip(y_blocks.into_remainder().chunks_exact_mut(row_len))
    {
        let range = min_max(row);
        let offset = 255 - usize::from(range.1);
        let mut sum = 0.0f32;
        for &v in row {
            sum += params.table[(offset + usize::from(v)) & 255];
        }
        quantise_row(params, row, range, sum, out);
    }
}

/// The smallest and largest value of a row.
#[inline(always)]
fn min_max(row: &[u8]) -> (u8, u8) {
    let (mut lo, mut hi) = (u8::MAX, 0u8);
    for &v in row {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

/// The sums of eight rows, each in element order: eight independent chains
/// of additions, so each addition need not wait for the one before it in
/// another row. The row's maximum aligns with entry 255 of the table; the
/// masks cannot change an index (offset + value <= 255) and spare the bounds
/// checks.
#[inline(always)]
fn sums_of_eight(
    params: &Params,
    r: &[&[u8]; ROWS_AT_ONCE],
    ranges: &[(u8, u8); ROWS_AT_ONCE],
    row_len: usize,
) -> [f32; ROWS_AT_ONCE] {
    let t = &params.table;
    let o: [usize; ROWS_AT_ONCE] = std::array::from_fn(|k| 255 - usize::from(ranges[k].1));
    let (r0, r1, r2, r3) = (
        &r[0][..row_len],
        &r[1][..row_len],
        &r[2][..row_len],
        &r[3][..row_len],
    );
    let (r4, r5, r6, r7) = (
        &r[4][..row_len],
        &r[5][..row_len],
        &r[6][..row_len],
        &r[7][..row_len],
    );
    let mut s = [0.0f32; ROWS_AT_ONCE];
    for j in 0..row_len {
        s[0] += t[(o[0] + usize::from(r0[j])) & 255];
        s[1] += t[(o[1] + usize::from(r1[j])) & 255];
        s[2] += t[(o[2] + usize::from(r2[j])) & 255];
        s[3] += t[(o[3] + usize::from(r3[j])) & 255];
        s[4] += t[(o[4] + usize::from(r4[j])) & 255];
        s[5] += t[(o[5] + usize::from(r5[j])) & 255];
        s[6] += t[(o[6] + usize::from(r6[j])) & 255];
        s[7] += t[(o[7] + usize::from(r7[j])) & 255];
    }
    s
}

/// `y = min(round(entry * y_scale / sum) + zero point, 255)` for each element,
/// the quotient in double precision, halves to even. An output depends on the
/// element's value only, so it is computed once per value present in the row
/// (a table over `min..=max`) and looked up for each element
/// ([`super::qlookup::lookup_bytes`]).
///
/// The quotient is taken as `entry * (y_scale / sum)`: one division per row.
/// Its error against the correctly rounded `entry * y_scale / sum` is a few
/// units in the last place of a double (under 1e-13 for quotients up to 256),
/// so it rounds to the same integer unless the quotient lies within 1e-9 of a
/// half; a row with such a value is computed again with one division per value.
#[inline(always)]
fn quantise_row(params: &Params, row: &[u8], (lo, hi): (u8, u8), sum: f32, out: &mut [u8]) {
    if sum == 0.0 {
        // Cannot happen (the row's maximum maps to exp(shift) > 0); ONNX
        // Runtime would leave the row unwritten, here it is the zero point.
        out.fill(params.y_zero_point);
        return;
    }
    let zero_point = f64::from(params.y_zero_point);
    let (y_scale, sum) = (f64::from(params.y_scale), f64::from(sum));
    let ratio = y_scale / sum;
    let (lo, hi) = (usize::from(lo), usize::from(hi));
    let entries = &params.table[255 - hi + lo..=255];
    let mut by_value = [0u8; 256];
    let mut near_half = false;
    for (q, &e) in by_value[lo..=hi].iter_mut().zip(entries) {
        let v = f64::from(e) * ratio;
        near_half |= (v - v.floor() - 0.5).abs() < 1e-9;
        *q = to_u8(v.round_ties_even() + zero_point);
    }
    if near_half {
        for (q, &e) in by_value[lo..=hi].iter_mut().zip(entries) {
            let v = f64::from(e) * y_scale / sum;
            *q = to_u8(v.round_ties_even() + zero_point);
        }
    }
    // Each element looked up in the row's table (AVX-512 byte permutes where
    // the CPU has them, as the graph's lookup tables).
    super::qlookup::lookup_bytes(row, &[by_value], out);
}

/// A whole number `v >= 0` as a byte, 255 above it. Adding 2^52 puts the
/// number in the low bits of the double's mantissa (no conversion
/// instruction, so the loop above stays in vector registers).
#[inline(always)]
fn to_u8(v: f64) -> u8 {
    const TO_LOW_BITS: f64 = 4_503_599_627_370_496.0; // 2^52
    ((v.min(255.0) + TO_LOW_BITS).to_bits() & 0xff) as u8
}

/// The custom operator: inputs `x` (uint8), `x_scale`, `x_zero_point`
/// (optional, unused), `y_scale`, `y_zero_point` (optional, uint8), as the
/// `DequantizeLinear` and `QuantizeLinear` it replaces had them; softmax over
/// the last axis.
struct QLinearSoftmaxExact;

impl Operator for QLinearSoftmaxExact {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        OP
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [
            OperatorInput::required(TensorElementType::Uint8),
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::optional(TensorElementType::Uint8),
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::optional(TensorElementType::Uint8),
        ]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Uint8)]
    }

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        // The scales are the node's constants: one set of parameters, made on
        // the first run (and again only if an input scale ever changed).
        let mut cache: Option<((u32, u32, u8, usize), Params)> = None;
        Ok(Box::new(move |ctx: &ComputeContext| {
            let x = ctx.input(0)?.ok_or_else(|| missing("x"))?;
            let (shape, xs) = x.try_extract_tensor::<u8>()?;
            let row_len = shape
                .last()
                .and_then(|&d| usize::try_from(d).ok())
                .ok_or_else(|| ort::Error::new("QLinearSoftmaxExact: x has no last axis"))?;
            let x_scale = scalar::<f32>(ctx, 1, "x_scale")?.ok_or_else(|| missing("x_scale"))?;
            let y_scale = scalar::<f32>(ctx, 3, "y_scale")?.ok_or_else(|| missing("y_scale"))?;
            let y_zero_point = scalar::<u8>(ctx, 4, "y_zero_point")?.unwrap_or(0);
            let mut y = ctx
                .output(0, shape.to_vec())?
                .ok_or_else(|| missing("the output"))?;
            let (_, ys) = y.try_extract_tensor_mut::<u8>()?;
            if xs.is_empty() {
                return Ok(());
            }
            if row_len == 0 || !xs.len().is_multiple_of(row_len) || ys.len() != xs.len() {
                return Err(ort::Error::new(format!(
                    "QLinearSoftmaxExact: {} values do not make rows of {row_len}",
                    xs.len()
                )));
            }
            let key = (x_scale.to_bits(), y_scale.to_bits(), y_zero_point, row_len);
            if cache.as_ref().is_none_or(|(k, _)| *k != key) {
                cache = Some((key, Params::new(x_scale, y_scale, y_zero_point, row_len)));
            }
            let (_, params) = cache.as_ref().expect("set just above");
            softmax_rows(params, xs, ys, row_len);
            Ok(())
        }))
    }
}

fn missing(what: &str) -> ort::Error {
    ort::Error::new(format!("QLinearSoftmaxExact: no {what}"))
}

/// Input `index` as a one-value tensor, or `None` when the optional input is absent.
fn scalar<T: ort::value::PrimitiveTensorElementType + Copy + std::fmt::Debug>(
    ctx: &ComputeContext,
    index: usize,
    what: &str,
) -> ort::Result<Option<T>> {
    let Some(value) = ctx.input(index)? else {
        return Ok(None);
    };
    let (_, values) = value.try_extract_tensor::<T>()?;
    match values {
        [v] => Ok(Some(*v)),
        other => Err(ort::Error::new(format!(
            "QLinearSoftmaxExact: {what} must be one value (per-tensor quantisation), got {}",
            other.len()
        ))),
    }
}

/// The custom operator domain to register with the session of a rewritten model.
pub(crate) fn domain() -> ort::Result<OperatorDomain> {
    OperatorDomain::new(DOMAIN)?.add(QLinearSoftmaxExact)
}

/// Row length of the check rows.
const CHECK_ROW: usize = 400;

/// One set of check rows: its one-softmax graph, its rows and its parameters.
struct CheckSet {
    name: &'static str,
    graph: &'static [u8],
    rows: &'static [u8],
}

macro_rules! check_set {
    ($name:literal) => {
        CheckSet {
            name: $name,
            graph: include_bytes!(concat!("qsoftmax_check/", $name, ".onnx")),
            rows: include_bytes!(concat!("qsoftmax_check/", $name, ".rows")),
        }
    };
}

const CHECK_SETS: [CheckSet; 6] = [
    check_set!("layer0"),
    check_set!("layer1"),
    check_set!("layer2"),
    check_set!("layer3"),
    check_set!("wide"),
    check_set!("offset"),
];
const CHECK_MANIFEST: &str = include_str!("qsoftmax_check/sets.tsv");

/// `(x_scale, y_scale, y_zero_point)` of check set `name`, from the manifest.
fn check_parameters(name: &str) -> Option<(f32, f32, u8)> {
    CHECK_MANIFEST
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&name))
        .and_then(|cols| {
            Some((
                cols.get(1)?.parse().ok()?,
                cols.get(2)?.parse().ok()?,
                cols.get(3)?.parse().ok()?,
            ))
        })
}

/// Whether this kernel gives ONNX Runtime's own `QLinearSoftmax` output on this
/// CPU, byte for byte, on every check row (module docs); the first difference
/// or failure otherwise. Runs once per process (a few milliseconds).
pub(crate) fn check_against_onnx_runtime() -> Result<(), String> {
    static OUTCOME: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    OUTCOME.get_or_init(run_check).clone()
}

fn run_check() -> Result<(), String> {
    use ort::session::builder::GraphOptimizationLevel;
    for set in &CHECK_SETS {
        let (x_scale, y_scale, y_zero_point) = check_parameters(set.name)
            .ok_or_else(|| format!("check set {}: not in the manifest", set.name))?;
        let fail = |e: ort::Error| format!("check set {}: ONNX Runtime: {e}", set.name);
        let mut session = crate::runtime::session_builder()
            .map_err(|e| format!("check set {}: {e}", set.name))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| fail(ort::Error::from(e)))?
            .with_intra_threads(1)
            .map_err(|e| fail(ort::Error::from(e)))?
            .with_inter_threads(1)
            .map_err(|e| fail(ort::Error::from(e)))?
            .commit_from_memory(set.graph)
            .map_err(fail)?;
        let n = set.rows.len() / CHECK_ROW;
        let input =
            ort::value::TensorRef::from_array_view(([n, CHECK_ROW], set.rows)).map_err(fail)?;
        let outputs = session.run(ort::inputs!["x" => input]).map_err(fail)?;
        let (_, theirs) = outputs
            .get("y")
            .ok_or_else(|| format!("check set {}: no output y", set.name))?
            .try_extract_tensor::<u8>()
            .map_err(fail)?;
        let params = Params::new(x_scale, y_scale, y_zero_point, CHECK_ROW);
        let mut ours = vec![0u8; set.rows.len()];
        softmax_rows(&params, set.rows, &mut ours, CHECK_ROW);
        let differing = ours.iter().zip(theirs).filter(|(a, b)| a != b).count();
        if differing > 0 || theirs.len() != ours.len() {
            return Err(format!(
                "check set {}: {differing} of {} outputs differ from ONNX Runtime's kernel on this CPU",
                set.name,
                ours.len()
            ));
        }
    }
    Ok(())
}

/// One decoded node.
struct Node {
    msg: Message,
}

impl Node {
    fn op(&self) -> &str {
        self.msg.string(NODE_OP_TYPE).unwrap_or("")
    }
    fn is_default_domain(&self) -> bool {
        self.msg.in_default_domain()
    }
    fn inputs(&self) -> Vec<&str> {
        self.msg.strings(NODE_INPUT)
    }
    fn outputs(&self) -> Vec<&str> {
        self.msg.strings(NODE_OUTPUT)
    }
    fn attribute_names(&self) -> Vec<String> {
        self.msg
            .bytes(NODE_ATTRIBUTE)
            .filter_map(|a| Message::decode(a).ok())
            .filter_map(|a| a.string(ATTR_NAME).map(str::to_owned))
            .collect()
    }
    /// The INT attribute `name`, if the node has it.
    fn int_attribute(&self, name: &str) -> Option<i64> {
        self.msg
            .bytes(NODE_ATTRIBUTE)
            .filter_map(|a| Message::decode(a).ok())
            .find(|a| a.string(ATTR_NAME) == Some(name))
            .and_then(|a| a.varint(ATTR_I))
            .map(|i| i as i64)
    }
}

/// The model with every `DequantizeLinear -> Softmax(last axis) ->
/// QuantizeLinear` chain whose middle values nothing else reads replaced by one
/// [`OP`] node, and the number replaced (0: the model comes back unchanged).
pub(crate) fn rewrite_model(model: &[u8]) -> Result<(Vec<u8>, usize), OnnxWireError> {
    let mut msg = Message::decode(model)?;
    let mut replaced = 0;
    for (number, value) in msg.fields.iter_mut() {
        if *number == MODEL_GRAPH
            && let Value::Bytes(graph) = value
        {
            let (rewritten, n) = rewrite_graph(graph)?;
            *graph = rewritten;
            replaced = n;
            break;
        }
    }
    if replaced == 0 {
        return Ok((model.to_vec(), 0));
    }
    add_opset_import(&mut msg, DOMAIN, 1);
    Ok((msg.encode(), replaced))
}

fn rewrite_graph(graph: &[u8]) -> Result<(Vec<u8>, usize), OnnxWireError> {
    let mut msg = Message::decode(graph)?;
    let nodes: Vec<Node> = msg
        .bytes(GRAPH_NODE)
        .map(|b| Message::decode(b).map(|msg| Node { msg }))
        .collect::<Result<_, _>>()?;
    // Who reads each value: node inputs and the graph's outputs.
    let mut readers: HashMap<&str, usize> = HashMap::new();
    for node in &nodes {
        for input in node.inputs() {
            *readers.entry(input).or_default() += 1;
        }
    }
    let graph_outputs: Vec<String> = msg
        .bytes(GRAPH_OUTPUT)
        .filter_map(|b| Message::decode(b).ok())
        .filter_map(|v| v.string(VALUE_INFO_NAME).map(str::to_owned))
        .collect();
    for name in &graph_outputs {
        *readers.entry(name.as_str()).or_default() += 1;
    }
    let producer: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs().into_iter().map(move |o| (o, i)))
        .collect();
    let reader_of = |value: &str| -> Option<usize> {
        nodes
            .iter()
            .position(|n| n.inputs().contains(&value))
            .filter(|_| readers.get(value) == Some(&1))
    };

    // node index -> what becomes of it: dropped, or replaced by new bytes.
    let mut fate: HashMap<usize, Option<Vec<u8>>> = HashMap::new();
    for (s, softmax) in nodes.iter().enumerate() {
        if softmax.op() != "Softmax" || !softmax.is_default_domain() {
            continue;
        }
        if softmax.int_attribute("axis").unwrap_or(-1) != -1
            || softmax.attribute_names().iter().any(|a| a != "axis")
        {
            continue;
        }
        let (Some(&s_in), Some(&s_out)) = (softmax.inputs().first(), softmax.outputs().first())
        else {
            continue;
        };
        let Some(&d) = producer.get(s_in) else {
            continue;
        };
        let dq = &nodes[d];
        if dq.op() != "DequantizeLinear"
            || !dq.is_default_domain()
            || !dq.attribute_names().is_empty()
            || readers.get(s_in) != Some(&1)
        {
            continue;
        }
        let Some(q) = reader_of(s_out) else {
            continue;
        };
        let quant = &nodes[q];
        if quant.op() != "QuantizeLinear"
            || !quant.is_default_domain()
            || !quant.attribute_names().is_empty()
        {
            continue;
        }
        let (dq_in, q_in, q_out) = (dq.inputs(), quant.inputs(), quant.outputs());
        if dq_in.len() < 2 || q_in.len() < 2 || q_out.len() != 1 {
            continue;
        }
        let input = |v: &Vec<&str>, i: usize| v.get(i).copied().unwrap_or("").to_owned();
        let inputs = [
            input(&dq_in, 0),
            input(&dq_in, 1),
            input(&dq_in, 2),
            input(&q_in, 1),
            input(&q_in, 2),
        ];
        let inputs = inputs.each_ref().map(String::as_str);
        fate.insert(d, None);
        fate.insert(s, None);
        fate.insert(q, Some(custom_node(DOMAIN, OP, &inputs, &q_out)));
    }
    let replaced = fate.values().filter(|f| f.is_some()).count();
    if replaced == 0 {
        return Ok((graph.to_vec(), 0));
    }
    msg.replace_entries(GRAPH_NODE, fate);
    Ok((msg.encode(), replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ONNX Runtime's uint8 kernel computes, literally: one row at a
    /// time, one element at a time, the quotient in double, halves to even.
    fn reference(params: &Params, x: &[u8], row_len: usize) -> Vec<u8> {
        let mut y = Vec::with_capacity(x.len());
        for row in x.chunks_exact(row_len) {
            let max = *row.iter().max().unwrap();
            let shifted = &params.table[255 - usize::from(max)..];
            let mut sum = 0.0f32;
            for &v in row {
                sum += shifted[usize::from(v)];
            }
            for &v in row {
                let t = shifted[usize::from(v)];
                let q = (f64::from(t) * f64::from(params.y_scale) / f64::from(sum))
                    .round_ties_even() as u32
                    + u32::from(params.y_zero_point);
                y.push(if q > 255 { 255 } else { q as u8 });
            }
        }
        y
    }

    /// A small deterministic generator (xorshift), so the tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Rows like attention scores: a spread around a centre, some rows flat,
    /// some with a single peak.
    fn rows(rng: &mut Rng, n: usize, row_len: usize) -> Vec<u8> {
        (0..n * row_len)
            .map(|i| {
                let row = i / row_len;
                match row % 5 {
                    0 => 128,
                    1 if i % row_len == row % row_len => 255,
                    1 => 3,
                    _ => {
                        let spread = 16 + (row % 7) * 30;
                        (100 + (rng.next() % spread as u64) as usize).min(255) as u8
                    }
                }
            })
            .collect()
    }

    #[test]
    fn every_row_matches_the_scalar_kernel_bit_for_bit() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // The four attention softmaxes of Smart Turn v3.2 (x_scale, y_scale,
        // y_zero_point), then others.
        let scales = [
            (0.208_193_59, 0.003_875_13, 0),
            (0.120_033_14, 0.003_870_92, 0),
            (0.161_902_03, 0.003_919_47, 0),
            (0.183_487_16, 0.003_920_82, 0),
            (0.05, 1.0 / 255.0, 0),
            (0.9, 0.01, 7),
        ];
        for (x_scale, y_scale, zp) in scales {
            // Whole blocks of rows, and a remainder.
            for (n, row_len) in [(24, 400), (13, 400), (3, 7), (9, 1)] {
                let params = Params::new(x_scale, y_scale, zp, row_len);
                let x = rows(&mut rng, n, row_len);
                let mut y = vec![0u8; x.len()];
                softmax_rows(&params, &x, &mut y, row_len);
                assert_eq!(
                    y,
                    reference(&params, &x, row_len),
                    "{x_scale} {n}x{row_len}"
                );
                // And the portable path, whatever this CPU has.
                let mut z = vec![0u8; x.len()];
                super::rows(&params, &x, &mut z, row_len);
                assert_eq!(z, y);
            }
        }
    }

    #[test]
    fn every_check_set_is_listed_with_its_parameters_and_whole_rows() {
        for set in &CHECK_SETS {
            let (x_scale, y_scale, zp) = check_parameters(set.name).expect(set.name);
            assert!(x_scale > 0.0 && y_scale > 0.0, "{}", set.name);
            assert!(!set.rows.is_empty() && set.rows.len() % CHECK_ROW == 0);
            assert!(set.graph.len() > 100);
            // The rows are ones where other ways of computing the softmax
            // differ: the kernel and the literal transcription still agree.
            let params = Params::new(x_scale, y_scale, zp, CHECK_ROW);
            let mut y = vec![0u8; set.rows.len()];
            softmax_rows(&params, set.rows, &mut y, CHECK_ROW);
            assert_eq!(y, reference(&params, set.rows, CHECK_ROW), "{}", set.name);
        }
    }

    /// The check rows are worth their bytes: on every set, a kernel that
    /// divides in float (ONNX Runtime's own source reads that way) or sums over
    /// 16 vector lanes gives other bytes than this one somewhere.
    #[test]
    fn the_check_rows_tell_the_ways_of_computing_apart() {
        for set in &CHECK_SETS {
            let (x_scale, y_scale, zp) = check_parameters(set.name).expect(set.name);
            let params = Params::new(x_scale, y_scale, zp, CHECK_ROW);
            let ours = reference(&params, set.rows, CHECK_ROW);
            let (mut float_quotient, mut lanes) = (Vec::new(), Vec::new());
            for row in set.rows.chunks_exact(CHECK_ROW) {
                let max = *row.iter().max().unwrap();
                let entries: Vec<f32> = row
                    .iter()
                    .map(|&v| params.table[255 - usize::from(max) + usize::from(v)])
                    .collect();
                let seq: f32 = entries.iter().fold(0.0, |s, &e| s + e);
                let mut acc = [0.0f32; 16];
                for chunk in entries.chunks(16) {
                    for (a, &e) in acc.iter_mut().zip(chunk) {
                        *a += e;
                    }
                }
                let lane_sum: f32 = acc.iter().fold(0.0, |s, &e| s + e);
                for &e in &entries {
                    let q = ((e * params.y_scale) / seq).round_ties_even() as u32 + u32::from(zp);
                    float_quotient.push(q.min(255) as u8);
                    let q = (f64::from(e) * f64::from(params.y_scale) / f64::from(lane_sum))
                        .round_ties_even() as u32
                        + u32::from(zp);
                    lanes.push(q.min(255) as u8);
                }
            }
            assert_ne!(float_quotient, ours, "{}: a float quotient", set.name);
            assert_ne!(lanes, ours, "{}: sums over 16 lanes", set.name);
        }
    }

    #[test]
    fn bytes_that_are_not_a_model_are_an_error_and_a_model_without_softmax_is_unchanged() {
        assert!(rewrite_model(&[0xff, 0xff, 0xff]).is_err());
        assert!(
            rewrite_model(b"\x3a\x05abc").is_err(),
            "a graph field that runs past the end"
        );
        // A model whose graph holds one Relu node: nothing to rewrite.
        let mut node = Message::default();
        for (n, v) in [
            (NODE_INPUT, "x"),
            (NODE_OUTPUT, "y"),
            (NODE_OP_TYPE, "Relu"),
        ] {
            node.fields.push((n, Value::Bytes(v.as_bytes().to_vec())));
        }
        let mut graph = Message::default();
        graph.fields.push((GRAPH_NODE, Value::Bytes(node.encode())));
        let mut model = Message::default();
        model
            .fields
            .push((MODEL_GRAPH, Value::Bytes(graph.encode())));
        let bytes = model.encode();
        assert_eq!(rewrite_model(&bytes), Ok((bytes.clone(), 0)));
    }

    #[test]
    fn a_row_sums_to_about_one_in_the_output_scale() {
        let params = Params::new(0.2, 1.0 / 256.0, 0, 400);
        let x: Vec<u8> = (0..400).map(|i| (i % 200) as u8).collect();
        let mut y = vec![0u8; 400];
        softmax_rows(&params, &x, &mut y, 400);
        let total: u32 = y.iter().map(|&v| u32::from(v)).sum();
        assert!((230..=280).contains(&total), "{total}");
        // The largest inputs get the largest outputs.
        assert!(y[199] >= y[0]);
    }
}
