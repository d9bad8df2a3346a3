#!/usr/bin/env python3
"""Reference features and probabilities for Smart Turn v3.2 (brisvox goldens).

Run through scripts/goldens/make-smart-turn-goldens.sh, which builds the venv
(onnxruntime==1.32.0, numpy) and extracts Pipecat's numpy feature extractor
(`_whisper_features.py` from pipecat-ai==1.14.0) into --reference-module-dir.

Each case is a span of a committed fixture (fixtures/*.wav, 16 kHz int16), cut the
way Pipecat's BaseSmartTurn cuts it from 20 ms frames: its VAD confirms speech
200 ms (start_secs) after the speech starts and Pipecat keeps the frames from that
moment minus 500 ms (pre_speech_ms) minus those 200 ms, up to the VAD stop (speech
end plus the VAD's 200 ms stop_secs), or up to a point inside the speech for the
"cut mid-sentence" cases. The span is then prepared as LocalSmartTurnAnalyzerV3 does
(int16 / 32768 as float32, keep the last 8 s or zero-pad at the start) and fed to
the vendored feature extractor and to onnxruntime with Pipecat's session options
(ENABLE_ALL, sequential, 1 inter-op thread, 1 intra-op thread: Pipecat's default
cpu_count).

Writes into crates/brisvox-models/tests/golden/smart_turn/:
  manifest.tsv            one line per case: fixture, sample span, the 20 ms frame
                          on which the VAD confirms speech (-1: none), the frames
                          pushed when the previous turn ended (-1: none), FNV-1a 64 of the
                          int16 input bytes (to notice a changed fixture), reference probability, verdict, features file
  <case>.features.f32     the [80, 800] features, little-endian float32, mel major
  optimisation-levels.tsv the probability of every case under each onnxruntime
                          graph optimisation level (why the level matters)
"""

import argparse
import json
import os
import sys
import wave

import numpy as np
import onnxruntime as ort

SAMPLE_RATE = 16000
PRE_SPEECH_MS = 500  # pipecat SmartTurnParams.pre_speech_ms
VAD_START_MS = 200  # pipecat VAD_START_SECS
VAD_STOP_MS = 200  # pipecat VAD_STOP_SECS
WINDOW = 8 * SAMPLE_RATE
FRAME_MS = 20
FRAME = SAMPLE_RATE * FRAME_MS // 1000

# name, fixture, utterance index, cut: None = the VAD stop after the utterance,
# a float = a point inside the utterance (fraction of its speech), "whole" = the
# whole file as one segment.
CASES = [
    ("librivox_0870_complete", "librivox_0870", 0, None),
    ("librivox_0870_cut_30pct", "librivox_0870", 0, 0.30),
    ("librivox_0880_complete", "librivox_0880", 0, None),
    ("librivox_0890_complete", "librivox_0890", 0, None),
    ("librivox_0920_cut_55pct", "librivox_0920", 0, 0.55),
    ("librivox_0930_complete", "librivox_0930", 0, None),
    ("long_question_complete", "en_long_question", 0, None),
    ("long_question_cut_60pct", "en_long_question", 0, 0.60),
    ("pause_in_sentence_at_pause", "en_pause_in_sentence", 0, "pause"),
    ("pause_in_sentence_complete", "en_pause_in_sentence", 0, None),
    ("two_utterances_second", "en_two_utterances", 1, None),
    ("two_utterances_whole_file", "en_two_utterances", 0, "whole"),
    ("phone_vm_sorry_complete", "phone_vm_sorry_16k", 0, None),
    ("phone_cannot_complete_complete", "phone_cannot_complete_as_dialed_16k", 0, None),
    ("phone_pls_hold_cut_50pct", "phone_pls_hold_while_try_16k", 0, 0.50),
    ("phone_conf_noempty_complete", "phone_conf_noempty_16k", 0, None),
]

LEVELS = [
    ("disable", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
    ("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
    ("extended", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
    ("all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
]


def read_wav_int16(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            sys.exit(f"{path}: expected mono 16-bit PCM")
        if w.getframerate() != SAMPLE_RATE:
            sys.exit(f"{path}: expected {SAMPLE_RATE} Hz, got {w.getframerate()}")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def fnv1a64(data):
    """FNV-1a, 64 bit, as 16 hex digits (the Rust tests compute the same)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def frame_of(ms):
    """Index of the 20 ms frame holding the instant `ms`."""
    return int(ms // FRAME_MS)


def span_for(meta, n_samples, utterance, cut):
    """The span Pipecat would analyse for this case, on the 20 ms frame grid.

    Returns (start_sample, end_sample, confirm_frame). Pipecat stamps the first
    frame its VAD calls speech, which is VAD_START_MS after the speech starts, and
    keeps the frames from that stamp minus pre_speech_ms minus the VAD start delay;
    it analyses when the VAD stops, VAD_STOP_MS after the speech ends. confirm_frame
    is -1 when no start is marked (the whole file is one segment).
    """
    if cut == "whole":
        return 0, n_samples, -1
    utt = meta["utterances"][utterance]
    confirm = frame_of(utt["start_ms"] + VAD_START_MS)
    start = (confirm - (PRE_SPEECH_MS + VAD_START_MS) // FRAME_MS) * FRAME
    if cut is None:
        stop_ms = utt["end_ms"] + VAD_STOP_MS
    elif cut == "pause":
        # The first pause inside the sentence, as the VAD would stop on it.
        stop_ms = meta["pauses"][0]["start_ms"] + VAD_STOP_MS
    else:
        stop_ms = utt["start_ms"] + cut * (utt["end_ms"] - utt["start_ms"])
    end = (frame_of(stop_ms) + 1) * FRAME
    return max(0, start), min(n_samples, end), confirm


def previous_turn_end(meta, utterance):
    """Frames pushed when the previous utterance's turn ended (its VAD stop), or -1."""
    if utterance == 0:
        return -1
    prev = meta["utterances"][utterance - 1]
    return frame_of(prev["end_ms"] + VAD_STOP_MS) + 1


def pipecat_window(segment_int16):
    """LocalSmartTurnAnalyzerV3: float32 / 32768, last 8 s or zero-pad at the start."""
    audio = segment_int16.astype(np.float32) / 32768.0
    if len(audio) > WINDOW:
        audio = audio[-WINDOW:]
    elif len(audio) < WINDOW:
        audio = np.pad(audio, (WINDOW - len(audio), 0), mode="constant", constant_values=0)
    return audio


def session(model, level):
    so = ort.SessionOptions()
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1
    so.intra_op_num_threads = 1
    so.graph_optimization_level = level
    return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--reference-module-dir", required=True)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()

    sys.path.insert(0, args.reference_module_dir)
    from _whisper_features import compute_whisper_log_mel_features  # noqa: E402

    model = args.model or os.path.join(args.repo, "models", "smart-turn-v3.2-cpu.onnx")
    out_dir = os.path.join(args.repo, "crates", "brisvox-models", "tests", "golden", "smart_turn")
    os.makedirs(out_dir, exist_ok=True)
    sessions = {name: session(model, level) for name, level in LEVELS}

    manifest = [
        "# Smart Turn v3.2 goldens, written by scripts/goldens/make-smart-turn-goldens.sh",
        f"# onnxruntime {ort.__version__}, numpy {np.__version__}, features: pipecat-ai 1.14.0 "
        "_whisper_features.py; session: ENABLE_ALL, sequential, 1 intra-op, 1 inter-op thread",
        "# name\tfixture\tstart_sample\tend_sample\tconfirm_frame\tprevious_turn_end_frames\tinput_fnv1a64\tprobability\tcomplete\tfeatures",
    ]
    levels = ["# name\t" + "\t".join(name for name, _ in LEVELS)]
    for name, fixture, utterance, cut in CASES:
        wav = os.path.join(args.repo, "fixtures", fixture + ".wav")
        with open(os.path.join(args.repo, "fixtures", fixture + ".json")) as f:
            meta = json.load(f)
        pcm = read_wav_int16(wav)
        start, end, confirm = span_for(meta, len(pcm), utterance, cut)
        prev_end = previous_turn_end(meta, utterance) if cut != "whole" else -1
        segment = pcm[start:end]
        digest = fnv1a64(segment.astype("<i2").tobytes())
        features = compute_whisper_log_mel_features(pipecat_window(segment), do_normalize=True)
        assert features.shape == (80, 800) and features.dtype == np.float32
        batch = np.expand_dims(features, 0)
        probs = {
            lname: float(s.run(None, {"input_features": batch})[0][0].item())
            for lname, s in sessions.items()
        }
        p = probs["all"]
        feat_file = name + ".features.f32"
        features.astype("<f4").tofile(os.path.join(out_dir, feat_file))
        manifest.append(
            f"{name}\t{fixture}\t{start}\t{end}\t{confirm}\t{prev_end}\t{digest}\t{p!r}\t{int(p > 0.5)}\t{feat_file}"
        )
        levels.append(name + "\t" + "\t".join(repr(probs[n]) for n, _ in LEVELS))
        print(
            f"{name:34s} {fixture:38s} {(end - start) / SAMPLE_RATE:6.2f} s  p={p:.6f}  "
            + " ".join(f"{n}={v:.4f}" for n, v in probs.items())
        )
    with open(os.path.join(out_dir, "manifest.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    with open(os.path.join(out_dir, "optimisation-levels.tsv"), "w") as f:
        f.write("\n".join(levels) + "\n")


if __name__ == "__main__":
    main()
