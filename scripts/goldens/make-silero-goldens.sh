#!/usr/bin/env bash
# Regenerate the Silero VAD goldens in crates/brisvox-models/tests/golden/silero/.
#
# Reference: Python onnxruntime 1.32.0 on models/silero_vad.onnx, driven window by
# window like the silero-vad package's OnnxWrapper (see silero_goldens.py).
# Creates (once) a venv under target/golden-venv with onnxruntime and numpy from PyPI.
# Needs: python3 with venv + pip, the models fetched (scripts/fetch-models.sh).
#
# Usage: scripts/goldens/make-silero-goldens.sh [WAV ...]   (default: the fixtures below)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$here/target/golden-venv"
model="${BRISVOX_MODELS_DIR:-$here/models}/silero_vad.onnx"
out="$here/crates/brisvox-models/tests/golden/silero"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "onnxruntime==1.32.0" "numpy==2.4.6"
fi
[ -f "$model" ] || { echo "make-silero-goldens: $model missing; run scripts/fetch-models.sh" >&2; exit 1; }

if [ "$#" -eq 0 ]; then
  set -- \
    "$here/fixtures/en_two_utterances.wav" \
    "$here/fixtures/en_pause_in_sentence.wav" \
    "$here/fixtures/en_long_question.wav" \
    "$here/fixtures/librivox_0870.wav" \
    "$here/fixtures/librivox_0880.wav" \
    "$here/fixtures/librivox_0930.wav" \
    "$here/fixtures/phone_vm_sorry_16k.wav" \
    "$here/fixtures/phone_vm_sorry_8k.wav" \
    "$here/fixtures/phone_conf_noempty_8k.wav"
fi

exec "$venv/bin/python" "$here/scripts/goldens/silero_goldens.py" --repo "$here" --model "$model" --out "$out" "$@"
