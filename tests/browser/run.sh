#!/usr/bin/env bash
# The browser test (scripts/test.sh runs it after cargo test, with BRISVOX_BIN
# set to the binary cargo test built). Without BRISVOX_BIN it builds `brisvox`
# (debug; BRISVOX_PROFILE=release for a release build),
# sets up chromium/node/playwright-core if needed (setup.sh), then drives the
# demo page in headless chromium with a fake microphone (demo.mjs): over
# WebRTC, over the websocket, and over WebRTC through 5 % packet loss (with
# brisvox-bench's lossy proxy, BENCH_BIN, beside the server binary). Bounded by
# BROWSER_TEST_TIMEOUT_S (default 180 s). The screenshot and the fake
# microphone's WAV land in target/browser-test/ (OUT_DIR). Exits non-zero on
# any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
"$here/setup.sh"
if [ -z "${BRISVOX_BIN:-}" ]; then
  profile="${BRISVOX_PROFILE:-debug}"
  target="${CARGO_TARGET_DIR:-$root/target}"
  flag=(); [ "$profile" = release ] && flag=(--release)
  timeout 3600 cargo build --locked "${flag[@]}" -p brisvox-server --bin brisvox -p brisvox-bench --bin brisvox-bench
  BRISVOX_BIN="$target/$profile/brisvox"
fi
[ -x "$BRISVOX_BIN" ] || { echo "browser test: no server binary at $BRISVOX_BIN" >&2; exit 1; }
BRISVOX_BIN="$(cd "$(dirname "$BRISVOX_BIN")" && pwd)/$(basename "$BRISVOX_BIN")"
# The loss call's proxy (brisvox-bench lossy-proxy), beside the server binary.
BENCH_BIN="${BENCH_BIN:-$(dirname "$BRISVOX_BIN")/brisvox-bench}"
[ -x "$BENCH_BIN" ] || { echo "browser test: no brisvox-bench at $BENCH_BIN (the loss call's proxy)" >&2; exit 1; }
export BRISVOX_BIN BENCH_BIN
start=$SECONDS
# SIGTERM at the limit (demo.mjs then stops the server and exits), SIGKILL 15 s later.
timeout -k 15 "${BROWSER_TEST_TIMEOUT_S:-180}" node "$here/demo.mjs"
echo "browser test took $((SECONDS - start)) s"
