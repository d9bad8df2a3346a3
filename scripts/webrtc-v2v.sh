#!/usr/bin/env bash
# V2V over WebRTC beside /call, in one run, against one server (issue #21):
# `brisvox serve --agent bench/agents/mock-models.toml` (mock STT/LLM/TTS of
# fixed latency, the real Silero VAD and Smart Turn) pinned to core 0, and
# `brisvox-bench v2v --transports call,webrtc` pinned to core 1, placing the
# calls in turn over /call (PCM16 over the websocket) and over WebRTC (the
# offer to /webrtc/offer, Opus over loopback UDP, the shared
# brisvox_testkit::webrtc caller), each fixture over both in a row. The
# report sets the transports side by side: V2V per transport (n, p50, p95,
# min, max), the server's own response latency per transport, the ratio of
# the p50s and p95s and the median of the paired differences.
#
#   BRISVOX_BIN [target/release/brisvox]
#   BENCH_BIN [target/release/brisvox-bench]
#   RUNS [24] calls in total (half per transport)
#   CONCURRENCY [1] calls at once (at most 4: a light run)
#   OUT [bench/results/webrtc-v2v] writes OUT.md and OUT.json
#   PORT [18979]
#   SERVER_CPU [0] BENCH_CPU [1] the cores (taskset -c)
#   NOTE [] a line for the report (what else ran on the machine)
# The server binds 127.0.0.1 only and is stopped on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/bench-server.sh

bin="${BRISVOX_BIN:-target/release/brisvox}"
bench="${BENCH_BIN:-target/release/brisvox-bench}"
runs="${RUNS:-24}"
concurrency="${CONCURRENCY:-1}"
out="${OUT:-bench/results/webrtc-v2v}"
port="${PORT:-18979}"
server_cpu="${SERVER_CPU:-0}"
bench_cpu="${BENCH_CPU:-1}"
agent=bench/agents/mock-models.toml
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "webrtc-v2v: $b not found: cargo build --release --locked -p brisvox-server -p brisvox-bench" >&2; exit 1; }
done
[ "$concurrency" -le 4 ] || { echo "webrtc-v2v: CONCURRENCY at most 4 (a light run)" >&2; exit 1; }
profile="$(basename "$(dirname "$bin")")"
mkdir -p "$(dirname "$out")"
log="$(mktemp)"
trap 'bench_server_stop; rm -f "$log"' EXIT

bench_server_start "$bin" "$agent" "$server_cpu" "$log" "$port"

# The fixtures of bench/results/v2v-sim-mock-models.md (16 kHz and 8 kHz).
fixtures=(fixtures/librivox_0870.wav fixtures/en_pause_in_sentence.wav fixtures/phone_pls_hold_while_try_8k.wav)
args=(v2v --url "ws://127.0.0.1:$port/call" --transports call,webrtc --runs "$runs" --concurrency "$concurrency")
for f in "${fixtures[@]}"; do args+=(--fixture "$f"); done
label="brisvox serve --agent $agent ($bin, profile $profile) on core $server_cpu, brisvox-bench on core $bench_cpu"
[ -n "${NOTE:-}" ] && label="$label; $NOTE"
taskset -c "$bench_cpu" "$bench" "${args[@]}" --out "$out" --label "$label"
bench_server_stop
echo "webrtc-v2v: wrote $out.md and $out.json" >&2
