#!/usr/bin/env bash
# The browser test: builds `brisvox` (debug, the build `cargo test` already
# makes; BRISVOX_PROFILE=release for a release build; BRISVOX_BIN to skip),
# then drives the demo page in headless chromium with a fake microphone
# (tests/browser/demo.mjs). Bounded by timeout. Screenshot and the
# fake microphone's WAV land in target/browser-test/ (OUT_DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
[ -d "$here/node_modules/playwright-core" ] || "$here/setup.sh"
if [ -z "${BRISVOX_BIN:-}" ]; then
  profile="${BRISVOX_PROFILE:-debug}"
  target="${CARGO_TARGET_DIR:-$root/target}"
  flag=(); [ "$profile" = release ] && flag=(--release)
  timeout 3600 cargo build "${flag[@]}" -p brisvox-server --bin brisvox
  BRISVOX_BIN="$target/$profile/brisvox"
fi
export BRISVOX_BIN
start=$(date +%s)
timeout "${BROWSER_TEST_TIMEOUT_S:-120}" node "$here/demo.mjs"
echo "browser test took $(( $(date +%s) - start )) s"
