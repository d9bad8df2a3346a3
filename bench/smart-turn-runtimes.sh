#!/usr/bin/env bash
# Smart Turn v3.2 (int8) under other runtimes than ONNX Runtime's CPU EP, against
# the goldens (issue #20 item 1): bench/smart_turn_runtimes.py in two venvs, into
# one results file.
#
# 1. target/st-runtimes-venv: onnxruntime 1.32.0 (what brisvox runs), openvino,
#    the OpenVINO EP plugin for ONNX Runtime's EP ABI, onnx (for the graph
#    rewrite); every configuration in one process, interleaved round by round.
# 2. target/st-runtimes-ortov-venv: onnxruntime-openvino (ONNX Runtime built with
#    the OpenVINO EP; it installs its own `onnxruntime` module, so it cannot share
#    a process with 1.32): its CPU EP, the same rewrite and its OpenVINO EP,
#    interleaved in a second process.
#
# The venvs are made once (package registries through pip); the run itself is
# offline. Pin the run yourself (e.g. `taskset -c 0`).
#
# Usage: bench/smart-turn-runtimes.sh OUT.md [ROUNDS]
set -euo pipefail
out="$1"; rounds="${2:-30}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="$here/models/smart-turn-v3.2-cpu.onnx"
[ -f "$model" ] || { echo "smart-turn-runtimes: $model is missing: run scripts/fetch-models.sh" >&2; exit 1; }

venv() { # DIR PACKAGES...
  local dir="$1"; shift
  if [ ! -x "$dir/bin/python" ]; then
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet "$@"
  fi
}
main_venv="$here/target/st-runtimes-venv"
ortov_venv="$here/target/st-runtimes-ortov-venv"
venv "$main_venv" "onnxruntime==1.32.0" "numpy==2.4.6" "onnx==1.23.2" "openvino==2026.4.1" "onnxruntime-ep-openvino==1.8.1"
venv "$ortov_venv" "onnxruntime-openvino==1.24.1" "numpy==2.4.6" "onnx==1.23.2"

script="bench/smart_turn_runtimes.py --model models/smart-turn-v3.2-cpu.onnx --rounds $rounds"
main_args="--only ort,ort-fsoftmax,ort-gelu,ort-batch4,ort-400-frames,ov-f32,ov-bf16,ort-ovep --profile-runs 32"
ortov_args="--only ort,ort-fsoftmax,ort-ovep-full"
cd "$here"
{
  echo "# Smart Turn v3.2: CPU per analysis under other runtimes (issue #20 item 1)"
  echo
  "$here/scripts/bench-header.sh" "Python (no Rust build involved)" "bench/smart-turn-runtimes.sh $*"
  echo "- affinity of this run: CPUs $(taskset -pc $$ | cut -d: -f2 | tr -d ' '); scheduling policy: $(chrt -p $$ | head -1 | cut -d: -f2 | tr -s ' ')"
  echo
  echo "## 1. onnxruntime 1.32.0 (brisvox's runtime) beside OpenVINO, one process"
  echo
  echo "- command: \`$main_venv/bin/python $script $main_args\`"
  echo
  # shellcheck disable=SC2086
  "$main_venv/bin/python" $script $main_args
  echo
  echo "## 2. onnxruntime-openvino (ONNX Runtime with the OpenVINO EP built in), one process"
  echo
  echo "- command: \`$ortov_venv/bin/python $script $ortov_args\`"
  echo "- the \`ort\` row here is that wheel's own CPU EP, not 1.32; the goldens are still 1.32's"
  echo
  # shellcheck disable=SC2086
  "$ortov_venv/bin/python" $script $ortov_args
  echo
  echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
echo "wrote $out"
