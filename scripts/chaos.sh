#!/usr/bin/env bash
# Chaos at load (#19 item 4): `brisvox serve` with the mock providers and the
# real models (bench/agents/mock-models.toml) over /call at PERCENT % of a
# capacity given on the command line, once without faults and once with a
# seeded share of calls faulted ([chaos] of docs/AGENT_FILE.md: the mock
# LLM fails each picked call's first request, and `apology` is set), same
# binaries, each run against a fresh server, in the order clean, faulted,
# clean (--clean-runs 1: clean, faulted).
#   Each run: `brisvox-bench capacity --steps LOAD --resolution 1000` (one
#   step, never bisected when it misses the SLO; --rounds calls per slot, Poisson arrivals over --fixtures); the server's idle tasks
#   (/metrics brisvox_runtime_alive_tasks), open fds and threads are read
#   once it is ready and again once the run's calls are over; the picked
#   calls are read from the server's log (`chaos: this call's mocks fail`).
#   OUT.md (and OUT.json) then checks, side by side:
#   - every picked call heard the apology (its bot_text) and ended cleanly
#     (`end` client_end, no error), and no other call heard it;
#   - no call failed that was not picked, in any run;
#   - the p50 / p95 V2V of the calls not picked, beside each clean run's:
#     within the noise when it lies inside the clean runs' range widened by
#     their difference, by at least 10 ms (needs two clean runs; with one,
#     the change is shown);
#   - the growth of tasks, fds and threads from idle to idle in the faulted
#     run is no larger than in the clean runs.
#   Exit status 1 when a check fails.
#
# Usage: scripts/chaos.sh --capacity N [--percent P] [--share F] [--seed N]
#                         [--fault KIND] [--items N] [--rounds N]
#                         [--fixtures LIST] [--arrival-seed N]
#                         [--clean-runs 1|2] [--bindir DIR] [--out PATH]
#   defaults: 80 %, share 0.5, seed 7, fault fail_after with 2 items (a
#   server error after two tokens; any `fault` of [chaos.llm]), 2 rounds,
#   fixtures/librivox_0870.wav (the fixture of the /call capacity with
#   Poisson arrivals), arrival seed 1, 2 clean runs, target/release, out
#   bench/results/chaos-<UTC date> (OUT.md, OUT.json, OUT.runs/).
# The server runs on core 0, the generator on core 1 (taskset); loopback
# only; every server is stopped when its run ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bindir="${CARGO_TARGET_DIR:-target}/release"
out="bench/results/chaos-$(date -u +%Y-%m-%d)"
capacity=""
percent=80
share=0.5
seed=7
fault=fail_after
items=2
rounds=2
fixtures=fixtures/librivox_0870.wav
arrival_seed=1
clean_runs=2
while [ $# -gt 0 ]; do
  case "$1" in
    --capacity) capacity="$2"; shift 2 ;;
    --percent) percent="$2"; shift 2 ;;
    --share) share="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --fault) fault="$2"; shift 2 ;;
    --items) items="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --fixtures) fixtures="$2"; shift 2 ;;
    --arrival-seed) arrival_seed="$2"; shift 2 ;;
    --clean-runs) clean_runs="$2"; shift 2 ;;
    --bindir) bindir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "chaos: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$capacity" ] || { echo "chaos: --capacity N is required (calls at once within the SLO)" >&2; exit 2; }
case "$clean_runs" in 1|2) ;; *) echo "chaos: --clean-runs must be 1 or 2" >&2; exit 2 ;; esac
for b in brisvox brisvox-bench; do
  [ -x "$bindir/$b" ] || { echo "chaos: $bindir/$b missing: cargo build --release -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
load="$(python3 -c 'import sys; print(max(1, int(int(sys.argv[1]) * float(sys.argv[2]) / 100 + 0.5)))' "$capacity" "$percent")"
apology="Sorry, I lost my train of thought. Could you say that again?"
dir="$out.runs"
mkdir -p "$dir"
cmdline="scripts/chaos.sh --capacity $capacity --percent $percent --share $share --seed $seed --fault $fault --items $items --rounds $rounds --fixtures $fixtures --arrival-seed $arrival_seed --clean-runs $clean_runs --bindir $bindir --out $out"

# The agents: mock-models.toml with the apology, and with [chaos] appended.
grep -q '^apology' bench/agents/mock-models.toml && { echo "chaos: mock-models.toml already sets apology" >&2; exit 1; }
{ echo "apology = \"$apology\""; cat bench/agents/mock-models.toml; } >"$dir/agent-clean.toml"
{ cat "$dir/agent-clean.toml"
  printf '\n[chaos]\nshare = %s\nseed = %s\n[chaos.llm]\nfault = "%s"\nitems = %s\n' "$share" "$seed" "$fault" "$items"
} >"$dir/agent-faulted.toml"

# shellcheck source=lib/bench-server.sh
. scripts/lib/bench-server.sh
trap bench_server_stop EXIT

# The server's idle figures as JSON: tasks, fds, threads, each the least of
# 5 readings 200 ms apart (a reading's own /metrics request, a socket still
# closing or a blocking-pool thread about to retire would count otherwise);
# fds and threads are read before the request.
idle_sample() {
  local tasks=() fds=() threads=() i
  for i in 1 2 3 4 5; do
    fds+=("$(find "/proc/$BENCH_SERVER_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)")
    threads+=("$(awk '/^Threads:/{print $2}' "/proc/$BENCH_SERVER_PID/status")")
    tasks+=("$(curl -sf "http://127.0.0.1:$BENCH_SERVER_PORT/metrics" | awk '/^brisvox_runtime_alive_tasks /{print $2}')")
    [ "$i" = 5 ] || sleep 0.2
  done
  least() { printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | head -1; }
  echo "{\"tasks\": $(least "${tasks[@]}" || true), \"fds\": $(least "${fds[@]}"), \"threads\": $(least "${threads[@]}")}" \
    | sed 's/"tasks": ,/"tasks": null,/'
}

# Waits until the server has no call left (at most 60 s).
until_idle() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$BENCH_SERVER_PORT/metrics" | grep -q '^brisvox_active_calls 0$' && return 0
    sleep 0.1
  done
  echo "chaos: calls still active 60 s after the run" >&2
}

# run NAME AGENT
run() {
  local name="$1" agent="$2" port pid
  bench_server_start "$bindir/brisvox" "$agent" 0 "$dir/$name.server.log"
  port="$BENCH_SERVER_PORT"; pid="$BENCH_SERVER_PID"
  idle_sample >"$dir/$name.idle-before.json"
  echo "chaos: $name: $load calls at once, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
  taskset -c 1 "$bindir/brisvox-bench" capacity --url "ws://127.0.0.1:$port/call" \
    --server-pid "$pid" --metrics-url "http://127.0.0.1:$port/metrics" \
    --steps "$load" --rounds "$rounds" --fixture "${fixtures%%,*}" --max-run-s 900 --client-workers 1 \
    --arrivals poisson --fixtures "$fixtures" --seed "$arrival_seed" --resolution 1000 \
    --label "$name: brisvox serve --agent $agent, taskset -c 0; generator taskset -c 1" \
    --out "$dir/$name" 2>"$dir/$name.bench.log" || true
  until_idle
  idle_sample >"$dir/$name.idle-after.json"
  curl -s "http://127.0.0.1:$port/metrics" >"$dir/$name.metrics.txt" || true
  bench_server_stop
  # The picked calls, from the log; the log itself is not kept.
  grep -F "chaos: this call's mocks fail" "$dir/$name.server.log" >"$dir/$name.picked.jsonl" || true
  rm -f "$dir/$name.server.log"
}

header="$(scripts/bench-header.sh "$(basename "$bindir") (binaries in $bindir)" "$cmdline")"
run clean-1 "$dir/agent-clean.toml"
run faulted "$dir/agent-faulted.toml"
[ "$clean_runs" = 2 ] && run clean-2 "$dir/agent-clean.toml"

status=0
python3 bench/chaos_report.py "$dir" "$out" "$apology" "$load" "$capacity" "$percent" "$share" "$seed" "$fault" "$items" "$header" || status=$?
echo "chaos: results in $out.md"
cat "$out.md"
exit "$status"
