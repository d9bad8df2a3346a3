#!/usr/bin/env bash
# Installs the system packages brisvox needs at run and test time, if missing.
# With no arguments:
#   espeak-ng     the local no-key TTS ([tts] provider = "local") and its tests
#   libopus-dev   the Opus codec of the WebRTC route, linked into the server
#   libssl-dev    OpenSSL, DTLS-SRTP of the WebRTC route (str0m), and pkg-config
#                 to find it
# Arguments name other packages as PACKAGE or PACKAGE:COMMAND (the program whose
# absence means the package is missing), e.g. `chromium nodejs:node npm` for
# the browser test (tests/browser/setup.sh), or PACKAGE@LIBRARY for a C library
# to link against (missing when the C compiler does not find libLIBRARY.so;
# without a C compiler nothing can be linked, so the check is left to the
# build's own error). PACKAGE is Debian's name.
# Nothing to do (and no root needed) when the programs are there. Otherwise,
# run as root on a system with apt-get (Debian, Ubuntu) it installs them;
# elsewhere it names the packages and the command that installs them on this
# system (dnf, zypper, pacman, apk or brew, with their names for the
# packages), and fails.
#
# `setup-system.sh --hint PACKAGE...` only prints that command for the given
# (Debian) package names, whatever is installed (scripts/fetch-models.sh uses
# it when pip is missing).
set -euo pipefail

# The command that installs Debian's packages "$@" on this system, with this
# system's names for them.
install_hint() {
  local manager="" cmd="" sudo="sudo " names=() p
  for m in apt-get dnf zypper pacman apk brew; do
    if command -v "$m" >/dev/null 2>&1; then manager="$m"; break; fi
  done
  [ "$(id -u)" -eq 0 ] && sudo=""
  for p in "$@"; do
    case "$manager:$p" in
      pacman:python3-pip) names+=(python-pip) ;;
      apk:python3-pip) names+=(py3-pip) ;;
      brew:python3-pip) names+=(python) ;;
      dnf:libopus-dev) names+=(opus-devel) ;;
      zypper:libopus-dev) names+=(libopus-devel) ;;
      pacman:libopus-dev | brew:libopus-dev) names+=(opus) ;;
      apk:libopus-dev) names+=(opus-dev) ;;
      dnf:libssl-dev) names+=(openssl-devel) ;;
      zypper:libssl-dev) names+=(libopenssl-devel) ;;
      pacman:libssl-dev | brew:libssl-dev) names+=(openssl) ;;
      apk:libssl-dev) names+=(openssl-dev) ;;
      *) names+=("$p") ;;
    esac
  done
  case "$manager" in
    apt-get) cmd="${sudo}apt-get install -y" ;;
    dnf) cmd="${sudo}dnf install -y" ;;
    zypper) cmd="${sudo}zypper install -y" ;;
    pacman) cmd="${sudo}pacman -S --needed" ;;
    apk) cmd="${sudo}apk add" ;;
    brew) cmd="brew install" ;;
    *)
      echo "your system's package manager (these are Debian's names; yours may differ slightly): ${names[*]}"
      return
      ;;
  esac
  echo "$cmd ${names[*]}"
}

if [ "${1:-}" = "--hint" ]; then
  shift
  install_hint "$@"
  exit 0
fi

# Whether the linker finds libNAME.so (cc prints the bare name when it does
# not); true when there is no C compiler to ask.
has_library() {
  local cc="${CC:-cc}" found
  command -v "$cc" >/dev/null 2>&1 || return 0
  found="$("$cc" -print-file-name="lib$1.so" 2>/dev/null)" || return 1
  [ "$found" != "lib$1.so" ]
}

[ $# -gt 0 ] || set -- espeak-ng libopus-dev@opus libssl-dev@ssl pkg-config
missing=()
for spec in "$@"; do
  case "$spec" in
    *@*) has_library "${spec#*@}" || missing+=("${spec%%@*}") ;;
    *) command -v "${spec#*:}" >/dev/null 2>&1 || missing+=("${spec%%:*}") ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
  echo "setup-system: missing ${missing[*]}: install with: $(install_hint "${missing[@]}")" >&2
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
