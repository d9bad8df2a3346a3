//! The second operand of each attention product as int8: the same values, on
//! ONNX Runtime's faster kernel.
//!
//! Each attention layer of the int8 Smart Turn graph multiplies two
//! activations: the scaled queries by the keys, and the softmax by the values.
//! In the shipped graph both operands are uint8 (`QuantizeLinear`, then
//! `DequantizeLinear` into the `MatMul`, which ONNX Runtime fuses into
//! `QLinearMatMul`), and ONNX Runtime's uint8 x uint8 kernel takes about
//! twice as long as its uint8 x int8 one on this CPU family (AVX-512 VNNI
//! multiplies unsigned by signed bytes; `bench/results/model-cpu-smart-turn-signed-2026-12-04.md`).
//!
//! The second operand can be int8 without changing a bit: a `QuantizeLinear`
//! with zero point `z - 128` and an int8 output gives `q - 128` wherever the
//! uint8 one gives `q` (both round `x / scale` the same way, and saturating
//! to [-128, 127] is saturating to [0, 255] moved down by 128), and the
//! product reads `(q - 128) - (z - 128) = q - z`: the same integer sums,
//! requantised the same way.
//!
//! [`rewrite_model`] moves the zero point of each such pair (a
//! `QuantizeLinear` whose output only a `DequantizeLinear` reads, both with
//! one uint8 zero point that no other node reads, feeding a `MatMul`'s second
//! input while a uint8 `DequantizeLinear` feeds its first) to int8. On x86
//! ONNX Runtime turns int8 activations back into uint8 unless the session says
//! int8 is allowed ([`INT8_ALLOWED`]), which the model sets on sessions over
//! the rewritten graph. The lookup tables ([`super::qlookup`]) then end the key
//! and value projections in int8. [`super::model::SmartTurn::load`] compares
//! the rewritten graph with the graph before it on probe inputs, and
//! `tests/smart_turn_exact_softmax_matches_onnx_runtime.rs` checks every
//! golden case against the reference probabilities.

use std::collections::HashMap;

use super::qlookup::Graph;
use crate::onnx_wire::{
    DATA_TYPE_INT8, GRAPH_INITIALIZER, Message, OnnxWireError, TENSOR_NAME, Value, initializer,
    model_graph,
};

/// The session entry without which ONNX Runtime turns int8 activations back
/// into uint8 on x86 (`kOrtSessionOptionsQDQIsInt8Allowed`).
pub(crate) const INT8_ALLOWED: (&str, &str) = ("session.qdqisint8allowed", "1");

/// The zero points (initializer names) of the pairs that can become int8
/// (module docs), in graph order.
fn signed_zero_points(g: &Graph) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for i in 0..g.nodes.len() {
        if !g.is_plain(i, "MatMul") {
            continue;
        }
        let [a, b] = g.inputs(i)[..] else {
            continue;
        };
        // The first operand stays uint8 (uint8 x int8 is the fast kernel).
        let Some(&dq_a) = g.producer.get(a) else {
            continue;
        };
        if !g.is_plain(dq_a, "DequantizeLinear")
            || !matches!(g.inputs(dq_a)[..], [_, _, za] if g.scalar_u8(za).is_some())
        {
            continue;
        }
        let Some(&dq) = g.producer.get(b) else {
            continue;
        };
        if !g.is_plain(dq, "DequantizeLinear") {
            continue;
        }
        let [x, scale, zero_point] = g.inputs(dq)[..] else {
            continue;
        };
        let Some(&q) = g.producer.get(x) else {
            continue;
        };
        let quantizes_with_it = g.is_plain(q, "QuantizeLinear")
            && matches!(g.inputs(q)[..], [_, s, z] if s == scale && z == zero_point);
        if quantizes_with_it
            && g.scalar_f32(scale).is_some()
            && g.scalar_u8(zero_point).is_some()
            && g.readers(x) == 1
            && g.readers(zero_point) == 2
            && !found.iter().any(|z| z == zero_point)
        {
            found.push(zero_point.to_owned());
        }
    }
    found
}

/// The model with those zero points int8, and how many were moved (0: the
/// model comes back unchanged).
pub(crate) fn rewrite_model(model: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let wire = |e: OnnxWireError| e.to_string();
    let (mut msg, graph_index, mut graph) = model_graph(model).map_err(wire)?;
    let g = Graph::decode(&graph).map_err(wire)?;
    let zero_points = signed_zero_points(&g);
    if zero_points.is_empty() {
        return Ok((model.to_vec(), 0));
    }
    let mut fate: HashMap<usize, Option<Vec<u8>>> = HashMap::new();
    for (k, bytes) in graph.bytes(GRAPH_INITIALIZER).enumerate() {
        let init = Message::decode(bytes).map_err(wire)?;
        let Some(name) = init.string(TENSOR_NAME) else {
            continue;
        };
        if let Some(z) = zero_points
            .iter()
            .find(|z| *z == name)
            .and_then(|z| g.scalar_u8(z))
        {
            let signed = (i16::from(z) - 128) as i8;
            fate.insert(
                k,
                Some(initializer(
                    name,
                    &[],
                    DATA_TYPE_INT8,
                    signed.to_le_bytes().to_vec(),
                )),
            );
        }
    }
    graph.replace_entries(GRAPH_INITIALIZER, fate);
    msg.fields[graph_index].1 = Value::Bytes(graph.encode());
    Ok((msg.encode(), zero_points.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx_wire::{
        DATA_TYPE_FLOAT, DATA_TYPE_UINT8, GRAPH_NODE, GRAPH_OUTPUT, MODEL_GRAPH, RawTensor, node,
        value_info,
    };

    /// `y = DQ(a) x DQ(Q(k))` with the pair's zero point `kz` (read by a third
    /// node too when `shared`), wrapped in a model.
    fn model(shared: bool) -> Vec<u8> {
        let mut g = Message::default();
        g.push_bytes(
            GRAPH_NODE,
            node("DequantizeLinear", &["a", "as", "az"], &["af"], &[]),
        );
        g.push_bytes(
            GRAPH_NODE,
            node("QuantizeLinear", &["k", "ks", "kz"], &["kq"], &[]),
        );
        g.push_bytes(
            GRAPH_NODE,
            node("DequantizeLinear", &["kq", "ks", "kz"], &["kf"], &[]),
        );
        g.push_bytes(GRAPH_NODE, node("MatMul", &["af", "kf"], &["y"], &[]));
        if shared {
            g.push_bytes(
                GRAPH_NODE,
                node("QuantizeLinear", &["y", "ks", "kz"], &["yq"], &[]),
            );
        }
        let scalar =
            |name: &str, v: f32| initializer(name, &[], DATA_TYPE_FLOAT, v.to_le_bytes().to_vec());
        g.push_bytes(GRAPH_INITIALIZER, scalar("as", 0.1));
        g.push_bytes(GRAPH_INITIALIZER, scalar("ks", 0.2));
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("az", &[], DATA_TYPE_UINT8, vec![3]),
        );
        g.push_bytes(
            GRAPH_INITIALIZER,
            initializer("kz", &[], DATA_TYPE_UINT8, vec![100]),
        );
        g.push_bytes(GRAPH_OUTPUT, value_info("y", DATA_TYPE_FLOAT, &[]));
        let mut m = Message::default();
        m.push_bytes(MODEL_GRAPH, g.encode());
        m.encode()
    }

    fn zero_point(model: &[u8], name: &str) -> RawTensor {
        let m = Message::decode(model).unwrap();
        let g = Message::decode(m.bytes(MODEL_GRAPH).next().unwrap()).unwrap();
        g.bytes(GRAPH_INITIALIZER)
            .map(|b| RawTensor::decode(b).unwrap())
            .find(|t| t.name == name)
            .unwrap()
    }

    #[test]
    fn the_second_operands_zero_point_moves_down_by_128_to_int8() {
        let (rewritten, n) = rewrite_model(&model(false)).unwrap();
        assert_eq!(n, 1);
        assert_eq!(zero_point(&rewritten, "kz").scalar_i8(), Some(-28));
        // The first operand's stays uint8.
        assert_eq!(zero_point(&rewritten, "az").scalar_u8(), Some(3));
    }

    #[test]
    fn a_zero_point_another_node_reads_is_left_alone() {
        let original = model(true);
        let (rewritten, n) = rewrite_model(&original).unwrap();
        assert_eq!(n, 0);
        assert_eq!(rewritten, original);
    }
}
