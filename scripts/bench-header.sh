#!/usr/bin/env bash
# Prints the header every bench/results file starts with: the command, the machine, the build profile and the date.
# Usage: scripts/bench-header.sh PROFILE COMMAND...
set -euo pipefail
profile="$1"; shift
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "- command: \`$*\`"
# The machine's cores (nproc alone counts only those this process may use:
# under taskset it would say 1 on a 2-core machine).
cores="$(nproc --all) cores"
[ "$(nproc)" = "$(nproc --all)" ] || cores="$cores (this command pinned to $(nproc))"
echo "- machine: ${cpu:-unknown CPU}, $cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- build profile: $profile, $(rustc --version)"
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
