//! Silero VAD with the batch folded into its convolutions' GEMMs, for batched runs.
//!
//! ONNX Runtime's CPU convolution runs one GEMM per batch row whose N is the
//! layer's output length (4 frames or fewer here), so a run of 100 windows costs
//! about 100 thin GEMMs. [`fold_batch`] rewrites the 16 kHz branch of
//! `silero_vad.onnx` in memory so that the STFT convolution (kernel 256, stride 128)
//! and the four kernel-3 encoder convolutions become framing / im2col (Reshape,
//! Pad, Slice, Concat, Transpose) and **one MatMul over all rows**. The arithmetic
//! is the same sums in another order, so probabilities move by float rounding
//! only: the goldens bound it (`tests/silero_folded_batches_keep_every_speech_decision.rs`).
//! The 8 kHz branch is left as it is.
//!
//! A batch of one gains nothing from this and costs slightly more after idle
//! (cold caches, more nodes), so [`super::silero::SileroModel`] keeps the shipped
//! graph for single windows and uses this one for runs of two rows or more.
//!
//! [`inline_16k`] is the second rewrite, applied to both graphs for 16 kHz: the
//! top-level `If` on `sr` replaced by its 16 kHz branch.
//! Python twin of the rewrite: `scripts/goldens/silero_fold_batch.py`.

use crate::onnx_wire::{
    ATTR_G, ATTR_NAME, ATTR_T, Attr, FloatTensor, GRAPH_NODE, MODEL_GRAPH, Message, NODE_ATTRIBUTE,
    NODE_INPUT, NODE_NAME, NODE_OP_TYPE, NODE_OUTPUT, OnnxWireError, Value, constant, constant_i64,
    float_tensor, node,
};

/// Names of the 16 kHz branch's nodes start with this (the top-level `If` on `sr`).
const PREFIX: &str = "If_0_then_branch__Inline_0__";
/// An `ends` value past any axis length (Slice clamps it).
const TO_THE_END: i64 = 1 << 62;
/// The encoder convolutions (layer, stride), as in `silero_vad.onnx` v6.
const ENCODER: [(usize, i64); 4] = [(0, 1), (1, 2), (2, 2), (3, 1)];

fn structure(what: impl Into<String>) -> OnnxWireError {
    OnnxWireError::Structure(what.into())
}

/// The model `silero_vad.onnx` (its bytes) with the batch folded (module docs):
/// model -> graph -> the `If` on `sr` -> its `then_branch` (16 kHz) is rewritten.
pub(crate) fn fold_batch(model: &[u8]) -> Result<Vec<u8>, OnnxWireError> {
    rewrite(model, MODEL_GRAPH, any, |graph| {
        rewrite(graph, GRAPH_NODE, is_if, |if_node| {
            rewrite(if_node, NODE_ATTRIBUTE, is_then_branch, |attr| {
                rewrite(attr, ATTR_G, any, fold_branch)
            })
        })
    })
}

/// `message` with its first length-delimited field `number` that `pick` accepts
/// replaced by `edit` of it; every other field as it was.
fn rewrite(
    message: &[u8],
    number: u32,
    pick: impl Fn(&[u8]) -> bool,
    edit: impl FnOnce(&[u8]) -> Result<Vec<u8>, OnnxWireError>,
) -> Result<Vec<u8>, OnnxWireError> {
    let mut msg = Message::decode(message)?;
    for (n, v) in msg.fields.iter_mut() {
        if let Value::Bytes(bytes) = v
            && *n == number
            && pick(bytes)
        {
            *bytes = edit(bytes)?;
            return Ok(msg.encode());
        }
    }
    Err(structure(format!("no field {number} to rewrite")))
}

fn any(_: &[u8]) -> bool {
    true
}

fn is_if(node: &[u8]) -> bool {
    Message::decode(node).is_ok_and(|n| n.string(NODE_OP_TYPE) == Some("If"))
}

fn is_then_branch(attr: &[u8]) -> bool {
    Message::decode(attr).is_ok_and(|a| a.string(ATTR_NAME) == Some("then_branch"))
}

/// The branch's nodes, decoded once.
pub(super) struct Branch {
    nodes: Vec<Message>,
}

/// The nodes of the top-level `If`'s branch `which` (`then_branch`: 16 kHz,
/// `else_branch`: 8 kHz) of the model `silero_vad.onnx` (its bytes).
pub(super) fn top_if_branch(model: &[u8], which: &str) -> Result<Branch, OnnxWireError> {
    let model = Message::decode(model)?;
    let graph = Message::decode(
        model
            .bytes(MODEL_GRAPH)
            .next()
            .ok_or_else(|| structure("no graph"))?,
    )?;
    let branch = graph
        .bytes(GRAPH_NODE)
        .filter_map(|n| Message::decode(n).ok())
        .find(|n| n.string(NODE_OP_TYPE) == Some("If"))
        .ok_or_else(|| structure("no If on sr"))?
        .bytes(NODE_ATTRIBUTE)
        .filter_map(|a| Message::decode(a).ok())
        .find(|a| a.string(ATTR_NAME) == Some(which))
        .ok_or_else(|| structure(format!("no {which}")))?
        .bytes(ATTR_G)
        .next()
        .map(Message::decode)
        .ok_or_else(|| structure(format!("{which} is not a graph")))??;
    let nodes = branch
        .bytes(GRAPH_NODE)
        .map(Message::decode)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Branch { nodes })
}

impl Branch {
    fn node(&self, name: &str) -> Result<&Message, OnnxWireError> {
        self.nodes
            .iter()
            .find(|n| n.string(NODE_NAME) == Some(name))
            .ok_or_else(|| structure(format!("no node {name}")))
    }

    /// The float tensor a `Constant` node of the branch gives as `output`.
    pub(super) fn constant(&self, output: &str) -> Result<FloatTensor, OnnxWireError> {
        let n = self
            .nodes
            .iter()
            .find(|n| {
                n.string(NODE_OP_TYPE) == Some("Constant") && n.string(NODE_OUTPUT) == Some(output)
            })
            .ok_or_else(|| structure(format!("no constant {output}")))?;
        let attr = n
            .bytes(NODE_ATTRIBUTE)
            .filter_map(|a| Message::decode(a).ok())
            .find(|a| a.string(ATTR_NAME) == Some("value"))
            .ok_or_else(|| structure(format!("constant {output} has no value")))?;
        float_tensor(
            attr.bytes(ATTR_T)
                .next()
                .ok_or_else(|| structure(format!("constant {output} is not a tensor")))?,
        )
    }
}

fn fold_branch(branch: &[u8]) -> Result<Vec<u8>, OnnxWireError> {
    let mut graph = Message::decode(branch)?;
    let nodes = graph
        .bytes(GRAPH_NODE)
        .map(Message::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let view = Branch { nodes };
    let mut replacements = vec![(format!("{PREFIX}/stft/Conv"), stft(&view)?)];
    for (layer, stride) in ENCODER {
        let name = format!("{PREFIX}/encoder/{layer}/reparam_conv/Conv");
        replacements.push((name, encoder(&view, layer, stride)?));
    }
    let mut fields = Vec::with_capacity(graph.fields.len() + 64);
    let mut replaced = 0;
    for (number, value) in graph.fields.drain(..) {
        let hit = match &value {
            Value::Bytes(b) if number == GRAPH_NODE => replacements.iter().position(|(name, _)| {
                Message::decode(b).is_ok_and(|n| n.string(NODE_NAME) == Some(name.as_str()))
            }),
            _ => None,
        };
        match hit {
            Some(i) => {
                replaced += 1;
                let new_nodes = std::mem::take(&mut replacements[i].1);
                fields.extend(new_nodes.into_iter().map(|n| (GRAPH_NODE, Value::Bytes(n))));
            }
            None => fields.push((number, value)),
        }
    }
    if replaced != 1 + ENCODER.len() {
        return Err(structure(format!("{replaced} of 5 convolutions found")));
    }
    graph.fields = fields;
    Ok(graph.encode())
}

/// A Conv node's (input x, weight, optional bias, output) names.
fn conv_io(conv: &Message) -> Result<(Vec<&str>, &str), OnnxWireError> {
    if conv.string(NODE_OP_TYPE) != Some("Conv") {
        return Err(structure("a folded node is not a Conv"));
    }
    let inputs: Vec<&str> = conv
        .bytes(NODE_INPUT)
        .map(|b| std::str::from_utf8(b).unwrap_or_default())
        .collect();
    let output = conv
        .string(NODE_OUTPUT)
        .ok_or_else(|| structure("a Conv without output"))?;
    Ok((inputs, output))
}

/// `Conv(kernel 256, stride 128)` on `[B, 1, 640]` = frames `[B, 4, 256]` @ basisᵀ.
fn stft(branch: &Branch) -> Result<Vec<Vec<u8>>, OnnxWireError> {
    let conv = branch.node(&format!("{PREFIX}/stft/Conv"))?;
    let (inputs, output) = conv_io(conv)?;
    let &[x, w] = &inputs[..] else {
        return Err(structure("the STFT Conv takes (x, basis)"));
    };
    let basis = branch.constant(w)?; // [258, 1, 256]
    let &[bins, 1, taps] = &basis.dims[..] else {
        return Err(structure(format!("STFT basis dims {:?}", basis.dims)));
    };
    let hop = (taps / 2) as i64;
    let mut basis_t = vec![0.0; taps * bins]; // [taps, bins]
    for b in 0..bins {
        for t in 0..taps {
            basis_t[t * bins + b] = basis.values[b * taps + t];
        }
    }
    let q = |s: &str| format!("{PREFIX}/fold/stft/{s}");
    let (shape, blocks, zero, minus1, one, end) = (
        q("shape"),
        q("blocks"),
        q("zero"),
        q("minus1"),
        q("one"),
        q("end"),
    );
    let (first, second, frames, basis_name, spec) = (
        q("first"),
        q("second"),
        q("frames"),
        q("basis_t"),
        q("spec"),
    );
    Ok(vec![
        constant_i64(&shape, &[0, -1, hop]),
        node("Reshape", &[x, &shape], &[&blocks], &[]), // [B, 5, 128]
        constant_i64(&zero, &[0]),
        constant_i64(&minus1, &[-1]),
        constant_i64(&one, &[1]),
        constant_i64(&end, &[TO_THE_END]),
        node("Slice", &[&blocks, &zero, &minus1, &one], &[&first], &[]),
        node("Slice", &[&blocks, &one, &end, &one], &[&second], &[]),
        node(
            "Concat",
            &[&first, &second],
            &[&frames],
            &[Attr::Int("axis", 2)],
        ), // [B, 4, 256]
        constant(&basis_name, &[taps, bins], &basis_t),
        node("MatMul", &[&frames, &basis_name], &[&spec], &[]), // [B, 4, 258]
        node(
            "Transpose",
            &[&spec],
            &[output],
            &[Attr::Ints("perm", &[0, 2, 1])],
        ),
    ])
}

/// `Conv(kernel 3, pad 1, stride s)` on `[B, C, T]` = im2col `[B, T', 3C]` @ W' + b.
fn encoder(branch: &Branch, layer: usize, stride: i64) -> Result<Vec<Vec<u8>>, OnnxWireError> {
    let conv = branch.node(&format!("{PREFIX}/encoder/{layer}/reparam_conv/Conv"))?;
    let (inputs, output) = conv_io(conv)?;
    let &[x, w, b] = &inputs[..] else {
        return Err(structure("an encoder Conv takes (x, weight, bias)"));
    };
    let (weight, bias) = (branch.constant(w)?, branch.constant(b)?);
    let &[outs, chans, 3] = &weight.dims[..] else {
        return Err(structure(format!("encoder weight dims {:?}", weight.dims)));
    };
    // Row k * C + c of W' is tap k of input channel c: W'[k*C + c][o] = W[o][c][k].
    let mut stacked = vec![0.0; 3 * chans * outs];
    for o in 0..outs {
        for c in 0..chans {
            for k in 0..3 {
                stacked[(k * chans + c) * outs + o] = weight.values[(o * chans + c) * 3 + k];
            }
        }
    }
    let q = |s: &str| format!("{PREFIX}/fold/encoder{layer}/{s}");
    let (pads, padded, axis, step) = (q("pads"), q("padded"), q("axis"), q("step"));
    let mut nodes = vec![
        constant_i64(&pads, &[0, 0, 1, 0, 0, 1]),
        node("Pad", &[x, &pads], &[&padded], &[]), // [B, C, T + 2]
        constant_i64(&axis, &[2]),
        constant_i64(&step, &[stride]),
    ];
    let mut taps = Vec::new();
    for k in 0..3i64 {
        let (start, end, tap) = (
            q(&format!("start{k}")),
            q(&format!("end{k}")),
            q(&format!("tap{k}")),
        );
        let last = if k < 2 { -(2 - k) } else { TO_THE_END };
        nodes.push(constant_i64(&start, &[k]));
        nodes.push(constant_i64(&end, &[last]));
        nodes.push(node(
            "Slice",
            &[&padded, &start, &end, &axis, &step],
            &[&tap],
            &[],
        ));
        taps.push(tap);
    }
    let tap_refs: Vec<&str> = taps.iter().map(String::as_str).collect();
    let (columns, rows, weight_name, bias_name) = (q("columns"), q("rows"), q("weight"), q("bias"));
    let (product, biased) = (q("product"), q("biased"));
    nodes.extend([
        node("Concat", &tap_refs, &[&columns], &[Attr::Int("axis", 1)]), // [B, 3C, T']
        node(
            "Transpose",
            &[&columns],
            &[&rows],
            &[Attr::Ints("perm", &[0, 2, 1])],
        ),
        constant(&weight_name, &[3 * chans, outs], &stacked),
        constant(&bias_name, &[outs], &bias.values),
        node("MatMul", &[&rows, &weight_name], &[&product], &[]),
        node("Add", &[&product, &bias_name], &[&biased], &[]),
        node(
            "Transpose",
            &[&biased],
            &[output],
            &[Attr::Ints("perm", &[0, 2, 1])],
        ),
    ]);
    Ok(nodes)
}

/// `GraphProto.output`; `ValueInfoProto.name`.
const GRAPH_OUTPUT: u32 = 12;
const VALUE_INFO_NAME: u32 = 1;

/// `silero_vad.onnx` (or its batch-folded form) for 16 kHz only: the top-level
/// `If` on `sr` replaced by the nodes of its 16 kHz branch (and the `Equal` that
/// fed it dropped), so a run skips the subgraph machinery (a nested execution
/// frame with its own feeds and fetches). The nodes are the branch's own, so the
/// arithmetic is the same; the `sr` input stays, unread, so the interface is
/// unchanged. Wrong for 8 kHz windows: [`super::silero::SileroModel`] runs those
/// on the shipped graph.
pub(crate) fn inline_16k(model: &[u8]) -> Result<Vec<u8>, OnnxWireError> {
    rewrite(model, MODEL_GRAPH, any, inline_then_branch)
}

/// The top-level `If`'s condition, outputs, 16 kHz branch and that branch's outputs.
struct TopIf {
    name: String,
    cond: String,
    outputs: Vec<String>,
    branch: Message,
    branch_outputs: Vec<String>,
}

impl TopIf {
    fn find(nodes: &[Message]) -> Result<Self, OnnxWireError> {
        let node = nodes
            .iter()
            .find(|n| n.string(NODE_OP_TYPE) == Some("If"))
            .ok_or_else(|| structure("no If on sr"))?;
        let strings = |m: &Message, field| -> Vec<String> {
            m.bytes(field)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect()
        };
        let branch = node
            .bytes(NODE_ATTRIBUTE)
            .find(|a| is_then_branch(a))
            .and_then(|a| Message::decode(a).ok())
            .and_then(|a| a.bytes(ATTR_G).next().map(Message::decode))
            .ok_or_else(|| structure("the If has no then_branch"))??;
        let branch_outputs = branch
            .bytes(GRAPH_OUTPUT)
            .map(|v| {
                Message::decode(v)?
                    .string(VALUE_INFO_NAME)
                    .map(str::to_owned)
                    .ok_or_else(|| structure("a branch output without a name"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = strings(node, NODE_OUTPUT);
        if outputs.len() != branch_outputs.len() {
            return Err(structure("the If and its branch differ in outputs"));
        }
        Ok(TopIf {
            name: node.string(NODE_NAME).unwrap_or_default().to_owned(),
            cond: node
                .string(NODE_INPUT)
                .ok_or_else(|| structure("an If without condition"))?
                .to_owned(),
            outputs,
            branch,
            branch_outputs,
        })
    }
}

fn inline_then_branch(graph: &[u8]) -> Result<Vec<u8>, OnnxWireError> {
    let mut graph = Message::decode(graph)?;
    let nodes = graph
        .bytes(GRAPH_NODE)
        .map(Message::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let top = TopIf::find(&nodes)?;
    // The condition's node (Equal(sr, c)) and the constants only it reads.
    let equal = nodes
        .iter()
        .find(|n| n.string(NODE_OUTPUT) == Some(top.cond.as_str()))
        .ok_or_else(|| structure("no node computes the If's condition"))?;
    let operands: Vec<&[u8]> = equal.bytes(NODE_INPUT).collect();
    let dropped = |n: &Message| {
        n.string(NODE_OUTPUT) == Some(top.cond.as_str())
            || (n.string(NODE_OP_TYPE) == Some("Constant")
                && n.bytes(NODE_OUTPUT).any(|o| operands.contains(&o)))
    };
    let mut fields = Vec::with_capacity(graph.fields.len() + 128);
    let mut nodes = nodes.iter();
    for (number, value) in graph.fields.drain(..) {
        if number != GRAPH_NODE {
            fields.push((number, value));
            continue;
        }
        let node = nodes.next().ok_or_else(|| structure("nodes changed"))?;
        if dropped(node) {
            continue;
        }
        if node.string(NODE_OP_TYPE) != Some("If") || node.string(NODE_NAME) != Some(&top.name) {
            fields.push((number, value));
            continue;
        }
        for n in top.branch.bytes(GRAPH_NODE) {
            fields.push((GRAPH_NODE, Value::Bytes(n.to_vec())));
        }
        for (from, to) in top.branch_outputs.iter().zip(&top.outputs) {
            fields.push((GRAPH_NODE, Value::Bytes(node_identity(from, to))));
        }
    }
    graph.fields = fields;
    Ok(graph.encode())
}

fn node_identity(from: &str, to: &str) -> Vec<u8> {
    node("Identity", &[from], &[to], &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_without_the_silero_branch_is_an_error() {
        let mut graph = Message::default();
        graph
            .fields
            .push((GRAPH_NODE, Value::Bytes(node("Relu", &["x"], &["y"], &[]))));
        let mut model = Message::default();
        model
            .fields
            .push((MODEL_GRAPH, Value::Bytes(graph.encode())));
        assert!(matches!(
            fold_batch(&model.encode()),
            Err(OnnxWireError::Structure(_))
        ));
        assert!(fold_batch(b"\x0bnot protobuf").is_err());
        assert!(matches!(
            inline_16k(&model.encode()),
            Err(OnnxWireError::Structure(_))
        ));
    }
}
