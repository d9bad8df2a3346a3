#!/usr/bin/env bash
# Builds the Pipecat peer's virtualenv in bench/pipecat_baseline/.venv (git-ignored).
# Usage: bench/pipecat_baseline/install.sh   (PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  "$python" -m venv "$here/.venv"
fi
"$here/.venv/bin/pip" install --quiet --upgrade pip
"$here/.venv/bin/pip" install --quiet 'pipecat-ai[silero,websocket]==1.14.0' 'uvicorn[standard]'
"$here/.venv/bin/python" -c 'import importlib.metadata as m; print("pipecat-ai", m.version("pipecat-ai"))'
