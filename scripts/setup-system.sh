#!/usr/bin/env bash
# Installs the Debian packages brisvox needs at run and test time, if missing:
#   espeak-ng   the local no-key TTS ([tts] provider = "local") and its tests
# Run as root it installs them with apt-get; otherwise it prints the command.
set -euo pipefail

packages=(espeak-ng)
missing=()
for p in "${packages[@]}"; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing[*]}: install with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "setup-system: installing ${missing[*]} ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
echo "setup-system: ${missing[*]} installed"
