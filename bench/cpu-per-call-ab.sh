#!/usr/bin/env bash
# A/B of the server's CPU per call without the models: servers built from different trees,
# alternated (A, B, A, B, ...) at one fixed call count, the same load generator for all.
#
# Usage (from the checkout): bench/cpu-per-call-ab.sh OUTDIR CALLS REPS GENBIN LABEL=BINDIR...
#   BINDIR holds a `brisvox`; GENBIN is the brisvox-bench used for every run.
# Each run: a fresh `brisvox serve` on core 0 (agent bench/agents/mock-no-models.toml,
# max_calls 4096), one `brisvox-bench capacity` step of CALLS calls (2 plays of
# fixtures/en_two_utterances.wav each, no bisection, fixed floor 780 ms) from core 1, then
# the server's utime+stime from /proc/PID/stat, read before it is stopped (its whole life:
# start-up, the 1-call warm-up and the step). CPU per call = that / (2 x CALLS + 1 plays).
# Appends one line per run to OUTDIR/runs.txt; each run's report is OUTDIR/LABEL-R.{md,json}.
# PRE (e.g. "chrt -i 0") prefixes both processes; PORT [18943].
set -uo pipefail
[ $# -ge 5 ] || { sed -n '2,13p' "$0"; exit 2; }
out="$1"; calls="$2"; reps="$3"; gen="$4"; shift 4
pre="${PRE:-}"
port="${PORT:-18943}"
agent=bench/agents/mock-no-models.toml
mkdir -p "$out"
tck=$(getconf CLK_TCK)
echo "# bench/cpu-per-call-ab.sh $out $calls $reps $gen $* (PRE='$pre'), $(date -u +%FT%TZ)" >> "$out/runs.txt"
for r in $(seq 1 "$reps"); do
  for pair in "$@"; do
    label="${pair%%=*}"; bindir="${pair#*=}"
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "cpu-per-call-ab: port $port is already in use" >&2; exit 1
    fi
    # shellcheck disable=SC2086
    setsid taskset -c 0 $pre "$bindir/brisvox" serve --agent "$agent" --bind "127.0.0.1:$port" \
      > "$out/$label-$r.server.log" 2>&1 &
    spid=$!
    up=0
    for _ in $(seq 1 120); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { up=1; break; }
      kill -0 "$spid" 2>/dev/null || break
      sleep 0.5
    done
    [ "$up" = 1 ] || { echo "cpu-per-call-ab: $label server did not come up" >&2; exit 1; }
    load0="$(cut -d' ' -f1-3 /proc/loadavg)"
    # shellcheck disable=SC2086
    timeout --kill-after=10 600 taskset -c 1 $pre "$gen" capacity --url "ws://127.0.0.1:$port/call" \
      --server-pid "$spid" --fixture fixtures/en_two_utterances.wav --steps "$calls" \
      --resolution 100000 --max-run-s 300 --client-workers 1 --floor-ms 780 \
      --label "cpu-per-call-ab $label: $bindir/brisvox serve --agent $agent, taskset -c 0" \
      --out "$out/$label-$r" 2> "$out/$label-$r.bench.log"
    read -r ut st <<<"$(awk '{print $14, $15}' "/proc/$spid/stat")"
    kill -TERM "$spid"; wait "$spid" 2>/dev/null
    tail -n 20 "$out/$label-$r.server.log" > "$out/$label-$r.server.log.tmp" \
      && mv "$out/$label-$r.server.log.tmp" "$out/$label-$r.server.log"
    row=$(grep -E "^\| $calls \|" "$out/$label-$r.md" | head -1 | cut -d'|' -f3-8,13)
    awk -v l="$label" -v r="$r" -v n="$calls" -v u="$ut" -v s="$st" -v t="$tck" -v ld="$load0" -v row="$row" \
      'BEGIN{printf "%s run %s: %d calls, load %s, server CPU %.2f s (user %.2f, sys %.2f), %.3f ms per call | verdict, answered, unclean, failed, p50, server cores:%s\n", l, r, n, ld, (u+s)/t, u/t, s/t, 1000*(u+s)/t/(2*n+1), row}' \
      | tee -a "$out/runs.txt"
    sleep 2
  done
done
