#!/usr/bin/env python3
"""Experiment: fold the batch dimension of Silero VAD's convolutions into GEMMs.

ONNX Runtime's CPU convolution (MLAS, onnxruntime/core/mlas/lib/convolve.cpp) runs
one GEMM per batch item whose N is the layer's output length (4 frames or fewer
here), so a batch of 100 windows costs about 100 thin GEMMs. This script rewrites
the 16 kHz branch of silero_vad.onnx so that the STFT convolution (kernel 256,
stride 128) and the kernel-3 encoder convolutions become framing/im2col +
one MatMul over all rows, then checks the probabilities against the goldens in
crates/brisvox-models/tests/golden/silero/ and times both models at batch 1 and 100
(thread CPU, best of 5, onnxruntime 1 intra-op thread).

brisvox does the same rewrite in Rust when it loads the model
(crates/brisvox-models/src/vad/fold.rs) and runs batches of two rows or more on it;
this script is its Python twin, to check and time the rewrite outside brisvox. The
file it writes to --out is not used by brisvox.
Needs onnx (tested 1.23.2), onnxruntime 1.32.0, numpy.

Usage: silero_fold_batch.py --repo DIR --model models/silero_vad.onnx --out FILE
                            [--layers stft,enc0,enc1,enc2,enc3]
"""
import argparse
import glob
import json
import os
import time
import wave

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

PREFIX = "If_0_then_branch__Inline_0__"  # the 16 kHz branch of the top-level If on sr


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name + "_v"))


class Rewriter:
    def __init__(self, model):
        self.model = model
        top = model.graph
        node = next(n for n in top.node if n.op_type == "If")
        self.branch = next(a.g for a in node.attribute if a.name == "then_branch")
        self.scopes = (self.branch, top)

    def tensor(self, name):
        for graph in self.scopes:
            for init in graph.initializer:
                if init.name == name:
                    return numpy_helper.to_array(init)
            for n in graph.node:
                if n.op_type == "Constant" and n.output[0] == name:
                    return numpy_helper.to_array(n.attribute[0].t)
        raise KeyError(name)

    def node(self, name):
        return next(n for n in self.branch.node if n.name == name)

    def replace(self, old, new_nodes):
        nodes = list(self.branch.node)
        i = next(k for k, n in enumerate(nodes) if n.name == old.name)
        nodes[i:i + 1] = new_nodes
        del self.branch.node[:]
        self.branch.node.extend(nodes)

    def stft(self):
        """Conv(kernel 256, stride 128) on [B, 1, 640] = frames [B, 4, 256] @ W^T."""
        conv = self.node(PREFIX + "/stft/Conv")
        x, w = conv.input[0], conv.input[1]
        basis = self.tensor(w)  # [258, 1, 256]
        q = PREFIX + "/fold/stft/"
        self.replace(conv, [
            const(q + "shape", np.array([0, -1, 128], np.int64)),
            helper.make_node("Reshape", [x, q + "shape"], [q + "blocks"]),  # [B, 5, 128]
            const(q + "zero", np.array([0], np.int64)),
            const(q + "minus1", np.array([-1], np.int64)),
            const(q + "one", np.array([1], np.int64)),
            const(q + "end", np.array([2 ** 62], np.int64)),
            helper.make_node("Slice", [q + "blocks", q + "zero", q + "minus1", q + "one"], [q + "first"]),
            helper.make_node("Slice", [q + "blocks", q + "one", q + "end", q + "one"], [q + "second"]),
            helper.make_node("Concat", [q + "first", q + "second"], [q + "frames"], axis=2),  # [B, 4, 256]
            const(q + "basis_t", np.ascontiguousarray(basis[:, 0, :].T.astype(np.float32))),
            helper.make_node("MatMul", [q + "frames", q + "basis_t"], [q + "spec"]),  # [B, 4, 258]
            helper.make_node("Transpose", [q + "spec"], [conv.output[0]], perm=[0, 2, 1]),
        ])

    def encoder(self, layer, stride):
        """Conv(kernel 3, pad 1, stride s) = im2col [B, T, 3C] @ W' + b."""
        conv = self.node(PREFIX + f"/encoder/{layer}/reparam_conv/Conv")
        x, w, b = conv.input
        weight, bias = self.tensor(w), self.tensor(b)  # [O, C, 3], [O]
        q = PREFIX + f"/fold/encoder{layer}/"
        nodes = [
            const(q + "pads", np.array([0, 0, 1, 0, 0, 1], np.int64)),
            helper.make_node("Pad", [x, q + "pads"], [q + "padded"]),  # [B, C, T + 2]
            const(q + "axis", np.array([2], np.int64)),
            const(q + "step", np.array([stride], np.int64)),
        ]
        taps = []
        for k in range(3):
            end = -(2 - k) if k < 2 else 2 ** 62
            nodes += [const(q + f"start{k}", np.array([k], np.int64)), const(q + f"end{k}", np.array([end], np.int64))]
            nodes.append(helper.make_node(
                "Slice", [q + "padded", q + f"start{k}", q + f"end{k}", q + "axis", q + "step"], [q + f"tap{k}"]))
            taps.append(q + f"tap{k}")
        stacked = np.concatenate([weight[:, :, k].T for k in range(3)], axis=0).astype(np.float32)  # [3C, O]
        nodes += [
            helper.make_node("Concat", taps, [q + "columns"], axis=1),  # [B, 3C, T_out]
            helper.make_node("Transpose", [q + "columns"], [q + "rows"], perm=[0, 2, 1]),
            const(q + "weight", stacked),
            const(q + "bias", bias.astype(np.float32)),
            helper.make_node("MatMul", [q + "rows", q + "weight"], [q + "product"]),
            helper.make_node("Add", [q + "product", q + "bias"], [q + "biased"]),
            helper.make_node("Transpose", [q + "biased"], [conv.output[0]], perm=[0, 2, 1]),
        ]
        self.replace(conv, nodes)


def session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


def worst_against_goldens(sess, repo):
    worst, windows = 0.0, 0
    for path in sorted(glob.glob(os.path.join(repo, "crates/brisvox-models/tests/golden/silero/*.json"))):
        doc = json.load(open(path))
        if doc["sample_rate_hz"] != 16000:
            continue  # only the 16 kHz branch is rewritten
        with wave.open(os.path.join(repo, doc["source"])) as w:
            audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / np.float32(32768)
        state = np.zeros((2, 1, 128), np.float32)
        ctx = np.zeros((1, 64), np.float32)
        sr = np.array(16000, np.int64)
        for i, golden in enumerate(doc["probabilities"]):
            x = np.concatenate([ctx, audio[None, i * 512:(i + 1) * 512]], axis=1)
            prob, state = sess.run(None, {"input": x, "state": state, "sr": sr})
            ctx = x[:, -64:]
            worst = max(worst, abs(float(prob[0, 0]) - golden))
            windows += 1
    return worst, windows


def cpu_per_row(sess, rows, reps):
    x = (np.random.default_rng(1).standard_normal((rows, 576)) * 0.1).astype(np.float32)
    state = np.zeros((2, rows, 128), np.float32)
    sr = np.array(16000, np.int64)
    for _ in range(3):
        sess.run(None, {"input": x, "state": state, "sr": sr})
    best = float("inf")
    for _ in range(5):
        t = time.thread_time_ns()
        for _ in range(reps):
            sess.run(None, {"input": x, "state": state, "sr": sr})
        best = min(best, (time.thread_time_ns() - t) / 1e3 / reps / rows)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", default="stft,enc0,enc1,enc2,enc3")
    args = ap.parse_args()
    layers = args.layers.split(",")
    model = onnx.load(args.model)
    rw = Rewriter(model)
    strides = {"enc0": 1, "enc1": 2, "enc2": 2, "enc3": 1}
    for layer in layers:
        if layer == "stft":
            rw.stft()
        else:
            rw.encoder(int(layer[3:]), strides[layer])
    onnx.save(model, args.out)
    original, folded = session(args.model), session(args.out)
    worst, windows = worst_against_goldens(folded, args.repo)
    print(f"layers folded: {','.join(layers)}")
    print(f"max |p - golden| over {windows} 16 kHz golden windows: {worst:.3g}")
    for rows, reps in ((1, 2000), (100, 40)):
        print(f"batch {rows}: original {cpu_per_row(original, rows, reps):.1f} us/row, "
              f"folded {cpu_per_row(folded, rows, reps):.1f} us/row (thread CPU, best of 5)")


if __name__ == "__main__":
    main()
