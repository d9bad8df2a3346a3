#!/usr/bin/env bash
# The local STT's real-model test (not part of CI: it needs the cargo feature
# local-stt, whose first build compiles CTranslate2 from C++ source for many
# minutes). Installs cmake when missing (as root), fetches Whisper tiny.en
# (scripts/fetch-models.sh --whisper), then runs the adapter's tests with the
# feature: the fake-recognizer tests and
# tests/local_stt_whisper_transcribes_the_fixtures.rs, which transcribes the
# speech fixtures with the real model, checks a loose word error rate and
# prints each utterance's recognition time; and the server's local-STT tests.
#
# Usage: scripts/test-local-stt.sh [--release]   (release: the timings of bench/results/local-stt.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile=()
[ "${1:-}" = "--release" ] && profile=(--release)
scripts/setup-system.sh cmake g++
scripts/fetch-models.sh --whisper
cargo test "${profile[@]}" --locked -p brisvox-providers --features local-stt \
  --test local_stt_whisper_transcribes_the_fixtures \
  --test local_stt_answers_each_utterance_at_finalize \
  --test local_stt_failures_and_limits_are_reported -- --nocapture --test-threads 1
cargo test "${profile[@]}" --locked -p brisvox-server --features local-stt \
  --test local_stt_is_refused_without_its_feature_or_model
