#!/usr/bin/env bash
# brisvox-bench model-cpu, then Smart Turn in Python onnxruntime under session options
# (bench/smart_turn_session_options.py), back to back on the same machine, into one
# results file (issue #20). The Python side needs onnxruntime==1.32.0 and numpy==2.4.6:
# the venv of scripts/goldens/make-smart-turn-goldens.sh (target/golden-venv).
#
# Usage: bench/model-cpu-beside-python.sh BENCH_BIN OUT.md
set -euo pipefail
bench="$1"; out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$here/target/golden-venv/bin/python}"
loads="load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" model-cpu --out "$out"
loads="$loads; after the Rust part: $(cut -d' ' -f1-3 /proc/loadavg)"
py="$("$python" "$here/bench/smart_turn_session_options.py" --model "$here/models/smart-turn-v3.2-cpu.onnx" --rounds 5)"
loads="$loads; after the Python part: $(cut -d' ' -f1-3 /proc/loadavg)"
{
  echo
  echo "## Smart Turn v3.2 in Python onnxruntime, same machine, right after the Rust part"
  echo
  echo "- command: \`$python bench/smart_turn_session_options.py --model models/smart-turn-v3.2-cpu.onnx --rounds 5\`"
  echo "- $loads"
  echo
  echo "$py"
} >> "$out"
