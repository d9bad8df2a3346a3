#!/usr/bin/env bash
# V2V over every phone carrier's route beside /call, in one run, against one
# server (issue #16 item 5): `brisvox serve --agent bench/agents/mock-models.toml`
# (mock providers of fixed latency, the real Silero VAD and Smart Turn), and
# `brisvox-bench v2v` placing each call as the carrier does (its opening,
# media in its encoding, mark echoes as the audio plays, its stop):
#
#   call-8k       /call, PCM16 at 8 kHz         (baseline of the 8 kHz routes)
#   twilio        /twilio, mu-law 8 kHz
#   telnyx-mulaw  /telnyx, PCMU 8 kHz
#   telnyx-alaw   /telnyx, PCMA (A-law) 8 kHz
#   plivo-mulaw   /plivo, mu-law 8 kHz
#   exotel        /exotel, linear PCM 8 kHz
#   call-16k      /call, PCM16 at 16 kHz        (baseline of the 16 kHz routes)
#   vonage        /vonage, linear PCM 16 kHz
#
# The same three phone prompts on every route (their 8 kHz recordings, or
# the 16 kHz ones on the 16 kHz routes), one call at a time. The machine may
# be loaded, so each route is measured once per round, all routes in turn,
# ROUNDS times, and each is quoted against /call of the same run (the
# difference of the p50s and the median of the paired differences: same
# prompt, same round). Writes OUT/ROUTE-rK.{md,json} per route and round and
# OUT/summary.md (bench/carrier_v2v_report.py).
#
#   BRISVOX_BIN [target/release/brisvox]
#   BENCH_BIN [target/release/brisvox-bench]
#   ROUNDS [3]
#   OUT [bench/results/carrier-v2v]
#   PORT [18978]
# The server binds 127.0.0.1 only and is stopped on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/bench-server.sh

bin="${BRISVOX_BIN:-target/release/brisvox}"
bench="${BENCH_BIN:-target/release/brisvox-bench}"
rounds="${ROUNDS:-3}"
out="${OUT:-bench/results/carrier-v2v}"
port="${PORT:-18978}"
agent=bench/agents/mock-models.toml
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "carrier-v2v: $b not found: cargo build --release --locked -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
profile="$(basename "$(dirname "$bin")")"
mkdir -p "$out"
log="$(mktemp)"
trap 'bench_server_stop; rm -f "$log"' EXIT

header="$(scripts/bench-header.sh "$profile" "$0 (ROUNDS=$rounds BRISVOX_BIN=$bin BENCH_BIN=$bench)")"
bench_server_start "$bin" "$agent" "" "$log" "$port"

prompts="phone_pls_hold_while_try phone_please_try_call_later phone_cannot_complete_as_dialed"
# name path codec rate baseline
routes=(
  "call-8k /call - 8k -"
  "twilio /twilio mulaw 8k call-8k"
  "telnyx-mulaw /telnyx mulaw 8k call-8k"
  "telnyx-alaw /telnyx alaw 8k call-8k"
  "plivo-mulaw /plivo mulaw 8k call-8k"
  "exotel /exotel pcm16 8k call-8k"
  "call-16k /call - 16k -"
  "vonage /vonage pcm16 16k call-16k"
)
for round in $(seq 1 "$rounds"); do
  for r in "${routes[@]}"; do
    read -r name path codec rate _ <<<"$r"
    args=(v2v --url "ws://127.0.0.1:$port$path" --runs 3)
    [ "$codec" = - ] || args+=(--codec "$codec")
    for p in $prompts; do args+=(--fixture "fixtures/${p}_$rate.wav"); done
    echo "carrier-v2v: round $round, $name" >&2
    "$bench" "${args[@]}" --out "$out/$name-r$round" \
      --label "brisvox serve --agent $agent ($bin, profile $profile), $path, round $round of $rounds"
  done
done
bench_server_stop

specs=()
for r in "${routes[@]}"; do
  read -r name _ _ _ base <<<"$r"
  [ "$base" = - ] && base=""
  specs+=("$name=$base")
done
{
  echo "# V2V over every carrier route beside /call (scripts/carrier-v2v.sh)"
  echo
  echo "$header"
  echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- server: \`$bin serve --agent $agent\` (mock STT/LLM/TTS of fixed latency, Silero VAD, Smart Turn v3.2), one process for the whole run, 127.0.0.1"
  echo "- calls: brisvox-bench v2v, one at a time; each route measured once per round (3 calls: $prompts), all routes in turn, $rounds rounds; the 16 kHz routes play the same prompts' 16 kHz recordings"
  echo
  echo "V2V = arrival at the caller of the first non-silent bot audio after the prompt's end of speech, minus that end (bench/results/README.md)."
  echo "The machine is shared and loaded: read each route against /call at the same rate in this run (difference and ratio of the p50s, median of the differences paired by prompt and round), not as absolute figures."
  echo
  python3 bench/carrier_v2v_report.py "$out" "${specs[@]}"
  echo
  echo "Per route and round: \`ROUTE-rK.md\` (with each call's turns) and \`ROUTE-rK.json\` (every sample) beside this file."
} >"$out/summary.md"
echo "carrier-v2v: wrote $out/summary.md" >&2
