#!/usr/bin/env bash
# Installs Debian packages brisvox needs at run and test time, if missing.
# With no arguments:
#   espeak-ng   the local no-key TTS ([tts] provider = "local") and its tests
# Arguments name other packages as PACKAGE or PACKAGE:COMMAND (the program whose
# absence means the package is missing), e.g. `chromium nodejs:node npm` for
# the browser test (tests/browser/setup.sh).
# Run as root it installs them with apt-get; otherwise it prints the command.
set -euo pipefail

[ $# -gt 0 ] || set -- espeak-ng
missing=()
for spec in "$@"; do
  command -v "${spec#*:}" >/dev/null 2>&1 || missing+=("${spec%%:*}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
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
