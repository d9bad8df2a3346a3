#!/usr/bin/env bash
# Measures a caller's turn through the local demo's providers: local Whisper
# tiny.en STT, the built-in rules agent and the local voice, with the real
# Silero VAD and Smart Turn (bench/agents/local-demo.toml, no greeting), over
# the /call websocket with brisvox-bench v2v, into bench/results/v2v-local-demo.{md,json};
# then the same over /twilio (8 kHz mu-law, placed as Twilio does) with
# 8 kHz phone prompts, into bench/results/v2v-local-demo-twilio.{md,json}.
#
# With several server binaries (BRISVOX_BIN="a b"), each is measured in turn in
# the same run, so their figures can be compared side by side. The results of
# target/quick/brisvox are v2v-local-demo{,-twilio}.md; any other profile's get
# its name as a suffix, e.g. v2v-local-demo-release.md for target/release/brisvox
# (the committed unsuffixed files are the quick profile's, as run on 2026-12-01).
#
#   BRISVOX_BIN [target/release/brisvox]   the server binaries (scripts/run.sh
#                                        builds target/release/brisvox, and
#                                        target/quick/brisvox with BRISVOX_PROFILE=quick)
#   BENCH_BIN [target/release/brisvox-bench]
#   RUNS [6]   calls per route, one at a time, the fixtures in turn
#   ROUTES ["call twilio"]   which routes to measure
#   OUT_TAG [""]   appended to the results files' names (a second run beside the first)
#   ROUNDS [1]   measures every binary this many times, in turn, the order
#                reversed each round (round N > 1 adds -rN to the names), so
#                that a load that changes during the run falls on all of them
# At the end, bench/results/local-turn-breakdown$OUT_TAG.md puts the runs side
# by side: the medians of V2V and of each stage of the server's turn_metrics
# (bench/local_turn_breakdown.py).
# Each server binds 127.0.0.1 only and is stopped before the next starts and on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/bench-server.sh

bins="${BRISVOX_BIN:-target/release/brisvox}"
bench="${BENCH_BIN:-target/release/brisvox-bench}"
runs="${RUNS:-6}"
port="${PORT:-18977}"
for b in $bins "$bench"; do
  [ -x "$b" ] || { echo "measure-local-turn: $b not found: build it first (scripts/run.sh; cargo build --release -p brisvox-bench)" >&2; exit 1; }
done
log="$(mktemp)"
trap 'bench_server_stop; rm -f "$log"' EXIT

written=()
measure() { # binary, tag
  local bin="$1" profile suffix what
  profile="$(basename "$(dirname "$bin")")"
  suffix="-$profile"
  [ "$profile" = quick ] && suffix=""
  suffix="$suffix$2"
  what="brisvox serve --agent bench/agents/local-demo.toml (local Whisper tiny.en, rules agent, local voice; Silero + Smart Turn), $bin (profile $profile)"
  bench_server_start "$bin" bench/agents/local-demo.toml "" "$log" "$port"
  for route in ${ROUTES:-call twilio}; do
    case "$route" in
      call)
        "$bench" v2v --url "ws://127.0.0.1:$port/call" \
          --fixture fixtures/librivox_0870.wav --fixture fixtures/phone_pls_hold_while_try_16k.wav \
          --fixture fixtures/en_long_question.wav --runs "$runs" \
          --label "$what" --out "bench/results/v2v-local-demo$suffix"
        written+=("bench/results/v2v-local-demo$suffix.json")
        ;;
      twilio)
        "$bench" v2v --url "ws://127.0.0.1:$port/twilio" \
          --fixture fixtures/phone_pls_hold_while_try_8k.wav --fixture fixtures/phone_vm_nobodyavail_8k.wav \
          --fixture fixtures/phone_please_try_call_later_8k.wav --runs "$runs" \
          --label "$what, over /twilio at 8 kHz" --out "bench/results/v2v-local-demo-twilio$suffix"
        written+=("bench/results/v2v-local-demo-twilio$suffix.json")
        ;;
      *) echo "measure-local-turn: unknown route $route (call, twilio)" >&2; exit 2 ;;
    esac
  done
  bench_server_stop
}

header="$(scripts/bench-header.sh "each run's binary (in its results file)" "BRISVOX_BIN=\"$bins\" RUNS=$runs ROUNDS=${ROUNDS:-1} ROUTES=\"${ROUTES:-call twilio}\" OUT_TAG=\"${OUT_TAG:-}\" scripts/measure-local-turn.sh")"
order="$bins"
for round in $(seq 1 "${ROUNDS:-1}"); do
  tag="${OUT_TAG:-}"
  [ "$round" -gt 1 ] && tag="$tag-r$round"
  for bin in $order; do measure "$bin" "$tag"; done
  order="$(tr ' ' '\n' <<<"$order" | tac | tr '\n' ' ')"
done

summary="bench/results/local-turn-breakdown${OUT_TAG:-}.md"
{
  echo "# A local turn's time, stage by stage (scripts/measure-local-turn.sh)"
  echo
  echo "$header"
  echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Each row is one run of $runs calls (its own results file beside this one)."
  echo "Medians of the answered turns; the server's stages are from the end of"
  echo "speech as the VAD placed it (the /twilio route sends no turn_metrics)."
  echo
  python3 bench/local_turn_breakdown.py "${written[@]}"
} >"$summary"
echo "measure-local-turn: wrote $summary"
