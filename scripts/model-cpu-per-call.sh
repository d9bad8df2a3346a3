#!/usr/bin/env bash
# Model CPU per call, before against after (#20 item 1): two release builds of
# `brisvox serve` (--a: before, --b: after) each carry the same fixed load of
# CALLS calls at once (`brisvox-bench capacity`, one step, no bisection) with
# the models (bench/agents/mock-models.toml: Silero VAD, Smart Turn v3.2, mock
# providers) and without them (bench/agents/mock-no-models.toml: energy VAD,
# fixed verdict, same mocks). The server's CPU over the step divided by the
# calls is its CPU per call; with the models minus without is the CPU per call
# the models (and their plumbing) cost. Builds and agents are interleaved, the
# order rotated each round; server on core 0, generator (the --b build's
# brisvox-bench, for every run) on core 1; a fresh server per run.
#
# Usage: scripts/model-cpu-per-call.sh --a DIR --b DIR [--calls N] [--rounds R]
#            [--fixture WAV] [--out DIR]
#   DIR holds brisvox and brisvox-bench; defaults: --calls 48, --rounds 2,
#   --fixture fixtures/librivox_0870.wav, --out bench/results/model-cpu-per-call-<date>
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench-server.sh

a="" b="" calls=48 rounds=2 fixture=fixtures/librivox_0870.wav out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --a) a="$2"; shift 2 ;;
    --b) b="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --fixture) fixture="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$a" ] && [ -n "$b" ] || { echo "--a and --b are required" >&2; exit 2; }
for d in "$a" "$b"; do
  for x in brisvox brisvox-bench; do
    [ -x "$d/$x" ] || { echo "$d/$x missing" >&2; exit 1; }
  done
done
case "$calls$rounds" in *[!0-9]*) echo "--calls and --rounds are integers" >&2; exit 2 ;; esac
out="${out:-bench/results/model-cpu-per-call-$(date -u +%Y-%m-%d)}"
mkdir -p "$out"
cmdline="scripts/model-cpu-per-call.sh --a $a --b $b --calls $calls --rounds $rounds --fixture $fixture --out $out"
scripts/bench-header.sh release "$cmdline" > "$out/header.txt"
trap bench_server_stop EXIT

# run BUILD(a|b) AGENT(models|no-models) ROUND
run() {
  local build="$1" mode="$2" k="$3" dir name
  dir="$([ "$build" = a ] && echo "$a" || echo "$b")"
  name="$build-$mode-r$k"
  bench_server_start "$dir/brisvox" "bench/agents/mock-$mode.toml" 0 "$out/$name.server.log"
  echo "model-cpu-per-call: $name, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" >&2
  taskset -c 1 "$b/brisvox-bench" capacity --url "ws://127.0.0.1:$BENCH_SERVER_PORT/call" \
    --server-pid "$BENCH_SERVER_PID" --steps "$calls" --resolution 1000000 --rounds 2 \
    --fixture "$fixture" --max-run-s 600 \
    --label "$name: $dir/brisvox serve --agent bench/agents/mock-$mode.toml, taskset -c 0" \
    --out "$out/$name" 2>"$out/$name.bench.log" || echo "model-cpu-per-call: $name: capacity exited with $?" >&2
  bench_server_stop
  rm -f "$out/$name.server.log" "$out/$name.bench.log"
}

for k in $(seq 1 "$rounds"); do
  if [ $((k % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  for build in $order; do
    for mode in models no-models; do
      run "$build" "$mode" "$k"
    done
  done
done

python3 - "$out" "$calls" "$rounds" "$a" "$b" > "$out/summary.md" <<'PY'
import json, statistics, sys
out, calls, rounds, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def per_call(name):
    d = json.load(open(f"{out}/{name}.json"))
    s = [s for s in d["steps"] if s["calls_at_once"] == calls][-1]
    return 100.0 * s["server"]["cpu_cores"] / calls, s["verdict"]["outcome"]
print("# Model CPU per call, before (a) against after (b)\n")
print(open(f"{out}/header.txt").read().rstrip("\n"))
print(f"- a (before): {a}; b (after): {b}; {calls} calls at once, aligned, {rounds} rounds, order rotated\n")
print("Server CPU per call over the step, % of one core (server alone on core 0). Model CPU per call = with the models minus without.\n")
print("| build | round | with the models | without | model CPU per call | step passed (models / without) |")
print("|---|---|---|---|---|---|")
med = {}
for build in "ab":
    diffs, withs, withouts = [], [], []
    for k in range(1, rounds + 1):
        m, pm = per_call(f"{build}-models-r{k}")
        n, pn = per_call(f"{build}-no-models-r{k}")
        diffs.append(m - n); withs.append(m); withouts.append(n)
        print(f"| {build} | {k} | {m:.3f} | {n:.3f} | {m - n:.3f} | {pm} / {pn} |")
    med[build] = (statistics.median(withs), statistics.median(withouts), statistics.median(diffs))
print("\n| build | with the models (median) | without (median) | model CPU per call (median) |")
print("|---|---|---|---|")
for build in "ab":
    w, n, d = med[build]
    print(f"| {build} | {w:.3f} | {n:.3f} | {d:.3f} |")
print(f"\nModel CPU per call, b / a: {med['b'][2] / med['a'][2]:.2f}")
PY
cat "$out/summary.md"
