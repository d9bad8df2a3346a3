#!/usr/bin/env bash
# Where the server's CPU goes without the models: a `perf record` of `brisvox serve` during
# one capacity step, split into categories by bench/perf_split.py.
#
# Usage (from the checkout): bench/framework-profile.sh BINDIR OUTDIR CALLS [SECONDS]
#   BINDIR holds brisvox and brisvox-bench, built with line tables for the call stacks:
#   CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p brisvox-server -p brisvox-bench
# The server (agent bench/agents/mock-no-models.toml) runs on core 0, the generator
# (`brisvox-bench capacity`, one step of CALLS calls, two plays of fixtures/en_two_utterances.wav
# each) and perf on core 1. perf starts 12 s into the step (the calls are all up) and samples
# the server for SECONDS [20] at 499 Hz with DWARF call stacks. Writes OUTDIR/perf.data,
# OUTDIR/split.md (the table of shares), OUTDIR/cap.{md,json} (the step) and OUTDIR/loads.txt.
# PORT [18941].
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
bindir="$1"; out="$2"; n="$3"; secs="${4:-20}"
port="${PORT:-18941}"
mkdir -p "$out"
setsid taskset -c 0 "$bindir/brisvox" serve --agent bench/agents/mock-no-models.toml \
  --bind "127.0.0.1:$port" > "$out/server.log" 2>&1 &
spid=$!
trap 'kill -TERM $spid 2>/dev/null' EXIT
for _ in $(seq 1 120); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.5; done
echo "server $spid up, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" | tee "$out/loads.txt"
taskset -c 1 "$bindir/brisvox-bench" capacity --url "ws://127.0.0.1:$port/call" --server-pid "$spid" \
  --fixture fixtures/en_two_utterances.wav --steps "$n" --resolution 100000 --max-run-s 300 \
  --client-workers 1 --floor-ms 780 --label "framework-profile: $bindir/brisvox, taskset -c 0" \
  --out "$out/cap" 2> "$out/bench.log" &
bpid=$!
sleep 12
taskset -c 1 perf record -F 499 --call-graph dwarf,16384 -p "$spid" -o "$out/perf.data" \
  -- sleep "$secs" 2> "$out/perf.log"
wait "$bpid"
echo "step done, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" | tee -a "$out/loads.txt"
kill -TERM "$spid"; wait "$spid" 2>/dev/null
trap - EXIT
tail -n 20 "$out/server.log" > "$out/server.log.tmp" && mv "$out/server.log.tmp" "$out/server.log"
# Inlined frames resolved (slow: addr2line), so code inlined into a generic poll is named.
perf script -i "$out/perf.data" -F comm,tid,period,ip,sym --inline 2>/dev/null > "$out/perf.script.txt"
python3 bench/perf_split.py "$out/perf.script.txt" > "$out/split.md"
cat "$out/split.md"
