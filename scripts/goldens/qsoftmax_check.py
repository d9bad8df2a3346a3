#!/usr/bin/env python3
"""Rows that tell ONNX Runtime's quantised softmax kernels apart (brisvox's load-time check).

brisvox runs the attention softmax of Smart Turn v3.2 on its own kernel
(crates/brisvox-models/src/smart_turn/qsoftmax.rs), which reproduces what the
onnxruntime 1.32 library computes for `QLinearSoftmax` on the machines it was
checked on: a float table, each row summed in element order, each output the
double-precision quotient entry * floor(1 / y_scale) / sum rounded half to even.
ONNX Runtime picks its kernels by CPU, and other ways of computing the same
softmax (a float quotient, halves away from zero, sums over 8 or 16 vector
lanes, a double table) differ from it on about one element in ten million:
on rows whose quotient falls near a half. This script finds such rows, for the
four (x_scale, y_scale, y_zero_point) of the model's attention layers and two
others, and writes them with a one-softmax ONNX graph per set
(DequantizeLinear -> Softmax -> QuantizeLinear, which ONNX Runtime fuses into
QLinearSoftmax) to crates/brisvox-models/src/smart_turn/qsoftmax_check/.
When brisvox loads Smart Turn it runs those rows through ONNX Runtime's own
kernel and its kernel and uses its kernel only if every output byte agrees;
otherwise ONNX Runtime's runs, as shipped.

The script also checks that this machine's onnxruntime gives brisvox's
numbers on every row written (it stops if not).

Usage: <venv with onnxruntime==1.32.0, onnx and numpy>/bin/python \
         scripts/goldens/qsoftmax_check.py [--rows-per-set 48] [--seed 1]
"""
import argparse
import ctypes
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32
D = 400
SETS = [
    # name, x_scale, y_scale, y_zero_point: the model's four attention softmaxes, then two others
    ("layer0", 0.20819359, 0.00387513, 0),
    ("layer1", 0.12003314, 0.00387092, 0),
    ("layer2", 0.16190203, 0.00391947, 0),
    ("layer3", 0.18348716, 0.00392082, 0),
    ("wide", 0.05, 1 / 256, 0),
    ("offset", 0.3, 0.0039, 3),
]
LIBM = ctypes.CDLL("libm.so.6")
LIBM.logf.restype = ctypes.c_float
LIBM.logf.argtypes = [ctypes.c_float]


def model(xs, ys, yzp):
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["xf"]),
        helper.make_node("Softmax", ["xf"], ["sf"], axis=-1),
        helper.make_node("QuantizeLinear", ["sf", "y_scale", "y_zero_point"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(F32(xs)), "x_scale"),
        numpy_helper.from_array(np.array(np.uint8(128)), "x_zero_point"),
        numpy_helper.from_array(np.array(F32(ys)), "y_scale"),
        numpy_helper.from_array(np.array(np.uint8(yzp)), "y_zero_point"),
    ]
    g = helper.make_graph(
        nodes, "qsoftmax_check",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, ["rows", D])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, ["rows", D])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="brisvox")
    m.ir_version = 9
    return m.SerializeToString()


def session(model_bytes):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def table(xs, dtype=F32):
    shift = max(0.0, float(LIBM.logf(float(F32(np.finfo(F32).max) / F32(D)))) - 5) / float(F32(xs))
    t = np.exp((np.arange(256, dtype=np.float64) - 255 + shift) * float(F32(xs)))
    return t.astype(dtype)


def seq_sum(v, dtype=F32):
    s = np.zeros(v.shape[0], dtype=dtype)
    for j in range(v.shape[1]):
        s = (s + v[:, j]).astype(dtype)
    return s


def lane_sum(v, lanes):
    acc = np.zeros((v.shape[0], lanes), dtype=F32)
    n = v.shape[1] // lanes * lanes
    for j in range(0, n, lanes):
        acc = (acc + v[:, j:j + lanes]).astype(F32)
    while acc.shape[1] > 1:
        h = acc.shape[1] // 2
        acc = (acc[:, :h] + acc[:, h:]).astype(F32)
    s = acc[:, 0]
    for j in range(n, v.shape[1]):
        s = (s + v[:, j]).astype(F32)
    return s


def variants(x, xs, ys, yzp):
    """brisvox's kernel first, then the others it must be told apart from."""
    y_scale = F32(np.floor(F32(1) / F32(ys)))
    idx = (255 - x.max(1, keepdims=True).astype(np.int64)) + x.astype(np.int64)
    v = table(xs)[idx]
    s = seq_sum(v)
    vd = table(xs, np.float64)[idx]

    def out(q, rnd):
        return np.minimum(rnd(q).astype(np.int64) + yzp, 255).astype(np.uint8)

    even = np.rint
    away = lambda q: np.floor(q + 0.5)  # noqa: E731
    exact = v.astype(np.float64) * float(y_scale) / s[:, None].astype(np.float64)
    fdiv = ((v * y_scale).astype(F32) / s[:, None]).astype(F32)
    ours = out(exact, even)
    others = [
        out(fdiv, even), out(fdiv, away), out(exact, away),
        out((v.astype(np.float64) * float(y_scale) / lane_sum(v, 8)[:, None].astype(np.float64)), even),
        out((v.astype(np.float64) * float(y_scale) / lane_sum(v, 16)[:, None].astype(np.float64)), even),
        out(((v * ((F32(1) / s).astype(F32) * y_scale).astype(F32)[:, None]).astype(F32)), even),
        out(vd * float(y_scale) / seq_sum(vd, np.float64)[:, None], even),
    ]
    return ours, others


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows-per-set", type=int, default=48)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = os.path.join(here, "..", "..", "crates", "brisvox-models", "src", "smart_turn", "qsoftmax_check")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    manifest = ["# name\tx_scale\ty_scale\ty_zero_point\trows (files: NAME.onnx, the graph; NAME.rows, rows of 400 uint8)"]
    for name, xs, ys, yzp in SETS:
        mb = model(xs, ys, yzp)
        sess = session(mb)
        kept = []
        tried = 0
        while len(kept) < args.rows_per_set and tried < 4_000_000:
            spread = rng.uniform(2, 60)
            x = np.clip(rng.normal(rng.uniform(60, 200), spread, size=(20000, D)), 0, 255).astype(np.uint8)
            tried += x.shape[0]
            ours, others = variants(x, xs, ys, yzp)
            differs = np.zeros(x.shape[0], dtype=bool)
            for o in others:
                differs |= (o != ours).any(axis=1)
            if differs.any():
                rows = x[differs]
                theirs = sess.run(None, {"x": rows})[0]
                if not (theirs == ours[differs]).all():
                    raise SystemExit(f"{name}: this machine's onnxruntime differs from brisvox's kernel")
                kept.extend(rows)
        kept = np.array(kept[: args.rows_per_set], dtype=np.uint8)
        with open(os.path.join(out_dir, f"{name}.onnx"), "wb") as f:
            f.write(mb)
        kept.tofile(os.path.join(out_dir, f"{name}.rows"))
        manifest.append(f"{name}\t{F32(xs)!r}\t{F32(ys)!r}\t{yzp}\t{len(kept)}".replace("np.float32(", "").replace(")", ""))
        print(f"{name}: {len(kept)} rows kept of {tried} tried", flush=True)
    with open(os.path.join(out_dir, "sets.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
