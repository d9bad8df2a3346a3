#!/usr/bin/env bash
# Safe by default, shown on the real binary (issue #19 item 6): what an
# operator sees when `brisvox serve` would expose paid providers, and how the
# failed-auth limiter treats a prober. Writes OUT.md (default
# bench/results/safe-defaults-DATE.md) with each step's command, its outcome
# and PASS/FAIL; exit status 1 when a step fails.
#   1. paid STT (Deepgram), a token on /call only (so /twilio is open), bound
#      to 0.0.0.0: the server refuses to start and names the open route and
#      the paid provider, without printing the key;
#   2. the same on 127.0.0.1: it starts (loopback is not exposed);
#   3. the same on 0.0.0.0 with --allow-unauthenticated-calls: it starts and
#      logs the `UNAUTHENTICATED CALLS ALLOWED` warning;
#   4. every call route and /metrics with a token, on 0.0.0.0: it starts;
#      then from 127.0.0.2, N wrong /call tokens (401 each; N is
#      [server.failed_auth] max_failures, 10 by default), then the RIGHT
#      token from that address: 429 with Retry-After; from 127.0.0.1 the
#      right token still upgrades (101); /metrics counts the failures and
#      the refusals.
# No provider is contacted (energy VAD, no turn model, no call placed); the
# fake key and tokens are set here. Listens for a few seconds per step.
#
# Usage: scripts/safe-defaults.sh [--bin PATH] [--out PATH]
#   defaults: target/release/brisvox, bench/results/safe-defaults-DATE
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=target/release/brisvox
out="bench/results/safe-defaults-$(date -u +%Y-%m-%d)"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "safe-defaults: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "safe-defaults: $bin missing: cargo build --release --locked -p brisvox-server" >&2; exit 1; }
command -v curl >/dev/null || { echo "safe-defaults: needs curl" >&2; exit 1; }
tmp="$(mktemp -d)"
pid=""
stop() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=""
}
trap 'stop; rm -rf "$tmp"' EXIT

export DEEPGRAM_API_KEY=dg-fake-key-not-real BRISVOX_CALL_TOKEN=call-secret \
  BV_TWILIO_TOKEN=twilio-secret BV_METRICS_TOKEN=metrics-secret
unset BRISVOX_ALLOW_UNAUTHENTICATED_CALLS
# The server test's agent (paid STT, a token on /call only: /twilio open),
# and the same with every route guarded.
open_agent=crates/brisvox-server/tests/agents/paid-stt-open-twilio.toml
guarded_agent="$tmp/guarded.toml"
{ cat "$open_agent"; printf '[server.auth.twilio]\ntoken = "${BV_TWILIO_TOKEN}"\n[server.auth.metrics]\ntoken = "${BV_METRICS_TOKEN}"\n'; } >"$guarded_agent"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
report="$tmp/report.md"
failed=0
step() { # step OK|FAIL TEXT
  [ "$1" = PASS ] || failed=1
  echo "- **$1**: $2" >>"$report"
}
# start AGENT BIND [FLAG]: starts the server; 0 once /healthz answers, 1 if
# it exited first (its log in $tmp/log).
start() {
  local port="${2##*:}"
  "$bin" serve --agent "$1" --bind "$2" --log-format json ${3:+"$3"} >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; pid=""; return 1; }
    sleep 0.1
  done
  echo "safe-defaults: the server neither started nor exited in 30 s" >&2
  exit 1
}
# upgrade FROM PORT TOKEN: the HTTP status of a /call websocket upgrade from
# the local address FROM (headers in $tmp/headers).
upgrade() {
  curl -s -o /dev/null -D "$tmp/headers" -w '%{http_code}' --max-time 3 --interface "$1" \
    -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H "Authorization: Bearer $3" \
    "http://127.0.0.1:$2/call" || true
}

# 1. Refused on all interfaces.
port="$(free_port)"
if start "$open_agent" "0.0.0.0:$port"; then
  step FAIL "1. paid STT, /twilio open, \`--bind 0.0.0.0:$port\`: the server STARTED"
  stop
else
  msg="$(grep -o 'refusing to serve[^"]*' "$tmp/log" | head -1 || true)"
  if [ -n "$msg" ] && ! grep -q "$DEEPGRAM_API_KEY" "$tmp/log"; then
    step PASS "1. paid STT, /twilio open, \`--bind 0.0.0.0:$port\`: refused to start; it says: \"$msg\" (the key is not printed)"
  else
    step FAIL "1. refused, but without the expected message or with the key printed: $(tail -3 "$tmp/log")"
  fi
fi

# 2. Loopback starts.
port="$(free_port)"
if start "$open_agent" "127.0.0.1:$port"; then
  step PASS "2. the same agent on \`--bind 127.0.0.1:$port\`: started (loopback is not exposed)"
  stop
else
  step FAIL "2. the same agent on loopback did not start: $(tail -3 "$tmp/log")"
fi

# 3. Explicit permission starts, loudly.
port="$(free_port)"
if start "$open_agent" "0.0.0.0:$port" --allow-unauthenticated-calls; then
  warn="$(grep '"WARN"' "$tmp/log" | grep -o 'UNAUTHENTICATED CALLS ALLOWED[^"]*' | head -1 || true)"
  if [ -n "$warn" ]; then
    step PASS "3. the same on 0.0.0.0 with \`--allow-unauthenticated-calls\`: started, warning logged: \"$warn\""
  else
    step FAIL "3. started with the flag but logged no UNAUTHENTICATED CALLS ALLOWED warning"
  fi
  stop
else
  step FAIL "3. did not start with --allow-unauthenticated-calls: $(tail -3 "$tmp/log")"
fi

# 4. Every route guarded: starts; the limiter.
port="$(free_port)"
if start "$guarded_agent" "0.0.0.0:$port"; then
  step PASS "4. tokens on /call, /twilio and /metrics, \`--bind 0.0.0.0:$port\`: started without permission"
  limit=10
  codes=()
  for _ in $(seq 1 "$limit"); do codes+=("$(upgrade 127.0.0.2 "$port" wrong-token)"); done
  uniq_codes="$(printf '%s\n' "${codes[@]}" | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
  if [ "$(printf '%s\n' "${codes[@]}" | sort -u)" = 401 ]; then
    step PASS "4a. $limit wrong /call tokens from 127.0.0.2: ${uniq_codes% }"
  else
    step FAIL "4a. $limit wrong /call tokens from 127.0.0.2: ${uniq_codes% } (expected 401 each)"
  fi
  code="$(upgrade 127.0.0.2 "$port" "$BRISVOX_CALL_TOKEN")"
  retry="$(grep -i '^retry-after:' "$tmp/headers" | tr -d '\r' | awk '{print $2}')"
  if [ "$code" = 429 ] && [ -n "$retry" ]; then
    step PASS "4b. then the RIGHT token from 127.0.0.2: $code, Retry-After $retry s"
  else
    step FAIL "4b. then the right token from 127.0.0.2: $code, Retry-After '${retry}' (expected 429 with Retry-After)"
  fi
  code="$(upgrade 127.0.0.1 "$port" "$BRISVOX_CALL_TOKEN")"
  if [ "$code" = 101 ]; then
    step PASS "4c. the right token from 127.0.0.1: $code (the websocket upgrade; another address is not blocked)"
  else
    step FAIL "4c. the right token from 127.0.0.1: $code (expected 101)"
  fi
  metrics="$(curl -s -H "Authorization: Bearer $BV_METRICS_TOKEN" "http://127.0.0.1:$port/metrics")"
  fails="$(echo "$metrics" | awk '$1=="brisvox_auth_failures_total"{print $2}')"
  limited="$(echo "$metrics" | awk '$1=="brisvox_auth_rate_limited_total"{print $2}')"
  if [ "$fails" = "$limit" ] && [ "$limited" = 1 ]; then
    step PASS "4d. /metrics: brisvox_auth_failures_total $fails, brisvox_auth_rate_limited_total $limited"
  else
    step FAIL "4d. /metrics: brisvox_auth_failures_total '$fails' (expected $limit), brisvox_auth_rate_limited_total '$limited' (expected 1)"
  fi
  stop
else
  step FAIL "4. the guarded agent did not start on 0.0.0.0: $(tail -3 "$tmp/log")"
fi

mkdir -p "$(dirname "$out")"
{
  echo "# Safe by default on the real binary (#19 item 6)"
  echo
  scripts/bench-header.sh "$(basename "$(dirname "$bin")") ($bin)" "scripts/safe-defaults.sh --bin $bin --out $out"
  echo "- agent files: paid STT (Deepgram, a fake key; energy VAD, no turn model); steps 1-3 with a token on /call only, step 4 with tokens on /call, /twilio and /metrics. No provider is contacted."
  echo
  cat "$report"
  echo
  echo "The same behaviours are tested in crates/brisvox-server/tests/serve_refuses_paid_providers_open_to_anyone.rs and failed_auth_is_rate_limited_per_source_address.rs; the token compare (HMAC-SHA256 tags, lengths hidden) is unit-tested in crates/brisvox-server/src/gate.rs."
} >"$out.md"
cat "$out.md"
exit "$failed"
