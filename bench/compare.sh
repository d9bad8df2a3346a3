#!/usr/bin/env bash
# Side by side: brisvox serve against the Pipecat peer (bench/pipecat_baseline), the same
# brisvox-bench capacity ramp against each, the server pinned to core 0 and the load
# generator to core 1 (a 2-core machine), with and without the models, runs interleaved
# (brisvox, Pipecat, brisvox, Pipecat, ...). Then bench/compare_report.py writes
# summary.md and summary.svg next to the run files.
#
# Usage: bench/compare.sh [--runs R] [--modes "models no-models"] [--out DIR]
# Environment (defaults in brackets):
#   STEPS [1,2,4,8,16,32,64,128,256,512]   the ramp of concurrent calls (Pipecat; brisvox with
#       the models)
#   STEPS_BRISVOX_NO_MODELS [STEPS,768,1024,1536,2048]   brisvox without the models (it passed 512)
#   RES_BRISVOX [8] RES_PIPECAT [1]          bisection resolution (calls)
#   MAX_RUN_S [300]                          no new step starts after this (one step is ~30 s)
#   MAX_RUN_S_BRISVOX_NO_MODELS [600]        the same for brisvox without the models (longer ramp)
#   FIXTURE_MODELS [fixtures/librivox_0870.wav]      (en_two_utterances' first utterance is
#       scored incomplete by Smart Turn v3.2 on both systems: its answer runs into the second
#       utterance, every call would have an unclean turn; bench/pipecat_baseline/README.md)
#   FIXTURE_NO_MODELS [fixtures/en_two_utterances.wav]
#   FLOOR_MS []      a fixed floor for both systems (default: each run's 1-call warm-up p50)
#   ARRIVALS [aligned]  poisson: calls arrive as a Poisson process and each plays one of
#       FIXTURES_POISSON_<MODE> from a random point of silence (brisvox-bench capacity
#       --arrivals poisson, seed SEED [1]: the draws of a step are reproducible)
#   FIXTURES_POISSON_MODELS [fixtures/librivox_0870.wav,fixtures/librivox_0890.wav,fixtures/en_pause_in_sentence.wav,fixtures/phone_vm_sorry_16k.wav]
#       (utterances Smart Turn v3.2 scores complete: bench/pipecat_baseline/README.md)
#   FIXTURES_POISSON_NO_MODELS [fixtures/en_two_utterances.wav,fixtures/en_long_question.wav,fixtures/librivox_0870.wav]
#   FRAME_MS [40]    the duration of each server's audio messages, asked for in start's
#       frame_ms on both systems (brisvox-bench capacity --frame-ms): 40 ms is what
#       Pipecat's websocket transports send unasked (audio_out_10ms_chunks = 4); both
#       servers send 20 ms messages with FRAME_MS=20
#   SERVER_CORE [0] CLIENT_CORE [1] PORT [18931]
#   LOAD_MAX [2.5]   wait up to 10 min for the 1-minute load average to fall below this
#   MAX_CALLS [4096] brisvox's [limits] max_calls (see agent-<mode>.toml in the output)
#   SKIP_BUILD [0]   1: use the existing target/release binaries
# brisvox runs also read the server's /metrics before and after each step (--metrics-url:
# Smart Turn and VAD queue waits, refused and dropped work, in each step's JSON and a column).
# Every server binds 127.0.0.1 only and is stopped after its run (and on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

runs=3
modes="models no-models"
date_dir="$(date -u +%Y-%m-%d)"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out="${out:-bench/results/compare/$date_dir}"
steps="${STEPS:-1,2,4,8,16,32,64,128,256,512}"
steps_b_nomodels="${STEPS_BRISVOX_NO_MODELS:-$steps,768,1024,1536,2048}"
max_run_s_b_nomodels="${MAX_RUN_S_BRISVOX_NO_MODELS:-600}"
res_b="${RES_BRISVOX:-8}"
res_p="${RES_PIPECAT:-1}"
max_run_s="${MAX_RUN_S:-300}"
fx_models="${FIXTURE_MODELS:-fixtures/librivox_0870.wav}"
fx_nomodels="${FIXTURE_NO_MODELS:-fixtures/en_two_utterances.wav}"
arrivals="${ARRIVALS:-aligned}"
frame_ms="${FRAME_MS:-40}"
seed="${SEED:-1}"
fxs_models="${FIXTURES_POISSON_MODELS:-fixtures/librivox_0870.wav,fixtures/librivox_0890.wav,fixtures/en_pause_in_sentence.wav,fixtures/phone_vm_sorry_16k.wav}"
fxs_nomodels="${FIXTURES_POISSON_NO_MODELS:-fixtures/en_two_utterances.wav,fixtures/en_long_question.wav,fixtures/librivox_0870.wav}"
case "$arrivals" in aligned|poisson) ;; *) echo "ARRIVALS must be aligned or poisson" >&2; exit 2 ;; esac
score="${SERVER_CORE:-0}"
ccore="${CLIENT_CORE:-1}"
port="${PORT:-18931}"
command_line="bench/compare.sh --runs $runs --modes \"$modes\" (STEPS=$steps STEPS_BRISVOX_NO_MODELS=$steps_b_nomodels MAX_RUN_S_BRISVOX_NO_MODELS=$max_run_s_b_nomodels RES_BRISVOX=$res_b RES_PIPECAT=$res_p MAX_RUN_S=$max_run_s FIXTURE_MODELS=$fx_models FIXTURE_NO_MODELS=$fx_nomodels FLOOR_MS=${FLOOR_MS:-warm-up} MAX_CALLS=${MAX_CALLS:-4096} FRAME_MS=$frame_ms ARRIVALS=$arrivals$([ "$arrivals" = poisson ] && echo " SEED=$seed FIXTURES_POISSON_MODELS=$fxs_models FIXTURES_POISSON_NO_MODELS=$fxs_nomodels" || true))"

case "$runs" in ''|*[!0-9]*) echo "--runs needs a number" >&2; exit 2 ;; esac
[ "$runs" -ge 1 ] && [ "$runs" -le 10 ] || { echo "--runs must be 1..10" >&2; exit 2; }

server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    # Pipecat with --workers > 1 has children; they are in the server's process group
    pkill -KILL -g "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cargo build --release -p brisvox-server -p brisvox-bench
fi
[ -x target/release/brisvox ] && [ -x target/release/brisvox-bench ] || { echo "release binaries missing" >&2; exit 1; }
py=bench/pipecat_baseline/.venv/bin/python
[ -x "$py" ] || bench/pipecat_baseline/install.sh
pipecat_version="$("$py" -c 'import importlib.metadata as m; print(m.version("pipecat-ai"))')"

# Quiet-host gate: wait (every 30 s, at most 10 min) for the 1-minute load to fall below
# LOAD_MAX [2.5]; then go on either way (the load at the start of each run is in its files).
load_max="${LOAD_MAX:-2.5}"
for i in $(seq 1 21); do
  load1="$(cut -d' ' -f1 /proc/loadavg)"
  awk -v l="$load1" -v m="$load_max" 'BEGIN{exit !(l < m)}' && break
  [ "$i" = 21 ] && { echo "compare: load $load1 still >= $load_max after 10 min; running anyway" >&2; break; }
  echo "compare: load $load1 >= $load_max, waiting 30 s ($i/20)" >&2
  sleep 30
done

mkdir -p "$out"
{
  scripts/bench-header.sh release "$command_line"
  echo "- pipecat-ai $pipecat_version, $("$py" --version 2>&1)"
  echo "- commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock || echo ' + uncommitted changes under crates/'), build: $([ "${SKIP_BUILD:-0}" = 1 ] && echo 'existing target/release (SKIP_BUILD=1)' || echo 'cargo build --release by this script')"
  echo "- server on core $score, load generator on core $ccore (taskset -c)"
  echo "- both servers asked for ${frame_ms} ms audio messages (start's frame_ms; brisvox-bench capacity --frame-ms)"
} > "$out/header.txt"

# brisvox's agent files: bench/agents/mock-<mode>.toml with [limits] max_calls raised from
# its default (100: the server refuses the 101st call with server_full, a configured cap,
# not the engine's limit) to MAX_CALLS [4096], written next to the results.
max_calls="${MAX_CALLS:-4096}"
for mode in $modes; do
  src="bench/agents/mock-$mode.toml"
  # max_calls is set inside [limits] wherever that section sits (the carrier sections
  # follow it); a max_calls already there is replaced, not doubled (a TOML key given
  # twice is an error); without a [limits] section one is appended.
  awk -v n="$max_calls" '
    function put() { print "# set by bench/compare.sh: the default cap of 100 calls would end the ramp"; print "max_calls = " n; done = 1 }
    /^\[/ { if (inlim && !done) put(); inlim = ($0 == "[limits]"); seen = seen || inlim; print; next }
    inlim && /^max_calls[ =]/ { if (!done) put(); next }
    { print }
    END { if (!done) { if (!seen) print "[limits]"; put() } }' "$src" > "$out/agent-$mode.toml"
done

# Waits (bounded) until 127.0.0.1:$1 accepts a TCP connection while $2 lives.
wait_port() {
  local p="$1" pid="$2" i
  for i in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  return 1
}

run_one() { # system mode k
  local system="$1" mode="$2" k="$3" name="$1-$2-run$3" fixture res label
  local run_steps="$steps" run_max_s="$max_run_s" metrics=()
  if [ "$mode" = models ]; then fixture="$fx_models"; else fixture="$fx_nomodels"; fi
  local log="$out/$name.server.log"
  if [ "$system" = brisvox ]; then
    res="$res_b"
    metrics=(--metrics-url "http://127.0.0.1:$port/metrics")
    if [ "$mode" = no-models ]; then run_steps="$steps_b_nomodels"; run_max_s="$max_run_s_b_nomodels"; fi
    label="brisvox serve --agent $out/agent-$mode.toml (bench/agents/mock-$mode.toml + max_calls = $max_calls) --bind 127.0.0.1:$port, taskset -c $score, release"
    setsid taskset -c "$score" target/release/brisvox serve --agent "$out/agent-$mode.toml" \
      --bind "127.0.0.1:$port" > "$log" 2>&1 &
  else
    res="$res_p"
    local flag=""; [ "$mode" = no-models ] && flag="--no-models"
    label="Pipecat $pipecat_version peer: bot.py --port $port $flag (1 process), taskset -c $score"
    # shellcheck disable=SC2086
    setsid taskset -c "$score" "$py" bench/pipecat_baseline/bot.py --port "$port" $flag > "$log" 2>&1 &
  fi
  server_pid=$!
  if ! wait_port "$port" "$server_pid"; then
    echo "compare: $name: server did not come up (log $log)" >&2
    stop_server; return 1
  fi
  local floor=(); [ -n "${FLOOR_MS:-}" ] && floor=(--floor-ms "$FLOOR_MS")
  local arrive=()
  if [ "$arrivals" = poisson ]; then
    arrive=(--arrivals poisson --seed "$seed" --fixtures "$([ "$mode" = models ] && echo "$fxs_models" || echo "$fxs_nomodels")")
  fi
  echo "compare: $name: load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" >&2
  timeout --kill-after=10 "$((run_max_s + 300))" \
    taskset -c "$ccore" target/release/brisvox-bench capacity --url "ws://127.0.0.1:$port/call" \
    --server-pid "$server_pid" --fixture "$fixture" --steps "$run_steps" --resolution "$res" \
    --max-run-s "$run_max_s" --client-workers 1 --frame-ms "$frame_ms" "${floor[@]}" "${arrive[@]}" "${metrics[@]}" --label "$label" \
    --out "$out/$name" || echo "compare: $name: capacity exited with $?" >&2
  stop_server
  # keep the log short in the repository: the last lines only
  tail -n 40 "$log" > "$log.tmp" && mv "$log.tmp" "$log"
  sleep 2
}

for mode in $modes; do
  for k in $(seq 1 "$runs"); do
    run_one brisvox "$mode" "$k" || true
    run_one pipecat "$mode" "$k" || true
  done
done

python3 bench/compare_report.py "$out"
echo "compare: wrote $out/summary.md and $out/summary.svg" >&2
