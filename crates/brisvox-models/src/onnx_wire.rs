//! Just enough of the protobuf wire format to rewrite an ONNX model in memory.
//!
//! An ONNX file is a `ModelProto` message. A rewrite here decodes only the
//! messages on the path to what it changes ([`Message::decode`] keeps every other
//! field as opaque bytes, in order), swaps or adds fields, and encodes the path
//! back ([`Message::encode`]); everything it did not touch is written back byte
//! for byte. [`node`], [`constant`] and the attribute helpers build the few
//! `NodeProto`s a rewrite adds.
//!
//! Field numbers are those of `onnx.proto` (ONNX 1.x, stable since IR version 3).

use std::collections::HashMap;

/// Why an ONNX model could not be decoded or rewritten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OnnxWireError {
    /// The bytes are not a well-formed protobuf message.
    #[error("malformed protobuf at byte {at}: {what}")]
    Malformed {
        /// Offset inside the message being decoded.
        at: usize,
        /// What was wrong there.
        what: &'static str,
    },
    /// The model does not have the structure the rewrite expects.
    #[error("unexpected model structure: {0}")]
    Structure(String),
}

/// `ModelProto.graph`, `.opset_import`.
pub(crate) const MODEL_GRAPH: u32 = 7;
const MODEL_OPSET_IMPORT: u32 = 8;
/// `OperatorSetIdProto.domain`, `.version`.
const OPSET_DOMAIN: u32 = 1;
const OPSET_VERSION: u32 = 2;
/// `GraphProto.node`, `.name`, `.initializer`, `.input`, `.output`.
pub(crate) const GRAPH_NODE: u32 = 1;
pub(crate) const GRAPH_NAME: u32 = 2;
pub(crate) const GRAPH_INITIALIZER: u32 = 5;
pub(crate) const GRAPH_INPUT: u32 = 11;
pub(crate) const GRAPH_OUTPUT: u32 = 12;
/// `ValueInfoProto.name`.
pub(crate) const VALUE_INFO_NAME: u32 = 1;
/// `NodeProto.input`, `.output`, `.name`, `.op_type`, `.attribute`, `.domain`.
pub(crate) const NODE_INPUT: u32 = 1;
pub(crate) const NODE_OUTPUT: u32 = 2;
pub(crate) const NODE_NAME: u32 = 3;
pub(crate) const NODE_OP_TYPE: u32 = 4;
pub(crate) const NODE_ATTRIBUTE: u32 = 5;
pub(crate) const NODE_DOMAIN: u32 = 7;
/// `AttributeProto.name`, `.i`, `.t`, `.g`, `.ints`, `.type`.
pub(crate) const ATTR_NAME: u32 = 1;
pub(crate) const ATTR_I: u32 = 3;
pub(crate) const ATTR_T: u32 = 5;
pub(crate) const ATTR_G: u32 = 6;
const ATTR_INTS: u32 = 8;
const ATTR_TYPE: u32 = 20;
/// `AttributeProto.AttributeType` values.
const ATTR_TYPE_INT: u64 = 2;
const ATTR_TYPE_TENSOR: u64 = 4;
const ATTR_TYPE_INTS: u64 = 7;
/// `TensorProto.dims`, `.data_type`, `.float_data`, `.int32_data`, `.name`, `.raw_data`.
const TENSOR_DIMS: u32 = 1;
const TENSOR_DATA_TYPE: u32 = 2;
const TENSOR_FLOAT_DATA: u32 = 4;
const TENSOR_INT32_DATA: u32 = 5;
pub(crate) const TENSOR_NAME: u32 = 8;
const TENSOR_RAW_DATA: u32 = 9;
/// `TensorProto.DataType` values.
pub(crate) const DATA_TYPE_FLOAT: u64 = 1;
pub(crate) const DATA_TYPE_UINT8: u64 = 2;
pub(crate) const DATA_TYPE_INT8: u64 = 3;
const DATA_TYPE_INT64: u64 = 7;
/// `ValueInfoProto.type`; `TypeProto.tensor_type`; `TypeProto.Tensor.elem_type`,
/// `.shape`; `TensorShapeProto.dim`; `Dimension.dim_value`.
const VALUE_INFO_TYPE: u32 = 2;
const TYPE_TENSOR: u32 = 1;
const TENSOR_TYPE_ELEM: u32 = 1;
const TENSOR_TYPE_SHAPE: u32 = 2;
const SHAPE_DIM: u32 = 1;
const DIM_VALUE: u32 = 1;

/// One field's value, as it travels on the wire.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64([u8; 8]),
    /// Wire type 2: a string, bytes, a sub-message or a packed repeated field.
    Bytes(Vec<u8>),
    /// Wire type 5.
    Fixed32([u8; 4]),
}

/// A decoded message: its fields in wire order (repeated fields repeat).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Message {
    pub(crate) fields: Vec<(u32, Value)>,
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, OnnxWireError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = bytes.get(*at) else {
            return Err(OnnxWireError::Malformed {
                at: *at,
                what: "truncated varint",
            });
        };
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(OnnxWireError::Malformed {
        at: *at,
        what: "varint longer than 10 bytes",
    })
}

fn write_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, len: usize) -> Result<&'a [u8], OnnxWireError> {
    let end =
        at.checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or(OnnxWireError::Malformed {
                at: *at,
                what: "field runs past the end",
            })?;
    let slice = &bytes[*at..end];
    *at = end;
    Ok(slice)
}

impl Message {
    /// Decodes one level of a message (sub-messages stay as bytes).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Message, OnnxWireError> {
        let mut fields = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let tag = read_varint(bytes, &mut at)?;
            let number = u32::try_from(tag >> 3).map_err(|_| OnnxWireError::Malformed {
                at,
                what: "field number out of range",
            })?;
            let value = match tag & 7 {
                0 => Value::Varint(read_varint(bytes, &mut at)?),
                1 => Value::Fixed64(take(bytes, &mut at, 8)?.try_into().expect("8 bytes taken")),
                2 => {
                    let len = read_varint(bytes, &mut at)?;
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    Value::Bytes(take(bytes, &mut at, len)?.to_vec())
                }
                5 => Value::Fixed32(take(bytes, &mut at, 4)?.try_into().expect("4 bytes taken")),
                _ => {
                    return Err(OnnxWireError::Malformed {
                        at,
                        what: "unsupported wire type",
                    });
                }
            };
            fields.push((number, value));
        }
        Ok(Message { fields })
    }

    /// Encodes the message.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (number, value) in &self.fields {
            let number = u64::from(*number) << 3;
            match value {
                Value::Varint(v) => {
                    write_varint(number, &mut out);
                    write_varint(*v, &mut out);
                }
                Value::Fixed64(b) => {
                    write_varint(number | 1, &mut out);
                    out.extend_from_slice(b);
                }
                Value::Bytes(b) => {
                    write_varint(number | 2, &mut out);
                    write_varint(b.len() as u64, &mut out);
                    out.extend_from_slice(b);
                }
                Value::Fixed32(b) => {
                    write_varint(number | 5, &mut out);
                    out.extend_from_slice(b);
                }
            }
        }
        out
    }

    /// The length-delimited values of field `number`, in order.
    pub(crate) fn bytes(&self, number: u32) -> impl Iterator<Item = &[u8]> {
        self.fields.iter().filter_map(move |(n, v)| match v {
            Value::Bytes(b) if *n == number => Some(b.as_slice()),
            _ => None,
        })
    }

    /// The first value of string field `number`.
    pub(crate) fn string(&self, number: u32) -> Option<&str> {
        self.bytes(number)
            .next()
            .and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The first varint value of field `number`.
    pub(crate) fn varint(&self, number: u32) -> Option<u64> {
        self.fields.iter().find_map(|(n, v)| match v {
            Value::Varint(x) if *n == number => Some(*x),
            _ => None,
        })
    }

    /// The values of repeated string field `number`, in order (bytes that are
    /// not UTF-8 read as the replacement character).
    pub(crate) fn strings(&self, number: u32) -> Vec<&str> {
        self.bytes(number)
            .map(|b| std::str::from_utf8(b).unwrap_or("\u{fffd}"))
            .collect()
    }

    /// Whether this `NodeProto` belongs to the default (ONNX) operator domain.
    pub(crate) fn in_default_domain(&self) -> bool {
        matches!(self.string(NODE_DOMAIN), None | Some("") | Some("ai.onnx"))
    }

    /// Every value of repeated varint field `number`, packed or not, in order.
    pub(crate) fn varints(&self, number: u32) -> Result<Vec<u64>, OnnxWireError> {
        let mut out = Vec::new();
        for (n, v) in &self.fields {
            match v {
                Value::Varint(x) if *n == number => out.push(*x),
                Value::Bytes(packed) if *n == number => {
                    let mut at = 0;
                    while at < packed.len() {
                        out.push(read_varint(packed, &mut at)?);
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Entry `i` of repeated message field `field` (a `GraphProto`'s nodes or
    /// initializers) dropped where `fate[i]` is `None` and replaced by the
    /// encoded message where it is `Some`; other fields and entries stay in
    /// order.
    pub(crate) fn replace_entries(
        &mut self,
        field: u32,
        mut fate: HashMap<usize, Option<Vec<u8>>>,
    ) {
        let mut index = 0;
        let mut fields = Vec::with_capacity(self.fields.len());
        for (number, value) in self.fields.drain(..) {
            if number == field && matches!(value, Value::Bytes(_)) {
                let i = index;
                index += 1;
                match fate.remove(&i) {
                    Some(None) => continue,
                    Some(Some(bytes)) => {
                        fields.push((number, Value::Bytes(bytes)));
                        continue;
                    }
                    None => {}
                }
            }
            fields.push((number, value));
        }
        self.fields = fields;
    }

    pub(crate) fn push_bytes(&mut self, number: u32, bytes: impl Into<Vec<u8>>) {
        self.fields.push((number, Value::Bytes(bytes.into())));
    }

    fn push_varint(&mut self, number: u32, value: u64) {
        self.fields.push((number, Value::Varint(value)));
    }
}

/// A model's `GraphProto` decoded, with the decoded model and the graph's
/// index among its fields (a rewrite puts the graph back with
/// `model.fields[index].1 = Value::Bytes(graph.encode())`).
pub(crate) fn model_graph(model: &[u8]) -> Result<(Message, usize, Message), OnnxWireError> {
    let msg = Message::decode(model)?;
    let index = msg
        .fields
        .iter()
        .position(|(n, v)| *n == MODEL_GRAPH && matches!(v, Value::Bytes(_)))
        .ok_or_else(|| OnnxWireError::Structure("the model has no graph".to_owned()))?;
    let Value::Bytes(bytes) = &msg.fields[index].1 else {
        unreachable!("matched as bytes above")
    };
    let graph = Message::decode(bytes)?;
    Ok((msg, index, graph))
}

/// A float tensor's dims and values, read from a `TensorProto`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FloatTensor {
    pub(crate) dims: Vec<usize>,
    pub(crate) values: Vec<f32>,
}

/// Reads a float `TensorProto` (`raw_data` or `float_data`).
pub(crate) fn float_tensor(tensor: &[u8]) -> Result<FloatTensor, OnnxWireError> {
    let t = RawTensor::decode(tensor)?;
    if t.data_type != DATA_TYPE_FLOAT {
        return Err(OnnxWireError::Structure(
            "a weight is not a float tensor".into(),
        ));
    }
    let values = t
        .raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("chunks of 4")))
        .collect();
    Ok(FloatTensor {
        dims: t.dims,
        values,
    })
}

/// A tensor of any element type as its dims, type and little-endian bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawTensor {
    pub(crate) name: String,
    pub(crate) dims: Vec<usize>,
    pub(crate) data_type: u64,
    pub(crate) raw: Vec<u8>,
}

impl RawTensor {
    /// Reads a float, uint8 or int8 `TensorProto` (`raw_data`, `float_data` or
    /// `int32_data`); other element types are a structure error.
    pub(crate) fn decode(tensor: &[u8]) -> Result<RawTensor, OnnxWireError> {
        let msg = Message::decode(tensor)?;
        let data_type = msg.varint(TENSOR_DATA_TYPE).unwrap_or(0);
        let width = match data_type {
            DATA_TYPE_FLOAT => 4,
            DATA_TYPE_UINT8 | DATA_TYPE_INT8 => 1,
            other => {
                return Err(OnnxWireError::Structure(format!(
                    "tensor of data type {other} (only float, uint8 and int8 are read)"
                )));
            }
        };
        let dims: Vec<usize> = msg
            .varints(TENSOR_DIMS)?
            .into_iter()
            .map(|d| d as usize)
            .collect();
        let raw = if let Some(raw) = msg.bytes(TENSOR_RAW_DATA).next() {
            raw.to_vec()
        } else if data_type == DATA_TYPE_FLOAT {
            msg.bytes(TENSOR_FLOAT_DATA)
                .next()
                .unwrap_or_default()
                .to_vec()
        } else {
            // uint8 and int8 values travel as int32_data varints (int8 ones
            // sign-extended: the low byte is the value).
            msg.varints(TENSOR_INT32_DATA)?
                .into_iter()
                .map(|x| x as u8)
                .collect()
        };
        let expected: usize = dims.iter().product();
        if raw.len() != expected * width {
            return Err(OnnxWireError::Structure(format!(
                "a tensor of dims {dims:?} holds {} bytes",
                raw.len()
            )));
        }
        Ok(RawTensor {
            name: msg.string(TENSOR_NAME).unwrap_or("").to_owned(),
            dims,
            data_type,
            raw,
        })
    }

    /// The one value of a one-value float tensor.
    pub(crate) fn scalar_f32(&self) -> Option<f32> {
        (self.data_type == DATA_TYPE_FLOAT && self.raw.len() == 4)
            .then(|| f32::from_le_bytes(self.raw[..4].try_into().expect("4 bytes")))
    }

    /// The one value of a one-value uint8 tensor.
    pub(crate) fn scalar_u8(&self) -> Option<u8> {
        (self.data_type == DATA_TYPE_UINT8 && self.raw.len() == 1).then(|| self.raw[0])
    }

    /// The one value of a one-value int8 tensor.
    pub(crate) fn scalar_i8(&self) -> Option<i8> {
        (self.data_type == DATA_TYPE_INT8 && self.raw.len() == 1)
            .then(|| i8::from_le_bytes([self.raw[0]]))
    }
}

/// An encoded `TensorProto` (for `GraphProto.initializer`) of `data_type`
/// holding `raw` (little-endian values).
pub(crate) fn initializer(name: &str, dims: &[usize], data_type: u64, raw: Vec<u8>) -> Vec<u8> {
    tensor_proto(name, dims, data_type, raw)
}

/// An encoded `ValueInfoProto` of a tensor of `data_type` and `dims`.
pub(crate) fn value_info(name: &str, data_type: u64, dims: &[usize]) -> Vec<u8> {
    let mut shape = Message::default();
    for &d in dims {
        let mut dim = Message::default();
        dim.push_varint(DIM_VALUE, d as u64);
        shape.push_bytes(SHAPE_DIM, dim.encode());
    }
    let mut tensor = Message::default();
    tensor.push_varint(TENSOR_TYPE_ELEM, data_type);
    tensor.push_bytes(TENSOR_TYPE_SHAPE, shape.encode());
    let mut ty = Message::default();
    ty.push_bytes(TYPE_TENSOR, tensor.encode());
    let mut info = Message::default();
    info.push_bytes(VALUE_INFO_NAME, name);
    info.push_bytes(VALUE_INFO_TYPE, ty.encode());
    info.encode()
}

fn tensor_proto(name: &str, dims: &[usize], data_type: u64, raw: Vec<u8>) -> Vec<u8> {
    let mut t = Message::default();
    for &d in dims {
        t.push_varint(TENSOR_DIMS, d as u64);
    }
    t.push_varint(TENSOR_DATA_TYPE, data_type);
    t.push_bytes(TENSOR_NAME, name);
    t.push_bytes(TENSOR_RAW_DATA, raw);
    t.encode()
}

/// An attribute of a node under construction.
pub(crate) enum Attr<'a> {
    /// An `INT` attribute.
    Int(&'a str, i64),
    /// An `INTS` attribute.
    Ints(&'a str, &'a [i64]),
}

fn attribute(attr: &Attr<'_>) -> Vec<u8> {
    let mut a = Message::default();
    match attr {
        Attr::Int(name, v) => {
            a.push_bytes(ATTR_NAME, *name);
            a.push_varint(ATTR_I, *v as u64);
            a.push_varint(ATTR_TYPE, ATTR_TYPE_INT);
        }
        Attr::Ints(name, vs) => {
            a.push_bytes(ATTR_NAME, *name);
            for v in *vs {
                a.push_varint(ATTR_INTS, *v as u64);
            }
            a.push_varint(ATTR_TYPE, ATTR_TYPE_INTS);
        }
    }
    a.encode()
}

/// An encoded `NodeProto` of the default domain, named after its first output.
pub(crate) fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: &[Attr<'_>]) -> Vec<u8> {
    node_message(op, inputs, outputs, attrs).encode()
}

/// An encoded `NodeProto` of operator `op` of custom `domain` (register the
/// domain with [`add_opset_import`]), named after its first output. An
/// absent optional input is the empty name.
pub(crate) fn custom_node(domain: &str, op: &str, inputs: &[&str], outputs: &[&str]) -> Vec<u8> {
    let mut n = node_message(op, inputs, outputs, &[]);
    n.push_bytes(NODE_DOMAIN, domain);
    n.encode()
}

/// `model` (a decoded `ModelProto`) with an opset import of `domain` at
/// `version`, unless it imports that domain already.
pub(crate) fn add_opset_import(model: &mut Message, domain: &str, version: u64) {
    let imported = model
        .bytes(MODEL_OPSET_IMPORT)
        .filter_map(|b| Message::decode(b).ok())
        .any(|o| o.string(OPSET_DOMAIN) == Some(domain));
    if imported {
        return;
    }
    let mut opset = Message::default();
    opset.push_bytes(OPSET_DOMAIN, domain);
    opset.push_varint(OPSET_VERSION, version);
    model.push_bytes(MODEL_OPSET_IMPORT, opset.encode());
}

fn node_message(op: &str, inputs: &[&str], outputs: &[&str], attrs: &[Attr<'_>]) -> Message {
    let mut n = Message::default();
    for i in inputs {
        n.push_bytes(NODE_INPUT, *i);
    }
    for o in outputs {
        n.push_bytes(NODE_OUTPUT, *o);
    }
    n.push_bytes(NODE_NAME, outputs.first().copied().unwrap_or(op));
    n.push_bytes(NODE_OP_TYPE, op);
    for a in attrs {
        n.push_bytes(NODE_ATTRIBUTE, attribute(a));
    }
    n
}

fn constant_node(output: &str, tensor: Vec<u8>) -> Vec<u8> {
    let mut value = Message::default();
    value.push_bytes(ATTR_NAME, "value");
    value.push_bytes(ATTR_T, tensor);
    value.push_varint(ATTR_TYPE, ATTR_TYPE_TENSOR);
    let mut n = Message::default();
    n.push_bytes(NODE_OUTPUT, output);
    n.push_bytes(NODE_NAME, output);
    n.push_bytes(NODE_OP_TYPE, "Constant");
    n.push_bytes(NODE_ATTRIBUTE, value.encode());
    n.encode()
}

/// An encoded `Constant` node whose output `output` is a float tensor.
pub(crate) fn constant(output: &str, dims: &[usize], values: &[f32]) -> Vec<u8> {
    let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    constant_node(output, tensor_proto(output, dims, DATA_TYPE_FLOAT, raw))
}

/// An encoded `Constant` node whose output `output` is a 1-D int64 tensor.
pub(crate) fn constant_i64(output: &str, values: &[i64]) -> Vec<u8> {
    let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    constant_node(
        output,
        tensor_proto(output, &[values.len()], DATA_TYPE_INT64, raw),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_byte_for_byte() {
        let mut m = Message::default();
        m.push_varint(1, 300);
        m.push_bytes(2, "hello");
        m.fields.push((3, Value::Fixed32([1, 2, 3, 4])));
        m.fields.push((4, Value::Fixed64([9; 8])));
        m.push_varint(1, u64::MAX);
        let bytes = m.encode();
        let back = Message::decode(&bytes).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.string(2), Some("hello"));
        assert_eq!(back.varint(1), Some(300));
    }

    #[test]
    fn truncated_or_bad_bytes_are_errors_not_panics() {
        let mut m = Message::default();
        m.push_bytes(2, vec![7u8; 40]);
        let bytes = m.encode();
        for cut in 0..bytes.len() {
            let _ = Message::decode(&bytes[..cut]);
        }
        assert!(Message::decode(&bytes[..10]).is_err());
        assert!(Message::decode(&[0x0b]).is_err()); // wire type 3 (groups)
        assert!(Message::decode(&[0x08, 0xff]).is_err()); // varint cut short
    }

    #[test]
    fn a_constant_reads_back_as_the_tensor_written() {
        let node =
            Message::decode(&constant("w", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, -6.5])).unwrap();
        assert_eq!(node.string(NODE_OP_TYPE), Some("Constant"));
        let attr = Message::decode(node.bytes(NODE_ATTRIBUTE).next().unwrap()).unwrap();
        let t = float_tensor(attr.bytes(ATTR_T).next().unwrap()).unwrap();
        assert_eq!(t.dims, vec![2, 3]);
        assert_eq!(t.values, vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]);
    }

    #[test]
    fn a_uint8_tensor_reads_from_raw_data_or_int32_data() {
        let t = RawTensor::decode(&initializer("z", &[], DATA_TYPE_UINT8, vec![140])).unwrap();
        assert_eq!(
            (t.name.as_str(), t.scalar_u8(), t.scalar_f32()),
            ("z", Some(140), None)
        );
        // The same value as an int32_data varint, as some exporters write it.
        let mut m = Message::default();
        m.push_varint(TENSOR_DATA_TYPE, DATA_TYPE_UINT8);
        m.push_bytes(TENSOR_NAME, "z");
        m.push_varint(TENSOR_INT32_DATA, 140);
        assert_eq!(
            RawTensor::decode(&m.encode()).unwrap().scalar_u8(),
            Some(140)
        );
        let f = RawTensor::decode(&initializer(
            "s",
            &[1],
            DATA_TYPE_FLOAT,
            0.5f32.to_le_bytes().to_vec(),
        ))
        .unwrap();
        assert_eq!(f.scalar_f32(), Some(0.5));
        // Dims that do not match the data are an error, not a panic.
        assert!(RawTensor::decode(&initializer("w", &[3], DATA_TYPE_UINT8, vec![1, 2])).is_err());
    }

    #[test]
    fn an_int8_tensor_reads_from_raw_data_or_sign_extended_int32_data() {
        let t = RawTensor::decode(&initializer("z", &[], DATA_TYPE_INT8, vec![0xf6])).unwrap();
        assert_eq!((t.scalar_i8(), t.scalar_u8()), (Some(-10), None));
        let mut m = Message::default();
        m.push_varint(TENSOR_DATA_TYPE, DATA_TYPE_INT8);
        m.push_bytes(TENSOR_NAME, "z");
        m.push_varint(TENSOR_INT32_DATA, (-10i64) as u64);
        assert_eq!(
            RawTensor::decode(&m.encode()).unwrap().scalar_i8(),
            Some(-10)
        );
    }

    #[test]
    fn an_int64_constant_is_not_read_as_floats() {
        let node = Message::decode(&constant_i64("c", &[1, 2])).unwrap();
        let attr = Message::decode(node.bytes(NODE_ATTRIBUTE).next().unwrap()).unwrap();
        assert!(matches!(
            float_tensor(attr.bytes(ATTR_T).next().unwrap()),
            Err(OnnxWireError::Structure(_))
        ));
    }
}
