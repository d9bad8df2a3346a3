#!/usr/bin/env python3
"""Golden Silero VAD probabilities for brisvox's Rust port (crates/brisvox-models).

The reference is Python onnxruntime running the shipped silero_vad.onnx the way the
silero-vad package's OnnxWrapper does (one intra-op and one inter-op thread, default
graph optimisation): each window is the previous window's last `context` samples
followed by `window` new samples, the recurrent state starts at zero and is carried
from one window to the next, `sr` is an int64 scalar. 16 kHz: 64 + 512 samples;
8 kHz: 32 + 256. Audio is int16 / 32768 as float32. Only whole windows are scored.

Writes one JSON file per fixture into the output directory:
  {"fixture", "source", "pcm_fnv1a64" (of the little-endian int16 samples), "samples",
   "sample_rate_hz", "window", "context", "onnxruntime", "model_sha256",
   "probabilities": [...]}   (each value a float32, written exactly)
"""
import argparse
import hashlib
import json
import os
import sys
import wave

import numpy as np
import onnxruntime as ort

WINDOW = {16000: 512, 8000: 256}
CONTEXT = {16000: 64, 8000: 32}


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            sys.exit(f"{path}: need mono 16-bit PCM")
        rate = w.getframerate()
        raw = w.readframes(w.getnframes())
    pcm = np.frombuffer(raw, dtype="<i2")
    return rate, pcm.astype(np.float32) / np.float32(32768.0), fnv1a64(raw)


def session(model):
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def probabilities(sess, rate, audio):
    window, context = WINDOW[rate], CONTEXT[rate]
    state = np.zeros((2, 1, 128), dtype=np.float32)
    ctx = np.zeros((1, context), dtype=np.float32)
    sr = np.array(rate, dtype=np.int64)
    out = []
    for start in range(0, len(audio) - window + 1, window):
        x = np.concatenate([ctx, audio[None, start:start + window]], axis=1)
        prob, state = sess.run(None, {"input": x, "state": state, "sr": sr})
        out.append(float(np.float32(prob[0, 0])))
        ctx = x[:, -context:]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--repo", default=".", help="paths in the goldens are relative to this")
    ap.add_argument("wavs", nargs="+")
    args = ap.parse_args()
    with open(args.model, "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()
    sess = session(args.model)
    os.makedirs(args.out, exist_ok=True)
    for path in args.wavs:
        rate, audio, pcm_hash = read_wav(path)
        if rate not in WINDOW:
            sys.exit(f"{path}: {rate} Hz, Silero takes 8000 or 16000")
        name = os.path.splitext(os.path.basename(path))[0]
        probs = probabilities(sess, rate, audio)
        doc = {
            "fixture": name,
            "source": os.path.relpath(os.path.abspath(path), os.path.abspath(args.repo)),
            "pcm_fnv1a64": pcm_hash,
            "samples": len(audio),
            "sample_rate_hz": rate,
            "window": WINDOW[rate],
            "context": CONTEXT[rate],
            "onnxruntime": ort.__version__,
            "model_sha256": model_sha,
            "probabilities": probs,
        }
        dest = os.path.join(args.out, f"{name}.json")
        with open(dest, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print(f"{dest}: {len(probs)} windows, max {max(probs):.3f}")


if __name__ == "__main__":
    main()
