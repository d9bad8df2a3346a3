#!/usr/bin/env bash
# Calls per server as the server is given one core or two (issue #20 item 4):
# `brisvox serve --agent bench/agents/mock-models.toml` (mock providers, the
# real Silero VAD and Smart Turn) and `brisvox-bench capacity` on the same
# machine, in one run, in two placements:
#   1core   server taskset -c 0, generator taskset -c 1 (the generator has a
#           core of its own);
#   2cores  server and generator both taskset -c 0,1: the server's pools size
#           themselves from the two cores it may use (Smart Turn executor
#           threads, VAD threads, runtime workers; the server's startup log
#           lines are copied into the report), and the generator runs beside
#           it. Its share is not hidden: every step of the report carries the
#           generator's CPU (cores, sampled from /proc) beside the server's,
#           and the summary gives both at the last passing step, so the
#           server had the two cores minus the generator's share.
# Each placement gets a fresh server and its own capacity ramp (a step
# passes when the p95 V2V stays within the one-call floor + 250 ms and no
# turn is lost; see `brisvox-bench capacity --help`).
#
# Usage: scripts/cores.sh [--bindir DIR] [--out DIR] [--route /call|/twilio]
#          [--fixture WAV] [--arrivals aligned|poisson] [--seed N]
#          [--steps-1 LIST] [--steps-2 LIST] [--resolution N] [--rounds N]
#   defaults: target/release, bench/results/cores-DATE, /call,
#   fixtures/librivox_0870.wav, poisson, seed 1, steps 1,32,64,96,128 and
#   1,64,128,192,256, resolution 8, 2 rounds.
# Writes OUT/1core.md|json, OUT/2cores.md|json and OUT/summary.md. Binds and
# connects to 127.0.0.1 only; every server is stopped when the script ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/bench-server.sh

bindir=target/release
out="bench/results/cores-$(date -u +%Y-%m-%d)"
route=/call
fixture=fixtures/librivox_0870.wav
arrivals=poisson
seed=1
steps1=1,32,64,96,128
steps2=1,64,128,192,256
resolution=8
rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    --bindir) bindir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --route) route="$2"; shift 2 ;;
    --fixture) fixture="$2"; shift 2 ;;
    --arrivals) arrivals="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --steps-1) steps1="$2"; shift 2 ;;
    --steps-2) steps2="$2"; shift 2 ;;
    --resolution) resolution="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "cores: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$route" in /call|/twilio) ;; *) echo "cores: --route is /call or /twilio" >&2; exit 2 ;; esac
[ "$(nproc --all)" -ge 2 ] || { echo "cores: needs a machine with at least 2 cores" >&2; exit 1; }
for b in brisvox brisvox-bench; do
  [ -x "$bindir/$b" ] || { echo "cores: $bindir/$b missing: cargo build --release --locked -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
agent=bench/agents/mock-models.toml
mkdir -p "$out"
cmdline="scripts/cores.sh --bindir $bindir --out $out --route $route --fixture $fixture --arrivals $arrivals --seed $seed --steps-1 $steps1 --steps-2 $steps2 --resolution $resolution --rounds $rounds"
header="$(scripts/bench-header.sh "$(basename "$bindir")" "$cmdline")"
trap bench_server_stop EXIT

# run NAME SERVER_CPUS GENERATOR_CPUS STEPS
run() {
  local name="$1" scpus="$2" gcpus="$3" steps="$4" log="$out/$1.server.log"
  bench_server_start "$bindir/brisvox" "$agent" "$scpus" "$log"
  echo "cores: $name: server on $scpus, generator on $gcpus, steps $steps, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
  taskset -c "$gcpus" "$bindir/brisvox-bench" capacity \
    --url "ws://127.0.0.1:$BENCH_SERVER_PORT$route" --server-pid "$BENCH_SERVER_PID" \
    --metrics-url "http://127.0.0.1:$BENCH_SERVER_PORT/metrics" \
    --steps "$steps" --resolution "$resolution" --rounds "$rounds" --fixture "$fixture" \
    --arrivals "$arrivals" --fixtures "$fixture" --seed "$seed" --max-run-s 1200 \
    --label "$name: brisvox serve --agent $agent (taskset -c $scpus); generator taskset -c $gcpus" \
    --out "$out/$name" 2>"$out/$name.bench.log"
  bench_server_stop
  # What the server sized itself to (pool threads), for the report.
  grep -E '"(Silero VAD pool started|Smart Turn executor starting)"|runtime' "$log" \
    | head -5 >"$out/$name.startup.log" || true
  rm -f "$log" "$out/$name.bench.log"
}

run 1core 0 1 "$steps1"
run 2cores 0,1 0,1 "$steps2"

python3 - "$out" "$header" <<'PY' >"$out/summary.md"
import json, sys
out, header = sys.argv[1], sys.argv[2]
def step_at(d, calls):
    for s in d["steps"]:
        if s["calls_at_once"] == calls:
            return s
    return None
def cores(s, who):
    return "-" if s is None or not s.get(who) else f'{s[who]["cpu_cores"]:.2f}'
print("# Capacity with one and two server cores (#20 item 4)\n")
print(header)
print("- agent: bench/agents/mock-models.toml (mock providers, Silero VAD, Smart Turn v3.2)\n")
print("| placement | server cores (taskset) | generator (taskset) | largest passing step | smallest failing step | server CPU at the passing step (cores) | generator CPU at the passing step (cores) | server CPU at the failing step | generator CPU at the failing step | pools at startup |")
print("|---|---|---|---|---|---|---|---|---|---|")
caps = {}
for name, scpus, gcpus in (("1core", "0", "1"), ("2cores", "0,1", "0,1")):
    d = json.load(open(f"{out}/{name}.json"))
    r = d["result"]
    ok, bad = r.get("largest_passing_step"), r.get("smallest_failing_step")
    caps[name] = ok
    pools = []
    for line in open(f"{out}/{name}.startup.log"):
        try:
            f = json.loads(line).get("fields", {})
        except ValueError:
            f = {}
        if "threads" in f:
            pools.append(f'{f.get("message", "")}: {f["threads"]} thread(s)')
    sp, sf = step_at(d, ok), step_at(d, bad)
    print(f'| {name} | {scpus} | {gcpus} | {ok if ok is not None else "none"} | {bad if bad is not None else "none (all passed)"} | {cores(sp, "server")} | {cores(sp, "generator")} | {cores(sf, "server")} | {cores(sf, "generator")} | {"; ".join(pools) or "-"} |')
if caps.get("1core") and caps.get("2cores"):
    print(f'\nCalls with two cores against one: {caps["2cores"] / caps["1core"]:.2f}x (largest passing steps; each ramp bisects to within --resolution).')
print("\nWith two cores the generator runs on the same two cores: the server had two cores minus the generator's CPU of the same step (column above). The reports of each ramp: `1core.md`, `2cores.md`.")
PY
cat "$out/summary.md"
