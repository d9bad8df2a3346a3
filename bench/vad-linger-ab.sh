#!/usr/bin/env bash
# The server's CPU per call with two VAD linger bounds, side by side in one run
# (issue #20 item 1): the same `brisvox` binary, bench/agents/mock-models.toml
# as it is (brisvox's default bound) and with `[runtime] vad_linger_ms = A`,
# rounds interleaved, server alone on core 0, generator on core 1, N aligned
# calls of the fixture, two plays each. Prints a markdown report: per round
# the server's CPU per call (% of one core), VAD rows per model run
# (brisvox_vad_windows_total / brisvox_vad_batches_total) and p50 / p95 V2V.
#
#   bench/vad-linger-ab.sh --bin DIR --other-ms A [--calls N] [--rounds R] > report.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-server.sh

bin="" other="" calls=32 rounds=3 fixture=fixtures/librivox_0870.wav
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --other-ms) other="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin/brisvox" ] && [ -x "$bin/brisvox-bench" ] || { echo "--bin DIR with brisvox and brisvox-bench" >&2; exit 2; }
case "$other$calls$rounds" in ''|*[!0-9]*) echo "--other-ms, --calls and --rounds are integers" >&2; exit 2 ;; esac

work="$(mktemp -d)"
trap 'bench_server_stop; rm -rf "$work"' EXIT
cp bench/agents/mock-models.toml "$work/other.toml"
printf '\n[runtime]\nvad_linger_ms = %s\n' "$other" >> "$work/other.toml"

scripts/bench-header.sh release "bench/vad-linger-ab.sh --bin $bin --other-ms $other --calls $calls --rounds $rounds"
echo
echo "| round | linger | server CPU per call (% of a core) | VAD rows per run | p50 V2V ms | p95 V2V ms |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for cfg in "default:bench/agents/mock-models.toml" "${other} ms:$work/other.toml"; do
    name="${cfg%%:*}" agent="${cfg#*:}"
    bench_server_start "$bin/brisvox" "$agent" 0 "$work/server.log"
    taskset -c 1 "$bin/brisvox-bench" capacity --url "ws://127.0.0.1:$BENCH_SERVER_PORT/call" \
      --server-pid "$BENCH_SERVER_PID" --steps "$calls" --resolution 1000000 --rounds 2 \
      --fixture "$fixture" --max-run-s 600 --label "linger $name" --out "$work/run" >/dev/null 2>&1 \
      || echo "vad-linger-ab: round $r, $name: capacity exited with $?" >&2
    rows="$(curl -s "http://127.0.0.1:$BENCH_SERVER_PORT/metrics" | awk '
      /^brisvox_vad_windows_total\{result="scored"\}/ {w = $2}
      /^brisvox_vad_batches_total/ {b = $2}
      END {if (b > 0) printf "%.2f", w / b; else print "-"}')"
    bench_server_stop
    python3 - "$work/run.json" "$calls" "$r" "$name" "$rows" <<'PY'
import json, sys
path, calls, r, name, rows = sys.argv[1:]
step = json.load(open(path))["steps"][0]
cpu = 100.0 * step["server"]["cpu_cores"] / int(calls)
v2v = step["summary"].get("v2v_ms") or {}
print(f"| {r} | {name} | {cpu:.3f} | {rows} | {v2v.get('p50', '-')} | {v2v.get('p95', '-')} |")
PY
  done
done
