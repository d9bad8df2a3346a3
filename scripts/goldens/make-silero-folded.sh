#!/usr/bin/env bash
# Python twin of brisvox's own load-time rewrite (crates/brisvox-models/src/vad/fold.rs):
# write target/silero_vad_folded.onnx, Silero VAD with the batch dimension of its
# convolutions folded into GEMMs, check it against the Silero goldens and time it
# (see silero_fold_batch.py). brisvox does not read this file. Compare it in Rust:
#   target/release/brisvox-bench model-cpu --compare-model target/silero_vad_folded.onnx
#
# Creates (once) a venv under target/silero-fold-venv with onnx, onnxruntime, numpy.
# Usage: scripts/goldens/make-silero-folded.sh [--layers stft,enc0,...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$here/target/silero-fold-venv"
model="${BRISVOX_MODELS_DIR:-$here/models}/silero_vad.onnx"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "onnx==1.23.2" "onnxruntime==1.32.0" "numpy==2.4.6"
fi
[ -f "$model" ] || { echo "make-silero-folded: $model missing; run scripts/fetch-models.sh" >&2; exit 1; }

exec "$venv/bin/python" "$here/scripts/goldens/silero_fold_batch.py" \
  --repo "$here" --model "$model" --out "$here/target/silero_vad_folded.onnx" "$@"
