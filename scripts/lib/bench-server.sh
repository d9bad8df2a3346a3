# Sourced by the bench scripts: starts and stops one `brisvox serve` for a
# measurement. The server binds 127.0.0.1 (on PORT, or a free port), runs in
# its own session (setsid), pinned with taskset to CPUS unless CPUS is empty,
# and is stopped (SIGTERM, then waited for) by bench_server_stop, which the
# caller should also put in its EXIT trap.
#
#   bench_server_start BIN AGENT CPUS LOG [PORT]
#       writes the server's JSON log lines to LOG; sets BENCH_SERVER_PID and
#       BENCH_SERVER_PORT once /readyz answers 200 (at most 60 s); exits the
#       script with the log's tail if the server dies or never gets ready.
#   bench_server_stop
#       stops it (no-op when none runs).

BENCH_SERVER_PID=""
BENCH_SERVER_PORT=""

bench_server_start() {
  local bin="$1" agent="$2" cpus="$3" log="$4" pin=()
  BENCH_SERVER_PORT="${5:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
  [ -z "$cpus" ] || pin=(taskset -c "$cpus")
  setsid "${pin[@]}" "$bin" serve --agent "$agent" --bind "127.0.0.1:$BENCH_SERVER_PORT" \
    --log-format json >"$log" 2>&1 &
  BENCH_SERVER_PID=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$BENCH_SERVER_PORT/readyz" >/dev/null 2>&1 && return 0
    if ! kill -0 "$BENCH_SERVER_PID" 2>/dev/null; then
      echo "the server exited before it was ready:" >&2
      tail -20 "$log" >&2
      BENCH_SERVER_PID=""
      exit 1
    fi
    sleep 0.1
  done
  echo "the server was not ready within 60 s:" >&2
  tail -20 "$log" >&2
  bench_server_stop
  exit 1
}

bench_server_stop() {
  [ -n "$BENCH_SERVER_PID" ] || return 0
  kill -TERM "$BENCH_SERVER_PID" 2>/dev/null || true
  wait "$BENCH_SERVER_PID" 2>/dev/null || true
  BENCH_SERVER_PID=""
}
