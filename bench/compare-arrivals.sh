#!/usr/bin/env bash
# Both arrival modes side by side (#20 item 2): bench/compare.sh once per run and arrival
# mode, the modes interleaved within each run (aligned, poisson, aligned, poisson, ...) so
# that the machine's drift lands on both; inside each, brisvox then Pipecat as compare.sh
# does. Poisson run k uses SEED=k: both systems get the same draws in a run, and the runs
# differ.
#
# Usage: bench/compare-arrivals.sh [--runs R] [--modes "models"] [--out DIR]
# Environment: as bench/compare.sh (STEPS, MAX_RUN_S, RES_*, LOAD_MAX, SKIP_BUILD, ...);
# the release build, if any, happens once, before the first run.
# Output: DIR/aligned/ and DIR/poisson/, each a bench/compare.sh directory (runK files,
# header.txt of its first run, header-runK.txt of each, summary.md and summary.svg).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
modes="models"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
case "$runs" in ''|*[!0-9]*|0) echo "--runs must be a positive integer" >&2; exit 2 ;; esac
out="${out:-bench/results/compare/$(date -u +%Y-%m-%d)-arrivals}"

skip="${SKIP_BUILD:-0}"
for k in $(seq 1 "$runs"); do
  for arrivals in aligned poisson; do
    dir="$out/$arrivals"
    tmp="$out/.run-$arrivals-$k"
    rm -rf "$tmp"
    ARRIVALS="$arrivals" SEED="$k" SKIP_BUILD="$skip" bench/compare.sh --runs 1 --modes "$modes" --out "$tmp"
    skip=1
    mkdir -p "$dir"
    for f in "$tmp"/*-run1.*; do
      base="$(basename "$f")"
      mv "$f" "$dir/${base/-run1./-run$k.}"
    done
    [ -f "$dir/header.txt" ] || cp "$tmp/header.txt" "$dir/header.txt"
    mv "$tmp/header.txt" "$dir/header-run$k.txt"
    cp "$tmp"/agent-*.toml "$dir/"
    rm -rf "$tmp"
  done
done
for arrivals in aligned poisson; do
  python3 bench/compare_report.py "$out/$arrivals"
done
echo "compare-arrivals: wrote $out/aligned/summary.md and $out/poisson/summary.md" >&2
