#!/usr/bin/env bash
# The local STT's real-model tests, with the timings they print: fetches
# Whisper tiny.en (scripts/fetch-models.sh --whisper), then runs
#   - brisvox-models' Whisper test (a recording, a forced prefix, silence);
#   - the server's fixtures test: the speech fixtures through LocalStt, once
#     as fast as the session takes them (partials off) and once in real time
#     with partials on (BRISVOX_STT_PACED=1, about a minute), each with its
#     word error rate and the time from each finalize to its final;
#   - the /twilio call of three Allison prompts through the local demo.
# CI (scripts/test.sh) runs the same tests without the paced run.
#
# Usage: scripts/test-local-stt.sh [--release]   (release: the timings of bench/results/local-stt.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile=()
[ "${1:-}" = "--release" ] && profile=(--release)
scripts/fetch-models.sh --whisper
cargo test "${profile[@]}" --locked -p brisvox-models --test whisper_transcribes_a_recording -- --nocapture
BRISVOX_STT_PACED=1 cargo test "${profile[@]}" --locked -p brisvox-server \
  --test local_stt_whisper_transcribes_the_fixtures \
  --test twilio_local_demo_answers_every_prompt -- --nocapture --test-threads 1
