#!/usr/bin/env bash
# Regenerate the Smart Turn v3.2 goldens in crates/brisvox-models/tests/golden/smart_turn/.
#
# The reference is what Pipecat runs: the numpy Whisper feature extractor vendored in
# the pinned pipecat-ai wheel and onnxruntime with ENABLE_ALL, sequential execution,
# one intra-op and one inter-op thread. Nothing is imported from pipecat but that one
# module (pipecat's own imports need loguru, soxr, ...): the wheel is downloaded,
# `_whisper_features.py` is extracted next to the venv and the script imports it.
#
# Creates (once) a venv under target/golden-venv with onnxruntime and numpy from PyPI.
# Needs: python3 with venv + pip, the models fetched (scripts/fetch-models.sh).
#
# Usage: scripts/goldens/make-smart-turn-goldens.sh [extra args for smart_turn_goldens.py]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$here/target/golden-venv"
ref="$venv/pipecat-ref"
pipecat_spec="pipecat-ai==1.14.0"
features_inner="pipecat/audio/turn/smart_turn/_whisper_features.py"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "onnxruntime==1.32.0" "numpy==2.4.6"
fi

if [ ! -f "$ref/_whisper_features.py" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$venv/bin/python" -m pip download --quiet --no-deps --only-binary=:all: "$pipecat_spec" -d "$tmp"
  mkdir -p "$ref"
  "$venv/bin/python" - "$tmp"/pipecat_ai-*.whl "$features_inner" "$ref/_whisper_features.py" <<'PY'
import shutil, sys, zipfile
wheel, inner, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(inner) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
fi

exec "$venv/bin/python" "$here/scripts/goldens/smart_turn_goldens.py" \
  --repo "$here" --reference-module-dir "$ref" "$@"
