#!/usr/bin/env bash
# Installs the browser test's one npm dependency (playwright-core, pinned in
# package-lock.json) into tests/browser/node_modules. The browser is Debian's
# chromium (apt-get install -y chromium); playwright downloads nothing.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "node is missing (apt-get install -y nodejs npm)" >&2; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "chromium is missing (apt-get install -y chromium)" >&2; exit 1; }
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 300 npm ci --no-audit --no-fund
