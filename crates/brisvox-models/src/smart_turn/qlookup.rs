//! Elementwise chains of the int8 Smart Turn graph as lookup tables, bit for
//! bit what ONNX Runtime computes for them.
//!
//! Between its integer matrix products the quantised graph runs chains of
//! float operators from one uint8 tensor to the next:
//!
//! - each **GELU**: `DequantizeLinear` (one scale and zero point for the whole
//!   tensor), an optional `Add` of a per-column bias, `x * 0.5 * (1 + erf(x /
//!   sqrt 2))` as `Div`, `Erf`, `Add`, `Mul`, `Mul`, and usually a
//!   `QuantizeLinear` back to uint8 ([`Graph::chain_at`]);
//! - each attention layer's **query, key and value projections**:
//!   `DequantizeLinear`, the bias `Add` (the key has none), the `Reshape` and
//!   `Transpose` nodes into heads, for the query and key a `Mul` by the
//!   attention scale, and a `QuantizeLinear`, to uint8 or, for the key and
//!   value after [`super::qsigned`], to int8 ([`Graph::projection_at`]).
//!
//! ONNX Runtime runs these operators one after the other over the whole
//! tensor (the FFN's are 400 x 1536 values), each a pass through memory.
//! Every operator of such a chain is elementwise with constant other inputs,
//! or only moves values (`Reshape`, `Transpose`), so an output value depends
//! only on the uint8 input value (256 possibilities) and, with a bias, its
//! column: the chain is a table of 256 entries per column. [`rewrite_model`]
//! finds the chains (that exact shape, every intermediate value read by the
//! chain alone, or besides by `Shape` nodes that only read a move's shape),
//! has ONNX Runtime itself compute each table by running the
//! chain's own elementwise nodes on the 256 input values of every column (a
//! small graph of those nodes and their constants, graph optimisation off, so
//! each operator runs on the same CPU kernel as in the full graph, where ONNX
//! Runtime leaves these operators unfused), and replaces the elementwise nodes
//! of each chain by one node of the custom domain that looks the output up
//! (`QLinearLookup` for a uint8 output, `QLinearLookupInt8` for int8,
//! `DequantizeLookup` for the one GELU that ends in float). A projection's
//! `Reshape` and `Transpose` stay, moving the looked-up bytes instead of
//! floats, and its `Shape` readers read those.
//!
//! The tables are ONNX Runtime's own numbers, so the rewritten graph gives the
//! same bits; [`super::model::SmartTurn::load`] still compares the rewritten
//! graph with the graph without tables on probe inputs before using it, and
//! `tests/smart_turn_exact_softmax_matches_onnx_runtime.rs` compares them on
//! every golden case.

use std::collections::HashMap;

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorDomain, OperatorInput,
    OperatorOutput,
};
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef};

use crate::onnx_wire::{
    DATA_TYPE_FLOAT, DATA_TYPE_INT8, DATA_TYPE_UINT8, GRAPH_INITIALIZER, GRAPH_INPUT, GRAPH_NAME,
    GRAPH_NODE, GRAPH_OUTPUT, MODEL_GRAPH, Message, NODE_ATTRIBUTE, NODE_INPUT, NODE_OP_TYPE,
    NODE_OUTPUT, OnnxWireError, RawTensor, TENSOR_NAME, VALUE_INFO_NAME, Value, add_opset_import,
    custom_node, initializer, model_graph, value_info,
};

/// The custom operator domain (shared with the softmax kernel).
pub(crate) use super::qsoftmax::DOMAIN;
/// The operator of a chain that ends in `QuantizeLinear` to uint8.
pub(crate) const OP_U8: &str = "QLinearLookup";
/// The operator of a chain that ends in `QuantizeLinear` to int8.
pub(crate) const OP_I8: &str = "QLinearLookupInt8";
/// The operator of a chain that ends in float.
pub(crate) const OP_F32: &str = "DequantizeLookup";

/// Values of a uint8 input.
const LEVELS: usize = 256;

/// One elementwise chain found in the graph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chain {
    /// Indices (in the graph's node order) of the elementwise nodes it
    /// replaces, in the chain's order (the `DequantizeLinear` first).
    nodes: Vec<usize>,
    /// `Reshape` and `Transpose` nodes between them, kept (on the quantised values).
    moves: Vec<usize>,
    /// `Shape` nodes reading a move's output: (the node, the move's position
    /// in `moves`); they read the move's quantised output instead.
    shape_readers: Vec<(usize, usize)>,
    /// The uint8 value its `DequantizeLinear` reads.
    input: String,
    /// The value its last node writes.
    output: String,
    /// Columns with their own table: the bias length, or 1 without a bias.
    columns: usize,
    /// `DATA_TYPE_UINT8` or `DATA_TYPE_INT8` (ends in `QuantizeLinear`), or
    /// `DATA_TYPE_FLOAT`.
    out_type: u64,
}

/// A graph's nodes, constants and who reads what.
pub(super) struct Graph {
    pub(super) nodes: Vec<Message>,
    /// Float, uint8 and int8 initializers by name (others are not needed here).
    pub(super) constants: HashMap<String, RawTensor>,
    /// The encoded initializer of each name.
    pub(super) initializer_bytes: HashMap<String, Vec<u8>>,
    /// How many times each value is read: node inputs and graph outputs.
    readers: HashMap<String, usize>,
    /// The nodes reading each value, once per input that names it.
    reader_nodes: HashMap<String, Vec<usize>>,
    pub(super) producer: HashMap<String, usize>,
}

impl Graph {
    pub(super) fn decode(graph: &Message) -> Result<Graph, OnnxWireError> {
        let nodes: Vec<Message> = graph
            .bytes(GRAPH_NODE)
            .map(Message::decode)
            .collect::<Result<_, _>>()?;
        let mut constants = HashMap::new();
        let mut initializer_bytes = HashMap::new();
        for bytes in graph.bytes(GRAPH_INITIALIZER) {
            let msg = Message::decode(bytes)?;
            let Some(name) = msg.string(TENSOR_NAME) else {
                continue;
            };
            initializer_bytes.insert(name.to_owned(), bytes.to_vec());
            if let Ok(t) = RawTensor::decode(bytes) {
                constants.insert(name.to_owned(), t);
            }
        }
        let mut readers: HashMap<String, usize> = HashMap::new();
        let mut reader_nodes: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            for input in node.strings(NODE_INPUT) {
                *readers.entry(input.to_owned()).or_default() += 1;
                reader_nodes.entry(input.to_owned()).or_default().push(i);
            }
        }
        for output in graph
            .bytes(GRAPH_OUTPUT)
            .filter_map(|b| Message::decode(b).ok())
        {
            if let Some(name) = output.string(VALUE_INFO_NAME) {
                *readers.entry(name.to_owned()).or_default() += 1;
            }
        }
        let producer = nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.strings(NODE_OUTPUT)
                    .into_iter()
                    .map(move |o| (o.to_owned(), i))
            })
            .collect();
        Ok(Graph {
            nodes,
            constants,
            initializer_bytes,
            readers,
            reader_nodes,
            producer,
        })
    }

    pub(super) fn op(&self, i: usize) -> &str {
        self.nodes[i].string(NODE_OP_TYPE).unwrap_or("")
    }

    /// A node of the default domain, without attributes, of type `op`.
    pub(super) fn is_plain(&self, i: usize, op: &str) -> bool {
        let n = &self.nodes[i];
        self.op(i) == op && n.in_default_domain() && n.bytes(NODE_ATTRIBUTE).next().is_none()
    }

    pub(super) fn inputs(&self, i: usize) -> Vec<&str> {
        self.nodes[i].strings(NODE_INPUT)
    }

    /// The single output of node `i`.
    pub(super) fn output(&self, i: usize) -> Option<&str> {
        match self.nodes[i].strings(NODE_OUTPUT).as_slice() {
            [o] => Some(o),
            _ => None,
        }
    }

    pub(super) fn readers(&self, value: &str) -> usize {
        self.readers.get(value).copied().unwrap_or(0)
    }

    /// The node that alone reads `value` (and the graph does not output it).
    fn only_reader(&self, value: &str) -> Option<usize> {
        if self.readers(value) != 1 {
            return None;
        }
        self.reader_nodes.get(value)?.first().copied()
    }

    pub(super) fn scalar_f32(&self, name: &str) -> Option<f32> {
        self.constants.get(name).and_then(RawTensor::scalar_f32)
    }

    pub(super) fn scalar_u8(&self, name: &str) -> Option<u8> {
        self.constants.get(name).and_then(RawTensor::scalar_u8)
    }

    /// The element type a one-value zero point gives a `QuantizeLinear`'s
    /// output: uint8 or int8 (`None` for anything else).
    fn quantized_type(&self, zero_point: &str) -> Option<u64> {
        let t = self.constants.get(zero_point)?;
        if t.scalar_u8().is_some() {
            Some(DATA_TYPE_UINT8)
        } else {
            t.scalar_i8().map(|_| DATA_TYPE_INT8)
        }
    }

    /// The node that alone reads `value` besides `Shape` nodes (which read
    /// only its shape), and those `Shape` nodes.
    fn reader_besides_shapes(&self, value: &str) -> Option<(usize, Vec<usize>)> {
        let mut shapes = Vec::new();
        let mut other = None;
        for &i in self.reader_nodes.get(value)? {
            if self.op(i) == "Shape" && self.nodes[i].in_default_domain() {
                shapes.push(i);
            } else if other.replace(i).is_some() {
                return None;
            }
        }
        // Every reader is a node (the graph does not output the value).
        let other = other?;
        (self.readers(value) == shapes.len() + 1).then_some((other, shapes))
    }

    /// The other input of a two-input node, when `one` is among its inputs and
    /// the other is a one-value float constant.
    fn with_scalar(&self, i: usize, one: &str) -> bool {
        match self.inputs(i).as_slice() {
            [a, b] if *a == one => self.scalar_f32(b).is_some(),
            [a, b] if *b == one => self.scalar_f32(a).is_some(),
            _ => false,
        }
    }

    /// `DequantizeLinear` of a uint8 value with one scale and zero point; its input.
    fn dequantize(&self, i: usize) -> Option<&str> {
        if !self.is_plain(i, "DequantizeLinear") {
            return None;
        }
        match self.inputs(i).as_slice() {
            [x, scale, zero_point]
                if !self.initializer_bytes.contains_key(*x)
                    && self.scalar_f32(scale).is_some()
                    && self.scalar_u8(zero_point).is_some() =>
            {
                Some(x)
            }
            _ => None,
        }
    }

    /// The chain whose `Erf` is node `e`, if it has the exact shape of the module docs.
    fn chain_at(&self, e: usize) -> Option<Chain> {
        if !self.is_plain(e, "Erf") {
            return None;
        }
        let [erf_in] = self.inputs(e)[..] else {
            return None;
        };
        let div = *self.producer.get(erf_in)?;
        let [pre, divisor] = self.inputs(div)[..] else {
            return None;
        };
        if !self.is_plain(div, "Div")
            || self.readers(erf_in) != 1
            || self.scalar_f32(divisor).is_none()
        {
            return None;
        }
        // Before the Div: the DequantizeLinear, or a bias Add after it.
        let first = *self.producer.get(pre)?;
        let (dq, columns) = if self.is_plain(first, "Add") {
            let [a, b] = self.inputs(first)[..] else {
                return None;
            };
            let (dq_out, bias) = if self.constants.contains_key(b) {
                (a, b)
            } else {
                (b, a)
            };
            let bias = self.constants.get(bias)?;
            if bias.data_type != DATA_TYPE_FLOAT || bias.dims.len() > 1 {
                return None;
            }
            let dq = *self.producer.get(dq_out)?;
            if self.readers(dq_out) != 1 {
                return None;
            }
            (dq, bias.raw.len() / 4)
        } else {
            (first, 1)
        };
        let input = self.dequantize(dq)?.to_owned();
        // The pre-GELU value is read by the Div and by the last Mul only.
        if self.readers(pre) != 2 {
            return None;
        }
        let erf_out = self.output(e)?;
        let add = self.only_reader(erf_out)?;
        if !self.is_plain(add, "Add") || !self.with_scalar(add, erf_out) {
            return None;
        }
        let add_out = self.output(add)?;
        let half = self.only_reader(add_out)?;
        if !self.is_plain(half, "Mul") || !self.with_scalar(half, add_out) {
            return None;
        }
        let half_out = self.output(half)?;
        let gelu = self.only_reader(half_out)?;
        if !self.is_plain(gelu, "Mul") {
            return None;
        }
        match self.inputs(gelu)[..] {
            [a, b] if (a == pre && b == half_out) || (a == half_out && b == pre) => {}
            _ => return None,
        }
        let gelu_out = self.output(gelu)?;
        let mut nodes = vec![dq];
        if first != dq {
            nodes.push(first);
        }
        nodes.extend([div, e, add, half, gelu]);
        // A QuantizeLinear to uint8 with one scale and zero point ends it, if there is one.
        let quantize = self.only_reader(gelu_out).filter(|&q| {
            self.is_plain(q, "QuantizeLinear")
                && matches!(self.inputs(q)[..], [_, scale, zero_point]
                    if self.scalar_f32(scale).is_some() && self.scalar_u8(zero_point).is_some())
        });
        let (output, out_type) = match quantize {
            Some(q) => {
                nodes.push(q);
                (self.output(q)?.to_owned(), DATA_TYPE_UINT8)
            }
            None => (gelu_out.to_owned(), DATA_TYPE_FLOAT),
        };
        Some(Chain {
            nodes,
            moves: Vec::new(),
            shape_readers: Vec::new(),
            input,
            output,
            columns: columns.max(1),
            out_type,
        })
    }

    /// The projection chain that starts at `DequantizeLinear` node `dq`:
    /// `DequantizeLinear`, an optional per-column bias `Add`, then `Reshape`
    /// and `Transpose` nodes, an optional `Mul` by a constant, and a
    /// `QuantizeLinear` (to uint8, or to int8 after [`super::qsigned`]), every
    /// value read by the next node alone, except that `Shape` nodes may read
    /// a move's output (the key projection's first `Reshape`). The moves stay
    /// (they carry the quantised values after the rewrite, and the `Shape`
    /// nodes read them); the rest is a table.
    fn projection_at(&self, dq: usize) -> Option<Chain> {
        let input = self.dequantize(dq)?.to_owned();
        let mut nodes = vec![dq];
        let mut moves: Vec<usize> = Vec::new();
        let mut shape_readers = Vec::new();
        let mut columns = 1;
        let mut value = self.output(dq)?;
        loop {
            let (next, shapes) = self.reader_besides_shapes(value)?;
            if !shapes.is_empty() {
                // Only a move's output keeps its shape in the rewritten graph.
                let &last_move = moves.last()?;
                if self.output(last_move) != Some(value) {
                    return None;
                }
                shape_readers.extend(shapes.into_iter().map(|s| (s, moves.len() - 1)));
            }
            let data_first = self.inputs(next).first() == Some(&value);
            match self.op(next) {
                // The bias only right after the dequantisation: its column is
                // then the input's last axis.
                "Add" if self.is_plain(next, "Add") && nodes.len() == 1 && moves.is_empty() => {
                    let bias = self
                        .inputs(next)
                        .into_iter()
                        .find(|&i| i != value)
                        .and_then(|b| self.constants.get(b))?;
                    if bias.data_type != DATA_TYPE_FLOAT || bias.dims.len() > 1 {
                        return None;
                    }
                    columns = (bias.raw.len() / 4).max(1);
                    nodes.push(next);
                }
                "Reshape" | "Transpose" if data_first && self.nodes[next].in_default_domain() => {
                    moves.push(next);
                }
                "Mul" if self.is_plain(next, "Mul") && self.with_scalar(next, value) => {
                    nodes.push(next);
                }
                "QuantizeLinear" if self.is_plain(next, "QuantizeLinear") && data_first => {
                    let [_, scale, zero_point] = self.inputs(next)[..] else {
                        return None;
                    };
                    self.scalar_f32(scale)?;
                    let out_type = self.quantized_type(zero_point)?;
                    nodes.push(next);
                    // Worth a table only when float work goes away.
                    if nodes.len() < 3 {
                        return None;
                    }
                    return Some(Chain {
                        nodes,
                        moves,
                        shape_readers,
                        input,
                        output: self.output(next)?.to_owned(),
                        columns,
                        out_type,
                    });
                }
                _ => return None,
            }
            value = self.output(next)?;
        }
    }
}

/// Every chain of the graph that can become a table (module docs), each input once.
#[cfg(test)]
pub(crate) fn find_chains(graph: &Message) -> Result<Vec<Chain>, OnnxWireError> {
    let g = Graph::decode(graph)?;
    Ok(chains_of(&g))
}

fn chains_of(g: &Graph) -> Vec<Chain> {
    let mut chains: Vec<Chain> = Vec::new();
    for i in 0..g.nodes.len() {
        let found = g.chain_at(i).or_else(|| g.projection_at(i));
        if let Some(chain) = found
            && !chains
                .iter()
                .any(|c| c.input == chain.input || c.nodes.iter().any(|n| chain.nodes.contains(n)))
        {
            chains.push(chain);
        }
    }
    chains
}

/// `node` with every input named in `from` renamed `to` (and, when `output`
/// is given, its output renamed so).
fn renamed(node: &Message, from: &[&str], to: &str, output: Option<&str>) -> Message {
    let mut node = node.clone();
    for (number, value) in node.fields.iter_mut() {
        if let Value::Bytes(b) = value {
            if *number == NODE_INPUT && from.iter().any(|f| f.as_bytes() == b.as_slice()) {
                *b = to.as_bytes().to_vec();
            } else if *number == NODE_OUTPUT
                && let Some(o) = output
            {
                *b = o.as_bytes().to_vec();
            }
        }
    }
    node
}

/// The model with every chain replaced by a lookup node, and how many were
/// replaced (0: the model comes back unchanged). The tables are computed by
/// ONNX Runtime (loaded already) from the chains' own nodes.
pub(crate) fn rewrite_model(model: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let wire = |e: OnnxWireError| e.to_string();
    let (mut msg, graph_index, mut graph) = model_graph(model).map_err(wire)?;
    let g = Graph::decode(&graph).map_err(wire)?;
    let chains = chains_of(&g);
    if chains.is_empty() {
        return Ok((model.to_vec(), 0));
    }
    let tables = compute_tables(&msg, &g, &chains)?;

    // node index -> its replacement (None: dropped).
    let mut fate: HashMap<usize, Option<Vec<u8>>> = HashMap::new();
    let mut new_initializers = Vec::new();
    for (k, (chain, table)) in chains.iter().zip(&tables).enumerate() {
        let table_name = format!("brisvox_lookup_{k}");
        let op = match chain.out_type {
            DATA_TYPE_UINT8 => OP_U8,
            DATA_TYPE_INT8 => OP_I8,
            _ => OP_F32,
        };
        for &i in &chain.nodes {
            fate.insert(i, None);
        }
        // The lookup takes the dequantisation's place; moves, if any, then
        // carry its uint8 output to the name the chain's output had.
        let looked_up = if chain.moves.is_empty() {
            chain.output.clone()
        } else {
            format!("{}_brisvox_lookup", chain.input)
        };
        fate.insert(
            chain.nodes[0],
            Some(custom_node(
                DOMAIN,
                op,
                &[chain.input.as_str(), table_name.as_str()],
                &[looked_up.as_str()],
            )),
        );
        // Each move reads the previous one's quantised output under a new name
        // (the graph may declare the old names float in its value_info).
        let move_outputs: Vec<String> = (0..chain.moves.len())
            .map(|m| {
                if m + 1 == chain.moves.len() {
                    chain.output.clone()
                } else {
                    format!("{}_brisvox_q", g.output(chain.moves[m]).unwrap_or(""))
                }
            })
            .collect();
        let mut carried = looked_up.clone();
        for (&i, out) in chain.moves.iter().zip(&move_outputs) {
            let node = &g.nodes[i];
            let data = node
                .strings(NODE_INPUT)
                .first()
                .copied()
                .unwrap_or("")
                .to_owned();
            let node = renamed(node, &[data.as_str()], &carried, Some(out));
            fate.insert(i, Some(node.encode()));
            carried = out.clone();
        }
        for &(s, m) in &chain.shape_readers {
            let old = g.output(chain.moves[m]).unwrap_or("");
            fate.insert(
                s,
                Some(renamed(&g.nodes[s], &[old], &move_outputs[m], None).encode()),
            );
        }
        new_initializers.push(initializer(
            &table_name,
            &[chain.columns, LEVELS],
            chain.out_type,
            table.clone(),
        ));
    }
    graph.replace_entries(GRAPH_NODE, fate);
    for t in new_initializers {
        graph.push_bytes(GRAPH_INITIALIZER, t);
    }
    msg.fields[graph_index].1 = Value::Bytes(graph.encode());
    add_opset_import(&mut msg, DOMAIN, 1);
    Ok((msg.encode(), chains.len()))
}

/// Each chain's table (`[columns][256]`, little-endian values of its output
/// type), computed by ONNX Runtime running the chains' own nodes on every
/// input value of every column.
fn compute_tables(model: &Message, g: &Graph, chains: &[Chain]) -> Result<Vec<Vec<u8>>, String> {
    let mut graph = Message::default();
    graph.push_bytes(GRAPH_NAME, "brisvox_lookup_tables");
    let mut needed: Vec<&str> = Vec::new();
    for chain in chains {
        // The elementwise nodes alone, each reading the previous one's output
        // where a move stood between them.
        let moved: Vec<&str> = chain.moves.iter().filter_map(|&m| g.output(m)).collect();
        let mut previous: Option<&str> = None;
        for &i in &chain.nodes {
            let node = match previous {
                Some(prev) => renamed(&g.nodes[i], &moved, prev, None),
                None => g.nodes[i].clone(),
            };
            graph.push_bytes(GRAPH_NODE, node.encode());
            previous = g.output(i);
            for input in g.inputs(i) {
                if g.initializer_bytes.contains_key(input) && !needed.contains(&input) {
                    needed.push(input);
                }
            }
        }
    }
    for name in &needed {
        graph.push_bytes(GRAPH_INITIALIZER, g.initializer_bytes[*name].clone());
    }
    for chain in chains {
        graph.push_bytes(
            GRAPH_INPUT,
            value_info(&chain.input, DATA_TYPE_UINT8, &[LEVELS, chain.columns]),
        );
        graph.push_bytes(
            GRAPH_OUTPUT,
            value_info(&chain.output, chain.out_type, &[LEVELS, chain.columns]),
        );
    }
    let mut small = model.clone();
    for (number, value) in small.fields.iter_mut() {
        if *number == MODEL_GRAPH {
            *value = Value::Bytes(graph.encode());
        }
    }
    let fail = |e: ort::Error| format!("the lookup tables' graph: ONNX Runtime: {e}");
    let mut session = crate::runtime::session_builder()
        .map_err(|e| format!("the lookup tables' graph: {e}"))?
        .with_optimization_level(GraphOptimizationLevel::Disable)
        .map_err(|e| fail(ort::Error::from(e)))?
        .with_intra_threads(1)
        .map_err(|e| fail(ort::Error::from(e)))?
        .with_inter_threads(1)
        .map_err(|e| fail(ort::Error::from(e)))?
        .commit_from_memory(&small.encode())
        .map_err(fail)?;
    // Row q holds the value q in every column.
    let inputs: Vec<Vec<u8>> = chains
        .iter()
        .map(|c| {
            (0..LEVELS)
                .flat_map(|q| std::iter::repeat_n(q as u8, c.columns))
                .collect()
        })
        .collect();
    let mut values = Vec::with_capacity(chains.len());
    for (chain, data) in chains.iter().zip(&inputs) {
        let tensor =
            TensorRef::from_array_view(([LEVELS, chain.columns], data.as_slice())).map_err(fail)?;
        values.push((
            chain.input.clone(),
            ort::session::SessionInputValue::from(tensor),
        ));
    }
    let outputs = session.run(values).map_err(fail)?;
    let mut tables = Vec::with_capacity(chains.len());
    for chain in chains {
        let out = outputs
            .get(chain.output.as_str())
            .ok_or_else(|| format!("the lookup tables' graph has no output {}", chain.output))?;
        // ONNX Runtime gives [256][columns]; the kernel reads [columns][256].
        let c = chain.columns;
        let table = match chain.out_type {
            DATA_TYPE_UINT8 => {
                let (_, v) = out.try_extract_tensor::<u8>().map_err(fail)?;
                transpose(v, c)
            }
            DATA_TYPE_INT8 => {
                let (_, v) = out.try_extract_tensor::<i8>().map_err(fail)?;
                transpose(v, c)
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect()
            }
            _ => {
                let (_, v) = out.try_extract_tensor::<f32>().map_err(fail)?;
                transpose(v, c)
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect()
            }
        };
        tables.push(table);
    }
    Ok(tables)
}

/// `[256][columns]` to `[columns][256]`.
fn transpose<T: Copy + Default>(v: &[T], columns: usize) -> Vec<T> {
    let mut out = vec![T::default(); v.len()];
    for (q, row) in v.chunks_exact(columns).enumerate() {
        for (c, &x) in row.iter().enumerate() {
            out[c * LEVELS + q] = x;
        }
    }
    out
}

/// `y[i] = table[column of i][x[i]]`, columns the last axis (`table` holds
/// `[columns][256]` values; one column applies to every element).
pub(crate) fn lookup<T: Copy>(x: &[u8], table: &[[T; LEVELS]], y: &mut [T]) {
    debug_assert_eq!(x.len(), y.len());
    match table {
        [only] => {
            for (o, &q) in y.iter_mut().zip(x) {
                *o = only[usize::from(q)];
            }
        }
        columns => {
            for (xs, ys) in x
                .chunks_exact(columns.len())
                .zip(y.chunks_exact_mut(columns.len()))
            {
                for ((o, &q), t) in ys.iter_mut().zip(xs).zip(columns) {
                    *o = t[usize::from(q)];
                }
            }
        }
    }
}

/// A one-byte table value: the uint8 and int8 outputs are looked up as bytes.
pub(crate) trait Byte: Copy + Default + std::fmt::Debug {}
impl Byte for u8 {}
impl Byte for i8 {}

/// [`lookup`] for one-byte tables (uint8 or int8): one table for every column
/// (the first convolution's GELU, the key projections) with AVX-512 where the
/// CPU has it (F, BW and VBMI), the table in four registers and 64 values
/// looked up with two byte permutes (about 18x the scalar loop); per-column
/// tables with the scalar loop. The same bytes either way (unit test).
pub(crate) fn lookup_bytes<T: Byte>(x: &[u8], table: &[[T; LEVELS]], y: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if avx512::available() {
        avx512::lookup(x, table, y);
        return;
    }
    lookup(x, table, y);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // AVX-512 intrinsics; see the SAFETY notes.
mod avx512 {
    use std::arch::x86_64::{
        __m512i, _mm512_loadu_si512, _mm512_mask_blend_epi8, _mm512_movepi8_mask,
        _mm512_permutex2var_epi8, _mm512_storeu_si512,
    };

    use super::{Byte, LEVELS};

    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }

    pub(super) fn lookup<T: Byte>(x: &[u8], table: &[[T; LEVELS]], y: &mut [T]) {
        const { assert!(std::mem::size_of::<T>() == 1) };
        // SAFETY: called only when `available` found AVX-512 F, BW and VBMI.
        unsafe { lookup_avx512(x, table, y) }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn lookup_avx512<T: Byte>(x: &[u8], table: &[[T; LEVELS]], y: &mut [T]) {
        let n = x.len().min(y.len());
        let (x, y) = (&x[..n], &mut y[..n]);
        match table {
            [only] => {
                let t = only.as_ptr();
                // SAFETY: `only` holds 256 one-byte values (`Byte` types are
                // u8 and i8): four unaligned 64-byte loads.
                let q: [__m512i; 4] =
                    std::array::from_fn(|k| unsafe { _mm512_loadu_si512(t.add(64 * k).cast()) });
                let mut xs = x.chunks_exact(64);
                let mut ys = y.chunks_exact_mut(64);
                for (xc, yc) in (&mut xs).zip(&mut ys) {
                    // SAFETY: 64-byte chunks (64 one-byte values), unaligned
                    // loads and stores.
                    let idx = unsafe { _mm512_loadu_si512(xc.as_ptr().cast()) };
                    // Bits 0-6 pick among 128 bytes; bit 7 picks the half.
                    let low = _mm512_permutex2var_epi8(q[0], idx, q[1]);
                    let high = _mm512_permutex2var_epi8(q[2], idx, q[3]);
                    let r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high);
                    unsafe { _mm512_storeu_si512(yc.as_mut_ptr().cast(), r) };
                }
                super::lookup(xs.remainder(), table, ys.into_remainder());
            }
            // Per-column tables: dword gathers were slower than the scalar
            // loop on the AMD EPYC build machine (512 against 416 us for 400 x
            // 1536 values), so those stay scalar.
            _ => super::lookup(x, table, y),
        }
    }
}

/// Runs one lookup node: input 0 the uint8 values, input 1 the `[columns][256]` table.
fn run_lookup<T>(
    ctx: &ComputeContext,
    op: &str,
    look: fn(&[u8], &[[T; LEVELS]], &mut [T]),
) -> ort::Result<()>
where
    T: ort::value::PrimitiveTensorElementType + Copy + std::fmt::Debug,
{
    let x = ctx
        .input(0)?
        .ok_or_else(|| ort::Error::new(format!("{op}: no x")))?;
    let (shape, xs) = x.try_extract_tensor::<u8>()?;
    let table = ctx
        .input(1)?
        .ok_or_else(|| ort::Error::new(format!("{op}: no table")))?;
    let (table_shape, ts) = table.try_extract_tensor::<T>()?;
    let columns = match table_shape[..] {
        [c, l] if l as usize == LEVELS && c > 0 => c as usize,
        _ => {
            return Err(ort::Error::new(format!(
                "{op}: the table is {table_shape:?}, not [columns, 256]"
            )));
        }
    };
    let last = shape.last().map_or(1, |&d| d.max(0) as usize);
    if columns > 1 && last != columns {
        return Err(ort::Error::new(format!(
            "{op}: x's last axis has {last} values, the table {columns} columns"
        )));
    }
    let (rows, rest) = ts.as_chunks::<LEVELS>();
    debug_assert!(rest.is_empty());
    let mut y = ctx
        .output(0, shape.to_vec())?
        .ok_or_else(|| ort::Error::new(format!("{op}: no output")))?;
    let (_, ys) = y.try_extract_tensor_mut::<T>()?;
    if ys.len() != xs.len() {
        return Err(ort::Error::new(format!(
            "{op}: output and input sizes differ"
        )));
    }
    look(xs, rows, ys);
    Ok(())
}

/// A lookup operator: uint8 in, a `[columns][256]` table of the output's type
/// ([`OP_U8`]: uint8, [`OP_I8`]: int8, [`OP_F32`]: float), the output looked up.
struct LookupOperator {
    name: &'static str,
    table: TensorElementType,
    run: fn(&ComputeContext) -> ort::Result<()>,
}

impl Operator for LookupOperator {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        self.name
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [
            OperatorInput::required(TensorElementType::Uint8),
            OperatorInput::required(self.table),
        ]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(self.table)]
    }

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        let run = self.run;
        Ok(Box::new(move |ctx: &ComputeContext| run(ctx)))
    }
}

/// `domain` with the lookup operators added.
pub(crate) fn add_operators(domain: OperatorDomain) -> ort::Result<OperatorDomain> {
    domain
        .add(LookupOperator {
            name: OP_U8,
            table: TensorElementType::Uint8,
            run: |ctx| run_lookup::<u8>(ctx, OP_U8, lookup_bytes),
        })?
        .add(LookupOperator {
            name: OP_I8,
            table: TensorElementType::Int8,
            run: |ctx| run_lookup::<i8>(ctx, OP_I8, lookup_bytes),
        })?
        .add(LookupOperator {
            name: OP_F32,
            table: TensorElementType::Float32,
            run: |ctx| run_lookup::<f32>(ctx, OP_F32, lookup::<f32>),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx_wire::node;

    fn scalar(name: &str, v: f32) -> Vec<u8> {
        initializer(name, &[], DATA_TYPE_FLOAT, v.to_le_bytes().to_vec())
    }

    /// A graph holding one GELU chain: with a bias of 3 columns when `bias`,
    /// a last QuantizeLinear when `quantize`, and the pre-GELU value also read
    /// by another node when `leak`.
    fn gelu_graph(bias: bool, quantize: bool, leak: bool) -> Message {
        let mut g = Message::default();
        let mut push_node = |bytes: Vec<u8>| g.push_bytes(GRAPH_NODE, bytes);
        push_node(node("DequantizeLinear", &["x", "s", "z"], &["dq"], &[]));
        let pre = if bias {
            push_node(node("Add", &["dq", "bias"], &["pre"], &[]));
            "pre"
        } else {
            "dq"
        };
        push_node(node("Div", &[pre, "sqrt2"], &["d"], &[]));
        push_node(node("Erf", &["d"], &["e"], &[]));
        push_node(node("Add", &["e", "one"], &["a"], &[]));
        push_node(node("Mul", &["half", "a"], &["h"], &[]));
        push_node(node("Mul", &[pre, "h"], &["g"], &[]));
        if quantize {
            push_node(node("QuantizeLinear", &["g", "ys", "yz"], &["y"], &[]));
        }
        if leak {
            push_node(node("Relu", &[pre], &["other"], &[]));
        }
        g.push_bytes(GRAPH_INITIALIZER, scalar("s", 0.05));
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("z", &[], DATA_TYPE_UINT8, vec![128]),
        );
        g.push_bytes(GRAPH_INITIALIZER, scalar("sqrt2", std::f32::consts::SQRT_2));
        g.push_bytes(GRAPH_INITIALIZER, scalar("one", 1.0));
        g.push_bytes(GRAPH_INITIALIZER, scalar("half", 0.5));
        g.push_bytes(GRAPH_INITIALIZER, scalar("ys", 0.02));
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("yz", &[], DATA_TYPE_UINT8, vec![3]),
        );
        let b: Vec<u8> = [0.1f32, -0.2, 0.3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("bias", &[3], DATA_TYPE_FLOAT, b),
        );
        g.push_bytes(
            GRAPH_OUTPUT,
            value_info(if quantize { "y" } else { "g" }, DATA_TYPE_UINT8, &[]),
        );
        g
    }

    #[test]
    fn a_gelu_chain_is_found_with_its_bias_columns_and_output_type() {
        let chains = find_chains(&gelu_graph(true, true, false)).unwrap();
        assert_eq!(chains.len(), 1);
        let c = &chains[0];
        assert_eq!((c.input.as_str(), c.output.as_str()), ("x", "y"));
        assert_eq!((c.columns, c.out_type), (3, DATA_TYPE_UINT8));
        assert_eq!(c.nodes, (0..8).collect::<Vec<_>>());

        let chains = find_chains(&gelu_graph(false, false, false)).unwrap();
        assert_eq!(chains.len(), 1);
        assert_eq!(
            (chains[0].columns, chains[0].out_type),
            (1, DATA_TYPE_FLOAT)
        );
        assert_eq!(chains[0].output, "g");
        assert_eq!(chains[0].nodes.len(), 6);
    }

    #[test]
    fn a_chain_whose_middle_value_is_read_elsewhere_is_left_alone() {
        assert!(
            find_chains(&gelu_graph(true, true, true))
                .unwrap()
                .is_empty()
        );
        assert!(
            find_chains(&gelu_graph(false, true, true))
                .unwrap()
                .is_empty()
        );
    }

    /// A key-style projection: dequantise, `Reshape` (its output's shape also
    /// read by a `Shape` node when `shape_of_move`, or the dequantised value's
    /// when `shape_of_dq`), `Transpose`, scale, quantise with a zero point of
    /// `zero_point_type`.
    fn key_graph(shape_of_move: bool, shape_of_dq: bool, zero_point_type: u64) -> Message {
        let mut g = Message::default();
        let mut push_node = |bytes: Vec<u8>| g.push_bytes(GRAPH_NODE, bytes);
        push_node(node("DequantizeLinear", &["x", "s", "z"], &["dq"], &[]));
        push_node(node("Reshape", &["dq", "dims"], &["r"], &[]));
        if shape_of_move {
            push_node(node("Shape", &["r"], &["r_shape"], &[]));
        }
        if shape_of_dq {
            push_node(node("Shape", &["dq"], &["dq_shape"], &[]));
        }
        push_node(node("Transpose", &["r"], &["t"], &[]));
        push_node(node("Mul", &["t", "scale"], &["m"], &[]));
        push_node(node("QuantizeLinear", &["m", "ys", "yz"], &["y"], &[]));
        g.push_bytes(GRAPH_INITIALIZER, scalar("s", 0.05));
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("z", &[], DATA_TYPE_UINT8, vec![128]),
        );
        g.push_bytes(GRAPH_INITIALIZER, scalar("scale", 0.35));
        g.push_bytes(GRAPH_INITIALIZER, scalar("ys", 0.02));
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("yz", &[], zero_point_type, vec![0xf0]),
        );
        g.push_bytes(GRAPH_OUTPUT, value_info("y", zero_point_type, &[]));
        g
    }

    #[test]
    fn a_key_projection_is_found_with_its_shape_reader_and_int8_output() {
        let chains = find_chains(&key_graph(true, false, DATA_TYPE_INT8)).unwrap();
        assert_eq!(chains.len(), 1);
        let c = &chains[0];
        assert_eq!((c.input.as_str(), c.output.as_str()), ("x", "y"));
        assert_eq!((c.columns, c.out_type), (1, DATA_TYPE_INT8));
        // DequantizeLinear, Mul, QuantizeLinear tabulated; Reshape and
        // Transpose kept; the Shape reads the Reshape's (first move's) output.
        assert_eq!(c.nodes, vec![0, 4, 5]);
        assert_eq!(c.moves, vec![1, 3]);
        assert_eq!(c.shape_readers, vec![(2, 0)]);

        let plain = find_chains(&key_graph(false, false, DATA_TYPE_UINT8)).unwrap();
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].out_type, DATA_TYPE_UINT8);
        assert!(plain[0].shape_readers.is_empty());
    }

    #[test]
    fn a_shape_reading_a_float_value_that_no_move_carries_keeps_the_chain() {
        // The dequantised value has no quantised twin after the rewrite.
        assert!(
            find_chains(&key_graph(false, true, DATA_TYPE_UINT8))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn lookup_uses_one_table_per_column_or_one_for_all() {
        let mut tables = vec![[0u8; LEVELS]; 3];
        for (c, t) in tables.iter_mut().enumerate() {
            for (q, v) in t.iter_mut().enumerate() {
                *v = (q as u8).wrapping_mul(3).wrapping_add(c as u8 * 100);
            }
        }
        let x = [0u8, 1, 2, 255, 254, 253];
        let mut y = [0u8; 6];
        lookup(&x, &tables, &mut y);
        assert_eq!(y, [0, 103, 206, 253, 94, 191]);
        let one = [[0.5f32; LEVELS]];
        let mut yf = [0.0f32; 6];
        lookup(&x, &one, &mut yf);
        assert_eq!(yf, [0.5; 6]);
    }

    #[test]
    fn the_vector_lookup_gives_the_scalar_bytes() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        };
        for (columns, rows) in [
            (1, 1000),
            (1536, 3),
            (384, 5),
            (17, 9),
            (16, 4),
            (3, 7),
            (1, 63),
        ] {
            let tables: Vec<[u8; LEVELS]> = (0..columns)
                .map(|_| std::array::from_fn(|_| next()))
                .collect();
            let x: Vec<u8> = (0..columns * rows).map(|_| next()).collect();
            let (mut a, mut b) = (vec![0u8; x.len()], vec![0u8; x.len()]);
            lookup(&x, &tables, &mut a);
            lookup_bytes(&x, &tables, &mut b);
            assert_eq!(a, b, "{columns} columns x {rows} rows");
            // The int8 tables (key and value projections) alike.
            let signed: Vec<[i8; LEVELS]> = tables
                .iter()
                .map(|t| t.map(|v| i8::from_le_bytes([v])))
                .collect();
            let (mut c, mut d) = (vec![0i8; x.len()], vec![0i8; x.len()]);
            lookup(&x, &signed, &mut c);
            lookup_bytes(&x, &signed, &mut d);
            assert_eq!(c, d, "int8: {columns} columns x {rows} rows");
            assert!(
                a.iter()
                    .zip(&c)
                    .all(|(&u, &i)| u.to_le_bytes() == i.to_le_bytes())
            );
        }
    }

    #[test]
    fn the_table_is_transposed_to_column_major() {
        // [256][2] with value = q * 2 + c.
        let v: Vec<u16> = (0..LEVELS as u16)
            .flat_map(|q| [q * 2, q * 2 + 1])
            .collect();
        let t = transpose(&v, 2);
        assert_eq!(t[5], 10);
        assert_eq!(t[LEVELS + 5], 11);
    }
}
