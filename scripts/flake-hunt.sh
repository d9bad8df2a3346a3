#!/usr/bin/env bash
# The flake hunt: runs the whole test suite (what `cargo test --workspace
# --locked` runs, with CI=true) RUNS times with one core kept busy by a CPU
# burner pinned to it (taskset), records every failing test by name, writes a
# results file, and exits non-zero if any test failed in any run.
#
# Usage: scripts/flake-hunt.sh [RUNS]            (default RUNS=10)
#   OUT=bench/results/flake-hunt.md   where the results go
#   BURN_CORE=<n>                     the core the burner is pinned to
#                                     (default: the last one); BURN_CORE=none
#                                     runs without a burner
#   BINARY_TIMEOUT_S=900              a test binary running longer fails
#   MAX_SECONDS=<n>                   stop starting runs after this long (the
#                                     results file says how many ran)
#   DOC_TESTS=0                       skip the doc tests
#   ONLY=<regex>                      only the test binaries whose target name
#                                     matches (to hunt in one corner; the
#                                     results file says so)
#
# How: the test binaries are built once (`cargo test --no-run`), then each
# run executes every binary in turn, as cargo test does (same working
# directory, CARGO_MANIFEST_DIR and CARGO_PKG_NAME, the libtest harness with
# its default threads), and the doc tests run once after the runs (they
# compile per run, and only check examples). libtest rather than nextest:
# CI runs libtest, where the tests of one binary share a process (statics, the
# loaded models, pools) and run on parallel threads; nextest's process per
# test would hide exactly the races a flake hunt is after. No retries: a
# retried failure is still a flake, and every one is recorded.
#
# Logs of every binary of every run are kept in target/flake-hunt/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

runs="${1:-10}"
out="${OUT:-bench/results/flake-hunt.md}"
timeout_s="${BINARY_TIMEOUT_S:-900}"
max_seconds="${MAX_SECONDS:-0}"
burn_core="${BURN_CORE:-$(($(nproc) - 1))}"
logs="${CARGO_TARGET_DIR:-target}/flake-hunt"
export CI=true
rm -rf "$logs"
mkdir -p "$logs" "$(dirname "$out")"

burner_pid=""
stop_burner() {
  if [ -n "$burner_pid" ]; then
    kill "$burner_pid" 2>/dev/null || true
    wait "$burner_pid" 2>/dev/null || true
    burner_pid=""
  fi
}
trap stop_burner EXIT

echo "flake-hunt: building the test binaries once" >&2
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics 2>"$logs/build.err" \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null and .profile.test == true)
           | [.executable, (.manifest_path | sub("/Cargo.toml$"; "")), .target.name] | @tsv' \
  | sort -u | awk -F'\t' -v only="${ONLY:-}" 'only == "" || $3 ~ only' >"$logs/binaries.tsv" \
  || { cat "$logs/build.err" >&2; exit 1; }
# (executable, package directory, target); the package name is the directory's.
nbin="$(wc -l <"$logs/binaries.tsv")"
[ "$nbin" -gt 0 ] || { echo "flake-hunt: no test binaries found" >&2; exit 1; }
echo "flake-hunt: $nbin test binaries" >&2

if [ "$burn_core" != none ]; then
  taskset -c "$burn_core" bash -c 'while :; do :; done' &
  burner_pid=$!
  echo "flake-hunt: burner pid $burner_pid pinned to core $burn_core" >&2
fi

failures="$logs/failures.tsv" # run, binary, test
: >"$failures"
summary="$logs/runs.tsv" # run, seconds, passed, failed, ignored, binaries failed, 1-min load at its end
: >"$summary"
hunt_start=$SECONDS
load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)"
# The header (date and load average) as they are when the runs start.
header="$(scripts/bench-header.sh "dev (the test profile, unoptimised + debuginfo)" "scripts/flake-hunt.sh $runs")"
done_runs=0
for run in $(seq 1 "$runs"); do
  if [ "$max_seconds" -gt 0 ] && [ $((SECONDS - hunt_start)) -ge "$max_seconds" ]; then
    echo "flake-hunt: MAX_SECONDS reached, not starting run $run" >&2
    break
  fi
  run_start=$SECONDS
  passed=0 failed=0 ignored=0 bad_bins=0
  while IFS=$'\t' read -r exe dir target; do
    pkg="$(basename "$dir")"
    name="$(basename "$exe")"
    log="$logs/run$run-$name.log"
    set +e
    (cd "$dir" && CARGO_MANIFEST_DIR="$dir" CARGO_PKG_NAME="$pkg" \
      timeout -k 10 "$timeout_s" "$exe") </dev/null >"$log" 2>&1
    rc=$?
    set -e
    read -r p f i < <(awk '/^test result:/ { p += $4; f += $6; i += $8 } END { print p+0, f+0, i+0 }' "$log")
    passed=$((passed + p)) failed=$((failed + f)) ignored=$((ignored + i))
    if [ "$rc" -ne 0 ]; then
      bad_bins=$((bad_bins + 1))
      tests="$(sed -nE 's/^test (.+) \.\.\. FAILED$/\1/p' "$log")"
      if [ -z "$tests" ]; then
        if [ "$rc" -eq 124 ]; then tests="(timed out after ${timeout_s}s)"; else tests="(binary exited $rc with no failed test: crash?)"; fi
        failed=$((failed + 1))
      fi
      while IFS= read -r t; do
        printf '%s\t%s\t%s\t%s\n' "$run" "$pkg/$target" "$t" "$log" >>"$failures"
        echo "flake-hunt: run $run: FAILED $pkg/$target: $t" >&2
      done <<<"$tests"
    fi
  done <"$logs/binaries.tsv"
  secs=$((SECONDS - run_start))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$secs" "$passed" "$failed" "$ignored" "$bad_bins" "$(cut -d' ' -f1 /proc/loadavg)" >>"$summary"
  echo "flake-hunt: run $run: $passed passed, $failed failed, $ignored ignored in ${secs}s" >&2
  done_runs=$run
done

doc_rc=0
doc_counts="skipped"
if [ "${DOC_TESTS:-1}" != 0 ]; then
  echo "flake-hunt: doc tests (once)" >&2
  set +e
  cargo test --workspace --locked --doc >"$logs/doctests.log" 2>&1
  doc_rc=$?
  set -e
  doc_counts="$(awk '/^test result:/ { p += $4; f += $6 } END { print p+0 " passed, " f+0 " failed" }' "$logs/doctests.log")"
fi
stop_burner

nfail="$(wc -l <"$failures")"
{
  echo "# Flake hunt: the whole test suite, $done_runs runs under load"
  echo
  echo "$header"
  if [ "$burn_core" = none ]; then
    echo "- load: no burner (BURN_CORE=none); only what else ran on the machine"
  else
    echo "- load: a busy-loop burner pinned to core ${burn_core} (taskset) for the whole hunt, beside whatever else ran on the machine"
  fi
  echo "- load average (1, 5, 15 min) when the runs started: $load_at_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- suite: the $nbin test binaries of \`cargo test --workspace --locked\` with CI=true (models present)${ONLY:+ whose target matches \`$ONLY\`}, each run in turn as cargo runs them; doc tests once at the end ($doc_counts)"
  echo
  echo "| run | seconds | passed | failed | ignored | 1-min load average at its end |"
  echo "|---|---|---|---|---|---|"
  while IFS=$'\t' read -r r s p f i _ l; do
    echo "| $r | $s | $p | $f | $i | $l |"
  done <"$summary"
  echo
  if [ "$nfail" -eq 0 ] && [ "$doc_rc" -eq 0 ]; then
    echo "**No failure in $done_runs runs** (of $runs asked)."
  else
    echo "**$nfail failing test results** in $done_runs runs (doc tests exit $doc_rc):"
    echo
    echo "| run | binary | test |"
    echo "|---|---|---|"
    while IFS=$'\t' read -r r b t _; do echo "| $r | $b | \`$t\` |"; done <"$failures"
    echo
    echo "## Their output"
    while IFS=$'\t' read -r r b t log; do
      echo
      echo "### run $r, $b: $t"
      echo
      echo '```'
      awk '/^failures:$/ { inside = 1 } inside { print } /^test result: FAILED/ { inside = 0 }' "$log" | head -n 60
      tail -n 5 "$log"
      echo '```'
    done < <(sort -u -t$'\t' -k1,2 "$failures")
  fi
} >"$out"
echo "flake-hunt: results in $out" >&2
[ "$nfail" -eq 0 ] && [ "$doc_rc" -eq 0 ]
