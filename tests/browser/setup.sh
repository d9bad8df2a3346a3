#!/usr/bin/env bash
# Sets up the browser test, idempotently (scripts/test.sh runs it every time):
# the Debian packages chromium, nodejs and npm when their programs are missing
# (scripts/setup-system.sh; apt-get as root), then the one npm dependency,
# playwright-core pinned in package-lock.json, into tests/browser/node_modules
# with `npm ci` (the npm registry, or npm's cache when it holds the package).
# Playwright downloads no browser: the test drives Debian's /usr/bin/chromium.
# playwright-core is pinned to 1.61.1: 1.62 needs node 20, Debian bookworm has 18.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
start=$SECONDS
fail() { echo "browser setup: $*" >&2; exit 1; }

if [ -z "${CHROMIUM:-}" ]; then
  "$here/../../scripts/setup-system.sh" chromium nodejs:node npm
else
  [ -x "$CHROMIUM" ] || fail "CHROMIUM=$CHROMIUM is not an executable"
  "$here/../../scripts/setup-system.sh" nodejs:node npm
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 18 ] || fail "node $(node --version) is too old: playwright-core needs node 18 or newer"

cd "$here"
want="$(node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version')"
have="$(node -p 'try { require("./node_modules/playwright-core/package.json").version } catch (_) { "" }')"
if [ "$have" != "$want" ]; then
  echo "browser setup: npm ci (playwright-core $want) ..."
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 300 npm ci --prefer-offline --no-audit --no-fund --loglevel=error \
    || fail "npm ci failed: it needs the npm registry (or npm's cache holding playwright-core@$want)"
fi
echo "browser setup: chromium $("${CHROMIUM:-chromium}" --version 2>/dev/null | awk '{print $2}'), node $(node --version), playwright-core $want; took $((SECONDS - start)) s"
