#!/usr/bin/env bash
# Single capacity steps against a fresh brisvox server each, with the server's /metrics
# deltas and its per-thread CPU (bench/thread_cpu.py): what bench/results/capacity-bottleneck.md
# was measured with.
#
# Usage (from the checkout): bench/capacity-steps.sh LABEL BINDIR OUTDIR STEP...
#   BINDIR holds brisvox and brisvox-bench (e.g. target/release).
# Environment: FIXTURE [fixtures/librivox_0870.wav], FLOOR [] (--floor-ms; default: the
#   1-call warm-up), AGENT [bench/results/compare/2026-11-30/agent-models.toml], PORT [18977].
# The server runs on core 0 and the generator and the sampler on core 1 (taskset -c). Each step
# N writes OUTDIR/LABEL-N.{md,json} (brisvox-bench capacity --steps N --metrics-url ...),
# LABEL-N.threads.{txt,json}, LABEL-N.metrics.txt (the last scrape) and a line in loads.txt.
set -uo pipefail
[ $# -ge 4 ] || { sed -n '2,13p' "$0"; exit 2; }
label="$1"; bindir="$2"; outdir="$3"; shift 3
port="${PORT:-18977}"
agent="${AGENT:-bench/results/compare/2026-11-30/agent-models.toml}"
mkdir -p "$outdir"
for n in "$@"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "capacity-steps: port $port is already in use" >&2; exit 1
  fi
  setsid taskset -c 0 "$bindir/brisvox" serve --agent "$agent" --bind "127.0.0.1:$port" \
    > "$outdir/$label-$n.server.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 120); do
    kill -0 "$spid" 2>/dev/null || { echo "capacity-steps: server exited" >&2; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.5
  done
  echo "$label step $n: server $spid up, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" | tee -a "$outdir/loads.txt"
  taskset -c 1 python3 bench/thread_cpu.py "$spid" --seconds 600 --json "$outdir/$label-$n.threads.json" \
    > "$outdir/$label-$n.threads.txt" 2>&1 &
  tpid=$!
  floor=(); [ -n "${FLOOR:-}" ] && floor=(--floor-ms "$FLOOR")
  taskset -c 1 "$bindir/brisvox-bench" capacity --url "ws://127.0.0.1:$port/call" --server-pid "$spid" \
    --metrics-url "http://127.0.0.1:$port/metrics" --fixture "${FIXTURE:-fixtures/librivox_0870.wav}" \
    "${floor[@]}" --steps "$n" --resolution 1000 --max-run-s 300 --client-workers 1 \
    --label "$label: brisvox serve --agent $agent --bind 127.0.0.1:$port, taskset -c 0" \
    --out "$outdir/$label-$n" 2> "$outdir/$label-$n.bench.log"
  echo "$label step $n: done, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" | tee -a "$outdir/loads.txt"
  curl -s "http://127.0.0.1:$port/metrics" > "$outdir/$label-$n.metrics.txt" || true
  kill -TERM "$spid"; wait "$spid" 2>/dev/null
  wait "$tpid" 2>/dev/null
  sleep 2
done
