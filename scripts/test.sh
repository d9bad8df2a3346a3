#!/usr/bin/env bash
# The whole test suite: the README's test command, and what .ci/run runs.
#
# Installs the Debian packages the tests need (espeak-ng; chromium, nodejs,
# npm for the browser test) and fetches the models and playwright-core if they
# are missing (all idempotent), then checks formatting, lints, runs every test
# of the workspace and the browser test of the demo page (tests/browser/).
# Tests that need the models fail (rather than skip) when CI is set and the
# models are missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

phase_start=$SECONDS
phase() {
  local now=$SECONDS
  if [ -n "${phase_name:-}" ]; then
    printf 'test.sh: phase %-8s %4ds\n' "$phase_name" "$((now - phase_start))"
  fi
  phase_name="$1"
  phase_start=$now
  [ -n "$phase_name" ] && echo "test.sh: --- $phase_name ---"
  return 0
}

phase setup
scripts/setup-system.sh
scripts/fetch-models.sh
tests/browser/setup.sh

phase fmt
cargo fmt --all --check

phase clippy
cargo clippy --workspace --all-targets --locked -- -D warnings

phase test
cargo test --workspace --locked

phase browser
# The brisvox binary cargo test has just built (its integration tests run it):
# `cargo build -p brisvox-server` would rebuild crates with other features.
BRISVOX_BIN="${CARGO_TARGET_DIR:-target}/debug/brisvox" tests/browser/run.sh

phase ""
echo "test.sh: all phases passed in ${SECONDS}s"
