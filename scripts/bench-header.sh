#!/usr/bin/env bash
# Prints the header every bench/results file starts with: the command, the machine, the build profile and the date.
# Usage: scripts/bench-header.sh PROFILE COMMAND...
set -euo pipefail
profile="$1"; shift
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "- command: \`$*\`"
echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- build profile: $profile, $(rustc --version)"
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
