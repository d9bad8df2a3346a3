#!/usr/bin/env python3
"""Smart Turn v3.2 (int8) in Python onnxruntime under session options (issue #20).

For each configuration below, runs every Smart Turn golden case (the [80, 800]
features of crates/brisvox-models/tests/golden/smart_turn/*.features.f32) through
onnxruntime and reports, per analysis (model run only: the features are given):

- the calling thread's CPU time (time.thread_time_ns): all of the work at one
  intra-op thread, only the caller's share at two;
- the process's CPU time (time.process_time_ns) over the run plus a 100 ms settle
  pause, minus an idle 100 ms control: includes intra-op workers and their
  spinning after the run;
- wall time;
- verdict agreement (probability > 0.5) with the reference probabilities of
  manifest.tsv (Pipecat's settings: ENABLE_ALL, sequential, 1 intra-op and 1
  inter-op thread) and the largest |p - p_reference|.

The configurations are interleaved round by round (a noisy neighbour hits them
alike); CPU figures are medians over rounds x cases. Prints markdown.

Needs onnxruntime==1.32.0 and numpy (the venv of scripts/goldens/make-smart-turn-goldens.sh).
Usage: smart_turn_session_options.py --model models/smart-turn-v3.2-cpu.onnx [--rounds 5]
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "crates", "brisvox-models", "tests", "golden", "smart_turn")
SETTLE_S = 0.1

LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

# name, intra threads, level, memory arena, intra-op spinning
CONFIGS = [
    ("reference (all, 1 thread, arena, spin)", 1, "all", True, True),
    ("arena off", 1, "all", False, True),
    ("spinning off", 1, "all", True, False),
    ("arena off, spinning off", 1, "all", False, False),
    ("extended", 1, "extended", True, True),
    ("basic", 1, "basic", True, True),
    ("disable", 1, "disable", True, True),
    ("2 intra-op threads", 2, "all", True, True),
    ("2 intra-op threads, spinning off", 2, "all", True, False),
]


def cases():
    out = []
    with open(os.path.join(GOLDEN, "manifest.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            name, probability, features = cols[0], float(cols[7]), cols[9]
            x = np.fromfile(os.path.join(GOLDEN, features), dtype="<f4").reshape(1, 80, 800)
            out.append((name, probability, x))
    return out


def session(model, intra, level, arena, spin):
    so = ort.SessionOptions()
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1
    so.intra_op_num_threads = intra
    so.graph_optimization_level = LEVELS[level]
    so.enable_cpu_mem_arena = arena
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def timed(sess, x):
    p0, t0, w0 = time.process_time_ns(), time.thread_time_ns(), time.perf_counter_ns()
    (out,) = sess.run(None, {"input_features": x})
    w1, t1 = time.perf_counter_ns(), time.thread_time_ns()
    time.sleep(SETTLE_S)
    p1 = time.process_time_ns()
    return float(out.reshape(-1)[0]), (t1 - t0) / 1e6, (p1 - p0) / 1e6, (w1 - w0) / 1e6


def control_ms():
    p0 = time.process_time_ns()
    time.sleep(SETTLE_S)
    return (time.process_time_ns() - p0) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = cases()
    sessions = [session(args.model, *c[1:]) for c in CONFIGS]
    stats = [{"thread": [], "process": [], "wall": [], "worst": 0.0, "agree": 0, "total": 0} for _ in CONFIGS]
    for sess in sessions:  # warm-up
        for _, _, x in data[:3]:
            sess.run(None, {"input_features": x})
    control = []
    for _ in range(args.rounds):
        control.append(control_ms())
        for sess, st in zip(sessions, stats):
            for _, reference, x in data:
                p, thread_ms, process_ms, wall_ms = timed(sess, x)
                st["thread"].append(thread_ms)
                st["process"].append(process_ms)
                st["wall"].append(wall_ms)
                st["worst"] = max(st["worst"], abs(p - reference))
                st["agree"] += (p > 0.5) == (reference > 0.5)
                st["total"] += 1
    idle = statistics.median(control)
    print(f"Python {platform.python_version()}, onnxruntime {ort.__version__}, numpy {np.__version__}; "
          f"{len(data)} golden cases x {args.rounds} rounds per configuration; idle 100 ms control "
          f"{idle:.2f} ms of process CPU, subtracted.\n")
    print("| configuration | caller thread CPU p50 ms | process CPU p50 ms | wall p50 ms | verdicts agreeing with the reference | max abs(p - p_reference) |")
    print("|---|---|---|---|---|---|")
    for (name, *_), st in zip(CONFIGS, stats):
        process = statistics.median(st["process"]) - idle
        print(f"| {name} | {statistics.median(st['thread']):.2f} | {process:.2f} | "
              f"{statistics.median(st['wall']):.2f} | {st['agree'] // args.rounds} of {len(data)} | {st['worst']:.3g} |")


if __name__ == "__main__":
    main()
