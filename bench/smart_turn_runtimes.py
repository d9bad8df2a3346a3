#!/usr/bin/env python3
"""Smart Turn v3.2 (int8) under other runtimes than ONNX Runtime's CPU EP (issue #20).

Runs every Smart Turn golden case (the [1, 80, 800] features of
crates/brisvox-models/tests/golden/smart_turn/*.features.f32) through each
configuration below, in one process, the configurations interleaved round by
round with the starting configuration rotated each round, and reports per
analysis (model run only: the features are given):

- process CPU (time.process_time_ns: every thread of the process) over a block
  of all the golden cases plus a 100 ms settle pause (so worker threads that
  spin after a run are counted), minus an idle 100 ms control, divided by the
  number of cases: the CPU clock of this VM is tick-granular, a block of 16
  runs averages that out;
- the calling thread's CPU time over the same block (all of the work when the
  runtime runs on the caller's thread);
- wall time per run (median);
- the largest |p - golden| over the cases and the verdicts (p > 0.5) that flip,
  against manifest.tsv (Python onnxruntime 1.32, Pipecat's reference settings).

Every runtime is set single-threaded: ONNX Runtime 1 intra-op and 1 inter-op
thread, sequential; OpenVINO INFERENCE_NUM_THREADS=1, NUM_STREAMS=1,
ENABLE_HYPER_THREADING=NO, PERFORMANCE_HINT=LATENCY.

Configurations (a configuration whose runtime cannot be loaded is reported as
such, not skipped silently):
  ort            onnxruntime's CPU EP (1.32.0 in the main venv), reference settings (the baseline)
  ort-fsoftmax   the same graph rewritten so that the attention softmax runs in
                 float (DQ -> Softmax -> Q is otherwise fused into
                 QLinearSoftmax): Softmax written as Exp(LogSoftmax(x)), which
                 ONNX Runtime's QDQ rules do not match
  ort-gelu       the graph with its erf GELUs fused into com.microsoft Gelu
                 (onnxruntime.transformers' FusionGelu), which ONNX Runtime's
                 optimizer does not do on this QDQ graph
  ort-batch4     the reference, 4 analyses per run ([4, 80, 800]; the graph's batch
                 dimension is free): for scale only, the Smart Turn executor
                 runs one analysis at a time
  ort-400-frames the reference fed only the last 400 frames (a shorter input for
                 audio under 8 s, not the 8 s reference): tried only if the graph
                 takes another length (it reports the error if it does not)
  ov-f32         OpenVINO (the openvino wheel) CPU plugin, f32 inference precision
  ov-bf16        OpenVINO CPU plugin, its default precision on this CPU (bf16 with
                 AVX512_BF16)
  ort-ovep       onnxruntime 1.32.0 with the OpenVINO EP plugin
                 (onnxruntime-ep-openvino, EP ABI), device CPU
  ort-ovep-full  onnxruntime-openvino (ONNX Runtime built with the OpenVINO EP; it
                 replaces the onnxruntime module, so it runs in its own venv
                 and process, with its own CPU EP as the `ort` row there)

Needs the venv made by bench/smart-turn-runtimes.sh.
Usage: smart_turn_runtimes.py --model models/smart-turn-v3.2-cpu.onnx [--rounds 20] [--only a,b]
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
from smart_turn_session_options import SETTLE_S, cases  # the golden cases, read once for both scripts

OV_SINGLE = {
    "INFERENCE_NUM_THREADS": 1,
    "NUM_STREAMS": 1,
    "ENABLE_HYPER_THREADING": False,
    "PERFORMANCE_HINT": "LATENCY",
}


def ort_options():
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return so


def ort_runner(sess):
    def run(x):
        (out,) = sess.run(None, {"input_features": x})
        return float(out.reshape(-1)[0])

    return run


def make_ort(model):
    import onnxruntime as ort

    return ort_runner(ort.InferenceSession(model, sess_options=ort_options(), providers=["CPUExecutionProvider"]))


def float_softmax_graph(model):
    """The model with every Softmax that a DequantizeLinear feeds written as Exp(LogSoftmax(x)).

    ONNX Runtime fuses DequantizeLinear -> Softmax -> QuantizeLinear into
    QLinearSoftmax; it has no such rule for LogSoftmax, so the softmax runs in
    float (a Mul by 1.0 in between is folded away before the QDQ fusion).
    """
    import onnx
    from onnx import helper

    m = onnx.load(model)
    g = m.graph
    producer = {o: n for n in g.node for o in n.output}
    nodes = []
    for n in g.node:
        feeder = producer.get(n.input[0])
        if n.op_type == "Softmax" and feeder is not None and feeder.op_type == "DequantizeLinear":
            mid = n.output[0] + "_logsoftmax"
            axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
            nodes.append(helper.make_node("LogSoftmax", [n.input[0]], [mid], name=n.name + "_log", axis=axis))
            nodes.append(helper.make_node("Exp", [mid], [n.output[0]], name=n.name + "_exp"))
            continue
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    return m.SerializeToString()


def gelu_fused_graph(model):
    """The model with its erf GELUs (Div, Erf, Add, Mul, Mul) fused into com.microsoft Gelu.

    ONNX Runtime's own optimizer leaves them apart on this QDQ graph; the fusion is
    onnxruntime.transformers' FusionGelu (shipped in the onnxruntime wheel).
    """
    import onnx
    from onnxruntime.transformers.fusion_gelu import FusionGelu
    from onnxruntime.transformers.onnx_model import OnnxModel

    fused = OnnxModel(onnx.load(model))
    FusionGelu(fused).apply()
    fused.prune_graph()
    return fused.model


def make_ort_gelu(model):
    import onnxruntime as ort

    graph = gelu_fused_graph(model).SerializeToString()
    return ort_runner(ort.InferenceSession(graph, sess_options=ort_options(), providers=["CPUExecutionProvider"]))


def make_ort_fsoftmax(model):
    import onnxruntime as ort

    return ort_runner(ort.InferenceSession(float_softmax_graph(model), sess_options=ort_options(), providers=["CPUExecutionProvider"]))


def make_ov(model, extra):
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(model), "CPU", {**OV_SINGLE, **extra})
    request = compiled.create_infer_request()

    def run(x):
        request.infer({0: x})
        return float(request.get_output_tensor(0).data.reshape(-1)[0])

    run.note = "the compiled model reports " + ", ".join(
        f"{key} {compiled.get_property(key)}"
        for key in ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS", "PERFORMANCE_HINT", "ENABLE_HYPER_THREADING")
    )
    return run


def make_ort_ovep(model):
    import onnxruntime as ort
    import onnxruntime_ep_openvino as ovep

    ort.register_execution_provider_library("openvino_ep", ovep.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == ovep.get_ep_name()]
    if not devices:
        seen = ", ".join(f"{d.ep_name} ({d.device.vendor}, vendor id {d.device.vendor_id:#06x})" for d in ort.get_ep_devices())
        raise RuntimeError(f"the plugin registered but offers no device on this machine; ONNX Runtime lists: {seen}")
    so = ort_options()
    so.add_provider_for_devices(devices, {"num_of_threads": "1", "num_streams": "1", "precision": "FP32"})
    return ort_runner(ort.InferenceSession(model, sess_options=so))


def make_ort_ovep_full(model):
    """The OpenVINO EP built into ONNX Runtime (the onnxruntime-openvino wheel)."""
    import json

    import onnxruntime as ort

    if "OpenVINOExecutionProvider" not in ort.get_available_providers():
        raise RuntimeError(f"this onnxruntime ({ort.__version__}) has no OpenVINOExecutionProvider")
    options = {
        "device_type": "CPU",
        "precision": "FP32",
        "num_of_threads": "1",
        "num_streams": "1",
        "load_config": json.dumps({"CPU": {k: str(v).upper() if isinstance(v, bool) else str(v) for k, v in OV_SINGLE.items()}}),
    }
    sess = ort.InferenceSession(model, sess_options=ort_options(), providers=[("OpenVINOExecutionProvider", options)])
    if sess.get_providers()[0] != "OpenVINOExecutionProvider":
        raise RuntimeError(f"session providers are {sess.get_providers()}")
    return ort_runner(sess)


def make_ort_batch(model, batch):
    import onnxruntime as ort

    sess = ort.InferenceSession(model, sess_options=ort_options(), providers=["CPUExecutionProvider"])

    def run(x):
        (out,) = sess.run(None, {"input_features": x})
        return [float(p) for p in out.reshape(-1)]

    run.batch = batch
    return run


def make_ort_400_frames(model):
    """The reference with the frame axis of the input made free, fed the last 400 frames.

    A shorter input when the audio is shorter than 8 s is worth trying only if
    the graph takes another length: this loader tries one run and raises with
    ONNX Runtime's error when it does not.
    """
    import onnx
    import onnxruntime as ort

    m = onnx.load(model)
    frames = m.graph.input[0].type.tensor_type.shape.dim[2]
    frames.ClearField("dim_value")
    frames.dim_param = "frames"
    so = ort_options()
    so.log_severity_level = 4  # the error is reported below
    sess = ort.InferenceSession(m.SerializeToString(), sess_options=so, providers=["CPUExecutionProvider"])
    try:
        sess.run(None, {"input_features": np.zeros((1, 80, 400), dtype=np.float32)})
    except Exception as e:
        raise RuntimeError(f"the graph does not take 400 frames: {' '.join(str(e).split())[-160:]}") from None

    def run(x):
        (out,) = sess.run(None, {"input_features": np.ascontiguousarray(x[:, :, -400:])})
        return float(out.reshape(-1)[0])

    return run


CONFIGS = {
    "ort": ("onnxruntime CPU EP, reference settings", make_ort),
    "ort-fsoftmax": ("onnxruntime CPU EP, attention softmax in float (graph rewrite)", make_ort_fsoftmax),
    "ort-gelu": ("onnxruntime CPU EP, erf GELUs fused into Gelu (graph rewrite)", make_ort_gelu),
    "ort-batch4": ("onnxruntime CPU EP, reference settings, 4 analyses per run (batch dimension)", lambda m: make_ort_batch(m, 4)),
    "ort-400-frames": ("onnxruntime CPU EP, reference settings, last 400 frames (4 s) only", make_ort_400_frames),
    "ov-f32": ("OpenVINO CPU, f32 inference precision", lambda m: make_ov(m, {"INFERENCE_PRECISION_HINT": "f32"})),
    "ov-bf16": ("OpenVINO CPU, default precision (bf16 on this CPU)", lambda m: make_ov(m, {})),
    "ort-ovep": ("onnxruntime + OpenVINO EP plugin (onnxruntime-ep-openvino), CPU", make_ort_ovep),
    "ort-ovep-full": ("onnxruntime-openvino (OpenVINO EP built in), CPU, FP32", make_ort_ovep_full),
}


def block(run, data):
    """All cases once; returns (probabilities, process ns, thread ns, wall ns per analysis).

    A runner with a `batch` attribute takes that many cases per run ([batch, 80, 800])
    and returns their probabilities; its wall time per run is divided among them.
    """
    batch = getattr(run, "batch", 1)
    p0, t0 = time.process_time_ns(), time.thread_time_ns()
    probabilities, walls = [], []
    for i in range(0, len(data), batch):
        xs = [x for _, _, x in data[i : i + batch]]
        w0 = time.perf_counter_ns()
        if batch == 1:
            probabilities.append(run(xs[0]))
        else:
            probabilities.extend(run(np.concatenate(xs)))
        walls.extend([(time.perf_counter_ns() - w0) / len(xs)] * len(xs))
    t1 = time.thread_time_ns()
    time.sleep(SETTLE_S)
    return probabilities, time.process_time_ns() - p0, t1 - t0, walls


def control_ns():
    p0 = time.process_time_ns()
    time.sleep(SETTLE_S)
    return time.process_time_ns() - p0


def load(names, model):
    loaded, failed = [], []
    for name in names:
        try:
            loaded.append((name, CONFIGS[name][1](model)))
        except Exception as e:  # reported in the output, never skipped silently
            failed.append((name, f"{type(e).__name__}: {e}".replace("\n", " ")))
    return loaded, failed


def measure(loaded, data, rounds):
    stats = {name: {"process": [], "thread": [], "wall": [], "worst": (0.0, ""), "flips": set()} for name, _ in loaded}
    for _, run in loaded:  # warm-up
        for _, _, x in data[:3]:
            run(x)
    control = []
    for r in range(rounds):
        control.append(control_ns())
        for i in range(len(loaded)):
            name, run = loaded[(i + r) % len(loaded)]
            probabilities, process, thread, walls = block(run, data)
            st = stats[name]
            st["process"].append(process)
            st["thread"].append(thread)
            st["wall"].extend(walls)
            for (case, reference, _), p in zip(data, probabilities):
                if abs(p - reference) > st["worst"][0]:
                    st["worst"] = (abs(p - reference), case)
                if (p > 0.5) != (reference > 0.5):
                    st["flips"].add(case)
    return stats, statistics.median(control)


def versions():
    out = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for module in ("onnxruntime", "openvino", "onnx"):
        try:
            mod = __import__(module)
            out.append(f"{module} {getattr(mod, '__version__', '?')}")
        except ImportError:
            pass
    try:
        from importlib.metadata import version

        out.append(f"onnxruntime-ep-openvino {version('onnxruntime-ep-openvino')}")
    except Exception:
        pass
    return ", ".join(out)


def report(loaded, failed, stats, idle, data, rounds):
    n = len(data)
    base = statistics.median(stats["ort"]["process"]) if "ort" in stats else None
    print(f"{versions()}; {n} golden cases per block, {rounds} rounds, configurations interleaved "
          f"(starting configuration rotated each round); idle 100 ms control {idle / 1e6:.2f} ms of "
          f"process CPU, subtracted once per block.\n")
    print("| configuration | process CPU per analysis, median of blocks (min) ms | vs ort | caller thread CPU ms | wall p50 ms | max abs(p - golden) | verdicts flipped |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in loaded:
        st = stats[name]
        per = [(p - idle) / n / 1e6 for p in st["process"]]
        med = statistics.median(per)
        ratio = f"{(statistics.median(st['process']) - idle) / (base - idle):.3f}" if base else "-"
        worst, case = st["worst"]
        print(f"| {name}: {CONFIGS[name][0]} | {med:.2f} ({min(per):.2f}) | {ratio} | "
              f"{statistics.median(st['thread']) / n / 1e6:.2f} | {statistics.median(st['wall']) / 1e6:.2f} | "
              f"{worst:.3e} ({case}) | {len(st['flips'])} of {n} {sorted(st['flips']) if st['flips'] else ''} |")
    for name, why in failed:
        print(f"| {name}: {CONFIGS[name][0]} | not loaded: {why} | | | | | |")
    notes = [(name, run.note) for name, run in loaded if hasattr(run, "note")]
    if notes:
        print()
    for name, note in notes:
        print(f"- {name}: {note}")


def profile(model, data, runs):
    """ONNX Runtime's profiler on the reference settings: kernel time per operator type."""
    import collections
    import json
    import tempfile

    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        so = ort_options()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "smart_turn")
        sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
        for i in range(runs):
            sess.run(None, {"input_features": data[i % len(data)][2]})
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per_op, nodes = collections.defaultdict(float), collections.defaultdict(set)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_op[e["args"]["op_name"]] += e["dur"]
            nodes[e["args"]["op_name"]].add(e["name"])
    total = sum(per_op.values())
    print(f"\nONNX Runtime {ort.__version__} profiler, reference settings, {runs} runs over the golden cases: "
          f"kernel time per operator type (after graph optimisation) as a share of all kernel time.\n")
    print("| operator (optimised graph) | nodes | share of kernel time |")
    print("|---|---|---|")
    for op, us in sorted(per_op.items(), key=lambda kv: -kv[1]):
        if us / total >= 0.005:
            print(f"| {op} | {len(nodes[op])} | {100 * us / total:.1f} % |")
    rest = sum(us for us in per_op.values() if us / total < 0.005)
    print(f"| the other operators (each < 0.5 %) | | {100 * rest / total:.1f} % |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--profile-runs", type=int, default=0, help="then profile the reference this many runs")
    ap.add_argument("--only", default=",".join(CONFIGS), help="comma-separated configuration names")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        ap.error(f"unknown configuration(s): {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    data = cases()
    loaded, failed = load(names, args.model)
    stats, idle = measure(loaded, data, args.rounds)
    report(loaded, failed, stats, idle, data, args.rounds)
    if args.profile_runs:
        profile(args.model, data, args.profile_runs)


if __name__ == "__main__":
    main()
