"""ONNX Runtime's QLinearMatMul with a uint8 against an int8 second operand.

Times one QLinearMatMul node at the shapes of Smart Turn v3.2's attention
products (and, for scale, a projection and an FFN product with constant
weights), the second operand uint8 (as in the shipped graph) or int8 (as
after brisvox's `smart_turn/qsigned.rs`), one intra-op thread, random bytes.
Prints a markdown table; run it pinned to one core, e.g.

    taskset -c 1 python bench/qlinear_matmul_operands.py --runs 200
"""

import argparse
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def session(a_shape, b_shape, b_const, signed):
    b_type = T.INT8 if signed else T.UINT8
    zero_b = h.make_tensor("bz", b_type, [], [-8 if signed else 120])
    inits = [
        h.make_tensor("as", T.FLOAT, [], [0.05]),
        h.make_tensor("az", T.UINT8, [], [128]),
        h.make_tensor("bs", T.FLOAT, [], [0.04]),
        zero_b,
        h.make_tensor("ys", T.FLOAT, [], [0.3]),
        h.make_tensor("yz", T.UINT8, [], [100]),
    ]
    rs = np.random.RandomState(0)
    if signed:
        b = rs.randint(-128, 128, b_shape).astype(np.int8)
    else:
        b = rs.randint(0, 256, b_shape).astype(np.uint8)
    inputs = [h.make_tensor_value_info("a", T.UINT8, a_shape)]
    feeds = {"a": rs.randint(0, 256, a_shape).astype(np.uint8)}
    if b_const:
        inits.append(nh.from_array(b, "b"))
    else:
        inputs.append(h.make_tensor_value_info("b", b_type, b_shape))
        feeds["b"] = b
    node = h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", T.UINT8, None)], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    # Without it ONNX Runtime may turn int8 activations into uint8 on x86.
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]), feeds


def timed(sess, feeds, runs):
    for _ in range(20):
        sess.run(None, feeds)
    t = time.perf_counter()
    for _ in range(runs):
        sess.run(None, feeds)
    return (time.perf_counter() - t) / runs * 1000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=200)
    args = p.parse_args()
    shapes = [
        ("attention scores (queries x keys), 6 heads", [1, 6, 400, 64], [1, 6, 64, 400], False),
        ("attention output (softmax x values), 6 heads", [1, 6, 400, 400], [1, 6, 400, 64], False),
        ("projection 384 x 384 (constant weights)", [1, 400, 384], [384, 384], True),
        ("FFN 384 x 1536 (constant weights)", [1, 400, 384], [384, 1536], True),
    ]
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}, {args.runs} runs each, interleaved")
    print()
    print("| product | uint8 x uint8 ms | uint8 x int8 ms | int8 / uint8 |")
    print("|---|---|---|---|")
    for name, a, b, const in shapes:
        u = session(a, b, const, False)
        s = session(a, b, const, True)
        tu, ts = [], []
        for _ in range(5):
            tu.append(timed(*u, args.runs // 5))
            ts.append(timed(*s, args.runs // 5))
        mu, ms = float(np.median(tu)), float(np.median(ts))
        print(f"| {name} | {mu:.3f} | {ms:.3f} | {ms / mu:.2f} |")


if __name__ == "__main__":
    main()
