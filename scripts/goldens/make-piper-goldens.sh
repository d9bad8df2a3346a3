#!/usr/bin/env bash
# Golden Piper phoneme-id sequences for the local TTS tests (see piper_ids_goldens.py).
# piper-phonemize is used only here, in a throwaway venv: brisvox itself runs the
# Debian espeak-ng program for phonemes and maps them to ids in Rust.
# Usage: scripts/goldens/make-piper-goldens.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${PIPER_GOLDENS_VENV:-/tmp/brisvox-piper-goldens-venv}"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "piper-phonemize==1.1.0"
fi
exec "$venv/bin/python" "$here/scripts/goldens/piper_ids_goldens.py" \
  "$here/crates/brisvox-models/tests/golden/piper/ids.json"
