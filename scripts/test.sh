#!/usr/bin/env bash
# The whole test suite: the README's test command, and what .ci/run runs.
#
# Installs the Debian packages the tests need (espeak-ng; chromium, nodejs,
# npm for the browser test) and fetches the models (Whisper tiny.en included,
# for the local STT's real-model tests), playwright-core and the Python SDK's
# pinned test packages if they are missing (all idempotent), then checks
# formatting, module import cycles (scripts/check-module-cycles.py, under a
# second), run.sh's decisions (tests/scripts/run_sh_decisions.sh), lints, runs every test of the workspace (the fuzz corpus replay
# among them), the Python SDK's tests (sdk/python/tests), the browser test of
# the demo page (tests/browser/), the short soak (scripts/soak.sh --check) and
# the validation of the deployment files (scripts/validate-deploy.sh).
# Tests that need the models fail (rather than skip) when CI is set and the
# models are missing.
#
# Each phase's output is also kept in $TEST_LOG_DIR (default target/test-logs);
# when a phase fails, the log ends with a summary of why
# (scripts/failure-summary.sh: the failing tests' names and output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log_dir="${TEST_LOG_DIR:-${CARGO_TARGET_DIR:-target}/test-logs}"
mkdir -p "$log_dir"
rm -f "$log_dir"/*.log

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

# Runs a phase's commands with their output (stdout and stderr) shown and kept
# in the phase's log.
logged() {
  "$@" 2>&1 | tee -a "$log_dir/$phase_name.log"
}

on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "${phase_name:-}" ]; then
    echo "test.sh: phase $phase_name FAILED (exit $rc) after $((SECONDS - phase_start))s"
    scripts/failure-summary.sh "$phase_name" "$log_dir/$phase_name.log" || true
  fi
}
trap on_exit EXIT

# Under CI nothing is built twice, so incremental state (a third of the target
# dir, ~8 GB) is only disk: without it a cold run needs far less room.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi

phase setup
logged scripts/setup-system.sh
logged scripts/fetch-models.sh --whisper
logged tests/browser/setup.sh
# The Python SDK's test dependencies, pinned (websockets, pytest, jsonschema).
logged python3 -m pip install --quiet --disable-pip-version-check -r sdk/python/requirements-test.txt

phase fmt
logged cargo fmt --all --check

phase cycles
# No module of the engine or the server imports a module that imports it back.
logged scripts/check-module-cycles.py

phase scripts
# What scripts/run.sh decides on a new user's machine (stand-ins for cargo,
# pip and the package managers; under a minute, mostly hashing the models).
logged tests/scripts/run_sh_decisions.sh

phase clippy
logged cargo clippy --workspace --all-targets --locked -- -D warnings

phase test
# --no-fail-fast: a refused submission lists every failing test, not the first.
logged cargo test --workspace --locked --no-fail-fast

phase python
# The Python SDK (sdk/python): protocol doc and schema, the agent server,
# and the example agents (examples/agents) against the brisvox binary cargo
# test has just built (about 15 s).
BRISVOX_BIN="${CARGO_TARGET_DIR:-target}/debug/brisvox" logged python3 -m pytest -q sdk/python/tests

phase browser
# The brisvox binary cargo test has just built (its integration tests run it):
# `cargo build -p brisvox-server` would rebuild crates with other features.
BRISVOX_BIN="${CARGO_TARGET_DIR:-target}/debug/brisvox" logged tests/browser/run.sh

phase soak
# The short soak (scripts/soak.sh --check, ~2.5 min): 4 calls at once over
# /twilio with the models for 2 minutes, on the binaries cargo test built;
# fails on a lost turn or a failed call among the admitted ones, a minute
# after warm-up with no answered turn, or fds or threads that grew.
logged scripts/soak.sh --check --bindir "${CARGO_TARGET_DIR:-target}/debug"

phase deploy
# Renders and validates deploy/ (schemas, consistency, linters) with the
# brisvox binary cargo test built; no cluster or container engine needed.
logged scripts/validate-deploy.sh "${CARGO_TARGET_DIR:-target}/debug/brisvox"

phase ""
echo "test.sh: all phases passed in ${SECONDS}s"
