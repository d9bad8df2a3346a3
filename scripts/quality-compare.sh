#!/usr/bin/env bash
# Conversation quality side by side (issue #15): brisvox-bench quality over every
# fixture (fixtures/*.wav and fixtures/quality/*.wav), one call at a time, against
#   1. brisvox (`--sim`: the real server and /call route in this process, real Silero
#      and Smart Turn, mock LLM/TTS, the mock STT's timed words), bench/agents/quality.toml;
#   2. the same with speculative LLM start, bench/agents/quality-speculation.toml;
#   3. the Pipecat peer (bench/pipecat_baseline/bot.py: Silero + Smart Turn v3.2, its
#      mock STT, LLM and TTS with the same latencies and the same answer);
#   4. brisvox with interruption by the VAD alone, as the peer interrupts
#      (bench/agents/quality-vad-only.toml), on the fixtures with speech over the
#      bot only: what the default interruption policy adds to the barge-in time.
# Then bench/quality_report.py writes summary.md next to the run files.
#
# Usage: scripts/quality-compare.sh [--out DIR] [--runs N]
# Environment: PORT [18961], SKIP_BUILD [0] (1: use target/release/brisvox-bench as it is)
# The Pipecat peer binds 127.0.0.1 only and is stopped after its run (and on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
out="bench/results/quality/$(date -u +%Y-%m-%d)"
runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
port="${PORT:-18961}"
mkdir -p "$out"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cargo build --release --locked -p brisvox-bench
fi
bench=target/release/brisvox-bench
answer="$(sed -n 's/^answer = "\(.*\)"$/\1/p' bench/agents/quality.toml)"
[ -n "$answer" ] || { echo "quality-compare: no [llm.mock] answer in bench/agents/quality.toml" >&2; exit 1; }

server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap stop_server EXIT

"$bench" quality --sim --runs "$runs" --label "brisvox, speculation off" --out "$out/brisvox"
"$bench" quality --sim --runs "$runs" --agent bench/agents/quality-speculation.toml \
  --label "brisvox, speculation on" --out "$out/brisvox-speculation"

over_bot=()
for f in fixtures/quality/quality_barge_in_*.wav fixtures/quality/quality_backchannel_*.wav \
         fixtures/quality/quality_short_yes_over_bot.wav fixtures/quality/quality_cough_over_bot.wav; do
  over_bot+=(--fixture "$f")
done
"$bench" quality --sim --runs "$runs" --agent bench/agents/quality-vad-only.toml "${over_bot[@]}" \
  --label "brisvox, interruption by the VAD alone (fixtures with speech over the bot only)" \
  --out "$out/brisvox-vad-only"

py=bench/pipecat_baseline/.venv/bin/python
[ -x "$py" ] || bench/pipecat_baseline/install.sh
"$py" bench/pipecat_baseline/bot.py --port "$port" --answer "$answer" > "$out/pipecat.server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
  kill -0 "$server_pid" 2>/dev/null || { echo "quality-compare: the Pipecat peer exited (log $out/pipecat.server.log)" >&2; exit 1; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.5
done
version="$("$py" -c 'import importlib.metadata as m; print(m.version("pipecat-ai"))')"
"$bench" quality --url "ws://127.0.0.1:$port/call" --runs "$runs" \
  --label "Pipecat $version peer (bot.py --answer as bench/agents/quality.toml), Silero + Smart Turn v3.2" \
  --out "$out/pipecat"
stop_server
python3 bench/quality_report.py "$out"
