#!/usr/bin/env bash
# Load shedding measured side by side (#19 item 1): `brisvox serve` with the
# mock providers and the real models (bench/agents/mock-models.toml) over
# /call, at 1x, 1.5x and 2x the capacity, with [limits] load_shedding on and
# off, each run against a fresh server.
#   1. Unless --capacity N is given: a capacity ramp with shedding off finds
#      the largest step that passes (p95 V2V <= floor + 250 ms, nothing
#      lost); its 1-call warm-up p50 is the floor of every later run.
#   2. Each load L and mode: `brisvox-bench capacity --steps L --admitted-only
#      --floor-ms FLOOR`: the calls the server admitted are judged against the
#      SLO, the refused ones (HTTP 503 before the upgrade) are counted apart;
#      a refused slot redials after a random pause (uniform between 0.5 and
#      1.5 of the fixture's length, drawn from --seed), as callers do.
#   3. OUT/summary.md: one row per run (admitted, refused, p50/p95 of the
#      admitted calls, verdict, refusal reasons, Smart Turn timeouts and the
#      shedding's learned limits from /metrics).
#
# Usage: scripts/shedding.sh [--bindir DIR] [--out DIR] [--capacity N]
#                            [--floor-ms MS] [--rounds N] [--fixture WAV]
#                            [--ramp STEPS] [--resolution N]
#                            [--arrivals aligned|poisson] [--fixtures LIST]
#                            [--seed N] [--target-percent P] [--rate-percent P]
#                            [--loads LIST]
#   defaults: target/release, bench/results/shedding-<UTC date>, capacity
#   measured by a ramp of 1,8,16,32,64,128,256 bisected to 8 calls, floor
#   from the ramp, 2 rounds per slot of fixtures/librivox_0870.wav, aligned
#   arrivals (every slot plays the fixture from its start: ends of turn
#   close together). --arrivals poisson: slots start as a Poisson process and
#   each call plays one of --fixtures (default: the librivox ones) from a
#   random point of silence, drawn from --seed (default 1; it also draws
#   the redial pauses); the ramp too.
#   --target-percent P sets [limits] shed_target_load_percent of the runs
#   with shedding (default: the server's); --rate-percent P their
#   shed_admission_rate_percent (default: the server's). --loads: the load factors
#   (default 1,1.5,2).
# The server runs on core 0, the generator on core 1 (taskset); loopback
# only; every server is stopped when its run ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bindir="${CARGO_TARGET_DIR:-target}/release"
out="bench/results/shedding-$(date -u +%Y-%m-%d)"
capacity=""
floor=""
rounds=2
fixture=fixtures/librivox_0870.wav
ramp_steps=1,8,16,32,64,128,256
resolution=8
arrivals=aligned
fixtures=""
seed=1
target=""
rate=""
factors=1,1.5,2
while [ $# -gt 0 ]; do
  case "$1" in
    --bindir) bindir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --capacity) capacity="$2"; shift 2 ;;
    --floor-ms) floor="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --fixture) fixture="$2"; shift 2 ;;
    --ramp) ramp_steps="$2"; shift 2 ;;
    --resolution) resolution="$2"; shift 2 ;;
    --arrivals) arrivals="$2"; shift 2 ;;
    --fixtures) fixtures="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --target-percent) target="$2"; shift 2 ;;
    --rate-percent) rate="$2"; shift 2 ;;
    --loads) factors="$2"; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "shedding: unknown option $1" >&2; exit 2 ;;
  esac
done
for b in brisvox brisvox-bench; do
  [ -x "$bindir/$b" ] || { echo "shedding: $bindir/$b missing: cargo build --release -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
case "$arrivals" in
  aligned) [ -z "$fixtures" ] || { echo "shedding: --fixtures is for --arrivals poisson" >&2; exit 2; }
    arrival_opts=(--seed "$seed") ;;
  poisson) fixtures="${fixtures:-fixtures/librivox_0870.wav,fixtures/librivox_0880.wav,fixtures/librivox_0890.wav,fixtures/librivox_0920.wav,fixtures/librivox_0930.wav}"
    arrival_opts=(--arrivals poisson --fixtures "$fixtures" --seed "$seed") ;;
  *) echo "shedding: --arrivals must be aligned or poisson" >&2; exit 2 ;;
esac
mkdir -p "$out"
cmdline="scripts/shedding.sh --bindir $bindir --out $out${capacity:+ --capacity $capacity}${floor:+ --floor-ms $floor} --rounds $rounds --fixture $fixture --ramp $ramp_steps --resolution $resolution --arrivals $arrivals${fixtures:+ --fixtures $fixtures} --seed $seed${target:+ --target-percent $target}${rate:+ --rate-percent $rate} --loads $factors"

# The agent file of a mode: mock-models.toml with its load_shedding line set
# (and, with shedding, the target of --target-percent).
agent_of() {
  local f="$out/agent-shedding-$1.toml" extra=""
  [ "$1" = true ] && [ -n "$target" ] && extra="\nshed_target_load_percent = $target"
  [ "$1" = true ] && [ -n "$rate" ] && extra="$extra\nshed_admission_rate_percent = $rate"
  grep -q '^load_shedding = ' bench/agents/mock-models.toml \
    || { echo "shedding: bench/agents/mock-models.toml has no load_shedding line" >&2; exit 1; }
  sed "s/^load_shedding = .*$/load_shedding = $1$extra/" bench/agents/mock-models.toml >"$f"
  echo "$f"
}

spid=""
stop_server() {
  [ -n "$spid" ] || return 0
  kill -TERM "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=""
}
trap stop_server EXIT

# Starts a fresh server with AGENT on a free port; sets spid and port.
start_server() {
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  setsid taskset -c 0 "$bindir/brisvox" serve --agent "$1" --bind "127.0.0.1:$port" \
    >"$2.server.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$spid" 2>/dev/null || { echo "shedding: the server exited:"; tail -20 "$2.server.log"; exit 1; }
    sleep 0.1
  done
  echo "shedding: the server never became ready" >&2
  exit 1
}

# bench NAME AGENT STEPS [capacity options...]
bench() {
  local name="$1" agent="$2" steps="$3"
  shift 3
  start_server "$agent" "$out/$name"
  echo "shedding: $name: steps $steps, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
  taskset -c 1 "$bindir/brisvox-bench" capacity --url "ws://127.0.0.1:$port/call" \
    --server-pid "$spid" --metrics-url "http://127.0.0.1:$port/metrics" \
    --steps "$steps" --rounds "$rounds" --fixture "$fixture" --max-run-s 900 --client-workers 1 \
    --label "$name: brisvox serve --agent $agent, taskset -c 0; generator taskset -c 1" \
    --out "$out/$name" "${arrival_opts[@]}" "$@" 2>"$out/$name.bench.log"
  curl -s "http://127.0.0.1:$port/metrics" >"$out/$name.metrics.txt" || true
  stop_server
  rm -f "$out/$name.server.log"
}

off="$(agent_of false)"
on="$(agent_of true)"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ -z "$capacity" ]; then
  bench ramp "$off" "$ramp_steps" --resolution "$resolution"
  read -r capacity ramp_floor < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["result"]["largest_passing_step"] or 0, r["floor_ms"])' "$out/ramp.json")
  [ "$capacity" -gt 0 ] || { echo "shedding: no step passed the SLO in the ramp" >&2; exit 1; }
  floor="${floor:-$ramp_floor}"
fi
[ -n "$floor" ] || { echo "shedding: --capacity needs --floor-ms" >&2; exit 2; }
# Each factor of --loads times the capacity, rounded to the nearest call.
read -r -a loads < <(python3 -c '
import sys
c = int(sys.argv[1])
print(" ".join(str(max(1, int(c * float(f) + 0.5))) for f in sys.argv[2].split(",")))' "$capacity" "$factors")
for load in "${loads[@]}"; do
  for mode in false true; do
    agent="$off"; [ "$mode" = true ] && agent="$on"
    bench "load-$load-shedding-$mode" "$agent" "$load" --admitted-only --floor-ms "$floor" --resolution 1000
  done
done

python3 - "$out" "$capacity" "$floor" "$cmdline" "$load_start" "$started" "$bindir" "${loads[@]}" <<'PY' >"$out/summary.md"
import json, os, platform, re, subprocess, sys
out, capacity, floor, cmdline, load_start, started, bindir = sys.argv[1:8]
loads = [int(x) for x in sys.argv[8:]]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
print("# Load shedding at " + ", ".join(f"{l / int(capacity):.2g}x" for l in loads) + " the capacity, on and off (#19 item 1)\n")
print(f"- command: `{cmdline}`")
print(f"- machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
print(f"- build profile: {os.path.basename(os.path.normpath(bindir))} (binaries in {bindir}), {rustc}")
print(f"- started {started}, load average at the start {load_start}, at the end {' '.join(open('/proc/loadavg').read().split()[:3])}")
print(f"- agent: bench/agents/mock-models.toml (mock providers, Silero VAD, Smart Turn v3.2) over /call (fixture(s) and arrivals in the command), server on core 0, generator on core 1; the agents of the runs: `agent-shedding-false.toml`, `agent-shedding-true.toml`")
print(f"- capacity {capacity} calls (largest step of the ramp within the SLO, `ramp.md`); floor {float(floor):.1f} ms (1-call p50 of the ramp's warm-up); SLO: p95 V2V of the admitted calls <= floor + 250 ms, no turn lost")
print()
print("| load | calls at once | shedding | calls placed | admitted | refused (503) | admitted p50 / p95 V2V (ms) | SLO limit (ms) | verdict | refusals in /metrics | Smart Turn wait p95 (ms) / timed out | predicted limit at the end (Smart Turn cost, ms per call-s) | admission rate (calls/s) / burst | reasons |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def scrape(path):
    try:
        return open(path).read()
    except OSError:
        return None
def refusals(text):
    if text is None:
        return "-"
    got = re.findall(r'brisvox_calls_refused_total\{reason="([a-z_]+)"\} (\d+)', text)
    got = [f"{r} {n}" for r, n in got if n != "0"]
    return ", ".join(got) or "none"
def gauges(text, *series):
    got = [re.search(re.escape(s) + r' ([0-9.e+-]+)', text or "") for s in series]
    return [float(m.group(1)) for m in got] if all(got) else None
def pacing(text):
    g = gauges(text, "brisvox_shed_admission_rate", "brisvox_shed_admission_burst_calls")
    return f"{g[0]:.1f} / {g[1]:.0f}" if g else "-"
def turn_waits(step):
    m = (step.get("server_metrics") or {}).get("metrics") or {}
    w = m.get("smart_turn_wait_ms") or {}
    p95 = f'{w["p95"]:.0f}' if "p95" in w else "-"
    return f'{p95} / {m.get("smart_turn_timed_out", "-")}'
def predicted(text):
    g = gauges(text, 'brisvox_shed_predicted_calls{pool="smart_turn"}', 'brisvox_shed_call_cost{pool="smart_turn"}')
    return f"{g[0]:.0f} ({g[1] * 1000:.2f})" if g else "-"
for load in loads:
    for mode in ("false", "true"):
        name = f"load-{load}-shedding-{mode}"
        r = json.load(open(f"{out}/{name}.json"))
        st = r["steps"][0]
        s = st["summary"]
        v = s.get("v2v_ms") or {}
        placed = s["calls"] + st["refused_calls"]
        factor = load / int(capacity)
        reasons = "; ".join(st["verdict"]["reasons"]) or "-"
        m = scrape(f"{out}/{name}.metrics.txt")
        p = lambda k: f'{v[k]:.0f}' if k in v else "-"
        print(f'| {factor:.2g}x | {load} | {"on" if mode == "true" else "off"} | {placed} | {s["calls"]} | {st["refused_calls"]} | {p("p50")} / {p("p95")} | {r["p95_limit_ms"]:.0f} | {st["verdict"]["outcome"]} | {refusals(m)} | {turn_waits(st)} | {predicted(m)} | {pacing(m)} | {reasons} |')
print()
print("Each row is one run against a fresh server (`load-N-shedding-MODE.md/json`, the server's last /metrics scrape in `.metrics.txt`). With shedding off nothing is refused below `max_calls`, so every placed call is judged.")
PY
echo "shedding: results in $out/summary.md"
cat "$out/summary.md"
