#!/usr/bin/env bash
# Connection floods against `brisvox serve` (bench/agents/flood.toml) while
# reference calls go on: 10,000 idle websockets that never send `start`,
# 1,000 slow request heads, 2,000 handshakes closed at once
# (`brisvox-bench flood --help`). Loopback only; the server runs on core 0,
# the client on core 1, and both stop when the script ends.
#
# Usage: scripts/flood.sh [--bindir DIR] [--out PATH] [flood options...]
#   default bindir target/release, out bench/results/flood-<UTC date>
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bindir="${CARGO_TARGET_DIR:-target}/release"
out="bench/results/flood-$(date -u +%Y-%m-%d)"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bindir) bindir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
setsid taskset -c 0 "$bindir/brisvox" serve --agent bench/agents/flood.toml \
  --bind "127.0.0.1:$port" >"$out.server.log" 2>&1 &
spid=$!
trap 'kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
label="brisvox serve --agent bench/agents/flood.toml ($bindir, taskset -c 0, file limit $(ulimit -Hn)); brisvox-bench flood (taskset -c 1); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 1 "$bindir/brisvox-bench" flood --url "ws://127.0.0.1:$port/call" --server-pid "$spid" \
  --label "$label" --out "$out" "${extra[@]}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out.md"
rm -f "$out.server.log"
