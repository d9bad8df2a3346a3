#!/usr/bin/env bash
# Installs the system packages brisvox needs at run and test time, if missing.
# With no arguments:
#   espeak-ng   the local no-key TTS ([tts] provider = "local") and its tests
# Arguments name other packages as PACKAGE or PACKAGE:COMMAND (the program whose
# absence means the package is missing), e.g. `chromium nodejs:node npm` for
# the browser test (tests/browser/setup.sh).
# Nothing to do (and no root needed) when the programs are there. Otherwise,
# run as root on a system with apt-get (Debian, Ubuntu) it installs them;
# elsewhere it names the packages to install and fails.
set -euo pipefail

[ $# -gt 0 ] || set -- espeak-ng
missing=()
for spec in "$@"; do
  command -v "${spec#*:}" >/dev/null 2>&1 || missing+=("${spec%%:*}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing[*]}: install these packages with your system's package manager" \
    "(the names are Debian's; e.g. dnf install, pacman -S or brew install under the same or similar names)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-system: missing ${missing[*]}: install with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "setup-system: installing ${missing[*]} ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
if ! apt-get install -y -qq "${missing[@]}" >/dev/null; then
  echo "setup-system: apt-get install ${missing[*]} failed (is a Debian mirror reachable?)" >&2
  exit 1
fi
echo "setup-system: ${missing[*]} installed"
