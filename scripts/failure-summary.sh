#!/usr/bin/env bash
# Prints why a phase of scripts/test.sh failed, for the end of a CI log: the
# names of the failing tests and each one's output (the `failures:` sections
# libtest prints, under the test binary that printed them) and cargo's error
# lines; for a phase that is not a test run (fmt, clippy, setup, browser), the
# last lines of its output.
# Usage: scripts/failure-summary.sh PHASE LOGFILE
# Reads the log only; prints at most SUMMARY_MAX_LINES (default 400) lines of
# failure output, and says so when it cut.
set -euo pipefail
phase="$1"
log="$2"
max="${SUMMARY_MAX_LINES:-400}"

echo
echo "==================== FAILURE SUMMARY: phase '$phase' ===================="
if [ ! -s "$log" ]; then
  echo "(no output was recorded for this phase)"
  exit 0
fi

# Test names first, so the cause is readable at a glance.
# Each as `<test binary's source>: <test name>`, from cargo's "Running
# tests/x.rs (target/debug/deps/x-<hash>)" line (unit tests also name their
# crate's binary: "unittests src/lib.rs [brisvox_models]").
failed="$(awk '
  /^ *Running / {
    bin = $0; sub(/^ *Running /, "", bin)
    exe = bin; sub(/^.*\(/, "", exe); sub(/\)$/, "", exe); sub(/^.*\//, "", exe); sub(/-[0-9a-f]+$/, "", exe)
    sub(/ \(.*$/, "", bin)
    if (bin ~ /^unittests /) bin = bin " [" exe "]"
  }
  /^ *Doc-tests / { bin = $0; sub(/^ */, "", bin) }
  /^test .+ \.\.\. FAILED$/ { name = $0; sub(/^test /, "", name); sub(/ \.\.\. FAILED$/, "", name); print bin ": " name }
' "$log")"
if [ -n "$failed" ]; then
  echo "failing tests:"
  sed 's/^/    /' <<<"$failed"
  echo
  echo "their output (libtest's failures: sections, per test binary):"
  awk '
    /^ *Running / || /^ *Doc-tests / { bin = $0; sub(/^ +/, "", bin) }
    /^failures:$/ && !inside { inside = 1; print "--- " bin }
    inside { print }
    /^test result: FAILED/ { inside = 0 }
  ' "$log" | head -n "$max" >"$log.summary"
  cat "$log.summary"
  lines="$(awk '/^failures:$/,/^test result: FAILED/' "$log" | wc -l)"
  if [ "$lines" -gt "$max" ]; then
    echo "... (cut at $max lines; the full output is above in this log and in $log)"
  fi
  rm -f "$log.summary"
  echo
fi

# cargo's own errors: a test binary that crashed (signal), a build error, the
# "to rerun pass ..." hints.
errors="$(grep -E '^(error(\[E[0-9]+\])?:|  --> |    `-p |warning: build failed)' "$log" || true)"
if [ -n "$errors" ]; then
  echo "cargo errors:"
  head -n 60 <<<"$errors" | sed 's/^/    /'
  echo
fi

if [ -z "$failed" ]; then
  echo "last 60 lines of the phase's output:"
  tail -n 60 "$log"
fi
echo "==================== END OF FAILURE SUMMARY ===================="
