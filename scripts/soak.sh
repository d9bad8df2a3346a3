#!/usr/bin/env bash
# A soak: `brisvox serve` with the mock providers and the real models
# (bench/agents/mock-models.toml) carries CALLS calls at once over /twilio
# (recorded 8 kHz calls played in real time by `brisvox-bench soak`, each slot
# placing one call after another) for MINUTES minutes, sampled every minute;
# then checks the run and draws the chart.
#
# Usage: scripts/soak.sh [--calls N] [--minutes M] [--warmup-minutes W]
#                        [--gap-ms MS] [--bindir DIR] [--out PATH] [--check]
#   defaults: 4 calls, 2 minutes, 1 warm-up minute, gap 1000 ms, target/debug,
#   out target/soak/soak (PATH.md, PATH.json, PATH.svg).
#   --gap-ms: after each call a slot waits an exponential gap of this mean
#   (seeded) before its next, as callers do: identical calls placed back to
#   back fall into step (every slot's end of turn at the same instant, round
#   after round), which real traffic does not. 0 places them back to back.
#   --check fails the script unless every turn of an admitted call was
#   answered, no admitted call failed, every minute after warm-up answered
#   turns (calls refused at admission are counted and shown, not failures),
#   and the server's fds (beyond one per call at once) and threads did not
#   grow: CI runs
#   `scripts/soak.sh --check` (the short soak, ~2.5 min).
# The full soak of the results (bench/results/soak-*.md) is
#   cargo build --release -p brisvox-server -p brisvox-bench
#   scripts/soak.sh --bindir target/release --calls N --minutes 60 --warmup-minutes 5 --out bench/results/soak-DATE
# with N slots chosen so that the calls at once average 80 % of the capacity
# measured over /twilio (a slot is busy call / (call + gap) of the time).
# The server runs on core 0 and the generator on core 1; both bind and
# connect to 127.0.0.1 only and are stopped when the script ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

calls=4
minutes=2
warmup=1
gap=1000
bindir="${CARGO_TARGET_DIR:-target}/debug"
out="${CARGO_TARGET_DIR:-target}/soak/soak"
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --calls) calls="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --warmup-minutes) warmup="$2"; shift 2 ;;
    --gap-ms) gap="$2"; shift 2 ;;
    --bindir) bindir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "soak: unknown option $1" >&2; exit 2 ;;
  esac
done
for b in brisvox brisvox-bench; do
  [ -x "$bindir/$b" ] || { echo "soak: $bindir/$b missing: cargo build -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
log="$out.server.log"
setsid taskset -c 0 "$bindir/brisvox" serve --agent bench/agents/mock-models.toml \
  --bind "127.0.0.1:$port" --log-format json >"$log" 2>&1 &
spid=$!
trap 'kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  kill -0 "$spid" 2>/dev/null || { echo "soak: the server exited:"; tail -20 "$log"; exit 1; }
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "soak: the server never became ready"; exit 1; }

label="brisvox serve --agent bench/agents/mock-models.toml ($bindir, taskset -c 0); brisvox-bench soak over /twilio (taskset -c 1); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 1 "$bindir/brisvox-bench" soak --url "ws://127.0.0.1:$port/twilio" \
  --calls "$calls" --minutes "$minutes" --warmup-minutes "$warmup" --gap-ms "$gap" --server-pid "$spid" \
  --metrics-url "http://127.0.0.1:$port/metrics" --label "$label" --out "$out"
echo "soak: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out.md"
python3 bench/soak_chart.py "$out.json" "$out.svg"

if [ "$check" -eq 1 ]; then
  python3 - "$out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g, s = r["growth"], r["samples"]
problems = []
if g["turns_lost"]: problems.append(f'{g["turns_lost"]} turns lost')
if g["calls_failed"]: problems.append(f'{g["calls_failed"]} calls failed')
if not g["turns_answered"]: problems.append("no turn answered")
after = [x for x in s if x["minute"] > r["warmup_minutes"]] or s
# A call the server refused at admission (HTTP 503 with its reason) was shed,
# not lost: on a machine whose cores other work takes, the Smart Turn wait can
# exceed the admission limit and the server rightly protects its admitted
# calls. Admission has its own tests; this soak checks that what was admitted
# is answered and nothing grows. It still fails when a minute after warm-up
# admitted no call at all (nothing was soaked).
for x in after:
    if x["turns_answered"] == 0:
        problems.append(f'minute {x["minute"]}: no turn answered ({x["calls_refused"]} calls refused)')
# Each running call holds a socket: the fds may differ by the calls at once
# between two samples; more than that is growth.
for key, slack in (("fds", r["calls"]), ("threads", 2)):
    if after[-1][key] > after[0][key] + slack:
        problems.append(f'{key} grew from {after[0][key]} to {after[-1][key]}')
print("soak check:", "; ".join(problems) if problems else
      f'{g["turns_answered"]} turns answered, none lost, no call failed '
      f'({g["calls_refused"]} refused at admission), fds and threads flat')
sys.exit(1 if problems else 0)
PY
fi
