#!/usr/bin/env python3
"""Smart Turn v3.2 probabilities of ONNX Runtime's kernels on this CPU (a kernel set).

ONNX Runtime picks its CPU kernels by instruction set, and the fused int8 kernels
of the optimised graph (EXTENDED and ALL) give different probabilities on
different CPUs: the goldens' machine and an AMD EPYC without AVX-512 differ by up
to 0.38 on the same features, one verdict flipping; Python onnxruntime and the
Rust session on one machine agree to the bit. The unoptimised graph (DISABLE,
BASIC) gave the same probabilities on both. So the goldens keep one probability
set per kernel family seen: `optimisation-levels.tsv` (the machine the goldens
were made on, whose ALL column is the manifest's probability) and
`kernel-sets/<label>.tsv` (this script), in the same format.

Runs every case of manifest.tsv from its committed features (no fixture audio,
no Pipecat code needed) at the four graph optimisation levels with Pipecat's
session options (sequential, 1 intra-op and 1 inter-op thread).

Usage: <venv with onnxruntime==1.32.0 and numpy>/bin/python \
         scripts/goldens/smart_turn_kernel_set.py LABEL "DESCRIPTION OF THE CPU"
"""

import os
import platform
import sys

import numpy as np
import onnxruntime as ort

LEVELS = [
    ("disable", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
    ("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
    ("extended", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
    ("all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    label, cpu = sys.argv[1], sys.argv[2]
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    golden = os.path.join(repo, "crates/brisvox-models/tests/golden/smart_turn")
    model = os.path.join(repo, "models/smart-turn-v3.2-cpu.onnx")
    sessions = {}
    for name, level in LEVELS:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = level
        sessions[name] = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    lines = [
        f"# Smart Turn v3.2 kernel set '{label}': {cpu}",
        f"# written by scripts/goldens/smart_turn_kernel_set.py; onnxruntime {ort.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}; sequential, 1 intra-op, 1 inter-op thread",
        "# name\tdisable\tbasic\textended\tall",
    ]
    with open(os.path.join(golden, "manifest.tsv")) as f:
        cases = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#") and l.strip()]
    for case in cases:
        features = np.fromfile(os.path.join(golden, case[9]), dtype=np.float32).reshape(1, 80, 800)
        probs = []
        for name, _ in LEVELS:
            s = sessions[name]
            probs.append(float(s.run(None, {s.get_inputs()[0].name: features})[0].reshape(-1)[0]))
        lines.append("\t".join([case[0]] + [repr(p) for p in probs]))
        print(case[0], " ".join(f"{p:.6f}" for p in probs))
    out_dir = os.path.join(golden, "kernel-sets")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{label}.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
