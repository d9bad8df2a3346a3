#!/usr/bin/env bash
# A coverage-guided fuzz campaign over every parser of untrusted input
# (crates/brisvox-fuzz), with AFL++ through cargo-afl on the pinned stable
# toolchain. For each target, in turn, on one core:
#   1. afl-fuzz from the kept corpus (fuzz/corpus/<target>/; the seeds when it
#      is empty) until EXECS executions or MINUTES minutes, whichever first,
#      with a dictionary of the JSON/TOML tokens of its seeds;
#   2. afl-cmin minimises the queue into fuzz/corpus/<target>/ (committed;
#      CI replays it: crates/brisvox-fuzz/tests/corpus_replays_cleanly.rs);
#   3. every crash and hang is copied to fuzz/crashes/<target>/ (committed):
#      each becomes a regression test in the owning crate (fuzz/README.md);
#   4. a row of figures (executions, time, corpus, crashes, hangs, coverage)
#      goes to the results file, rewritten after each target.
#
# Usage: scripts/fuzz-campaign.sh [--execs N] [--minutes M] [--core C]
#                                 [--results FILE] [TARGET...]
#   defaults: --execs 1000000 --minutes 30 --core 1, every target,
#   results in bench/results/fuzz-campaign-<UTC date>.md.
# Needs cargo-afl (`cargo install cargo-afl --locked`; its install builds
# AFL++). The AFL build goes to fuzz/target (delete it after: several GB).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

execs=1000000
minutes=30
core=1
results=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --execs) execs="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --core) core="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "fuzz-campaign: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
command -v cargo-afl >/dev/null || {
  echo "fuzz-campaign: cargo-afl is missing: cargo install cargo-afl --locked" >&2; exit 1; }

started_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
results="${results:-bench/results/fuzz-campaign-$(date -u +%Y-%m-%d).md}"
cmdline="scripts/fuzz-campaign.sh --execs $execs --minutes $minutes --core $core${targets[*]:+ ${targets[*]}}"

echo "fuzz-campaign: building the seeds tool and the AFL binary"
cargo build --locked -q -p brisvox-fuzz --bin brisvox-fuzz-seeds
seeds_dir="$(mktemp -d)"
trap 'rm -rf "$seeds_dir"' EXIT
"${CARGO_TARGET_DIR:-target}/debug/brisvox-fuzz-seeds" "$seeds_dir" >/dev/null
(cd fuzz && CARGO_TARGET_DIR="$root/fuzz/target" cargo afl build --release -q)
bin="$root/fuzz/target/release/brisvox-afl"
# cargo-afl's own AFL++ tools; the bash afl-cmin (its Python one finds no
# coverage with this build).
afl_bin="$(dirname "$(cargo afl fuzz -h 2>&1 | grep -o '/[^ ]*/afl-fuzz' | head -1)")"
[ -x "$afl_bin/afl-cmin.bash" ] || { echo "fuzz-campaign: afl-cmin.bash not found in $afl_bin" >&2; exit 1; }
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(ls "$seeds_dir")
fi

# AFL++ without a UI, on the core given (not the one it would pick), and
# without asking for root-only tuning of the machine.
export AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 \
  AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SUPPRESS_HW_WARN=1

# The quoted strings and bare words of the seeds, as an AFL dictionary.
dictionary() {
  python3 - "$1" "$2" <<'PY'
import os, re, sys
seeds, out = sys.argv[1], sys.argv[2]
tokens = set()
for name in os.listdir(seeds):
    data = open(os.path.join(seeds, name), "rb").read()
    tokens.update(re.findall(rb'"[A-Za-z_][A-Za-z0-9_.:-]{0,30}"', data))
    tokens.update(re.findall(rb'\b[a-z_]{3,24}\b', data))
tokens.update([b'"', b'{', b'}', b'[', b']', b':', b',', b'null', b'true', b'false', b'\\u0000', b'1e999', b'-0'])
with open(out, "w") as f:
    for i, t in enumerate(sorted(tokens)):
        esc = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c) for c in t.decode("latin-1"))
        f.write('t%d="%s"\n' % (i, esc))
PY
}

stat_of() { sed -n "s/^$1 *: *//p" "$2" | head -1; }

# The results file, rewritten after each target (a campaign cut short keeps
# the figures of the targets it finished). $1: "ended" or "last written".
write_results() {
  {
    echo "# Fuzz campaign: AFL++ over every parser of untrusted input"
    echo
    echo "Command: \`$cmdline\`"
    echo
    echo "- Machine: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc --all) cores, $(uname -sr); shared with other work"
    echo "- Load average: at the start of the last target done $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min), each target pinned to core $core"
    echo "- Build: \`cargo afl build --release\` (opt-level 3, debug assertions and overflow checks on), $(rustc --version), cargo-afl $(cargo afl --version 2>/dev/null | awk '{print $2}'), AFL++ $(cargo afl fuzz -h 2>&1 | grep -o 'afl-fuzz++[0-9.a-z]*' | head -1 | sed 's/afl-fuzz++//')"
    echo "- Started $started_utc, $1 $(date -u +%Y-%m-%dT%H:%M:%SZ) (${#rows[@]} of ${#targets[@]} targets done)"
    echo "- Stops at $execs executions or $minutes minutes per target, whichever first"
    echo
    echo "| target | executions | time (s) | exec/s | queue | kept corpus (afl-cmin) | crashes | hangs | map coverage |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Crashes and hangs are kept in \`fuzz/crashes/<target>/\` and each becomes a regression test in the owning crate (fuzz/README.md)."
  } >"$results"
}

rows=()
for t in "${targets[@]}"; do
  [ -d "$seeds_dir/$t" ] || { echo "fuzz-campaign: unknown target $t" >&2; exit 2; }
  corpus="fuzz/corpus/$t"
  mkdir -p "$corpus"
  input="$corpus"
  [ -n "$(ls -A "$corpus")" ] || input="$seeds_dir/$t"
  out="fuzz/findings/$t"
  rm -rf "$out"
  mkdir -p fuzz/findings
  dict="$seeds_dir/$t.dict"
  dictionary "$seeds_dir/$t" "$dict"
  echo "fuzz-campaign: $t: from $(ls "$input" | wc -l) inputs, up to $execs executions or $minutes min, core $core"
  taskset -c "$core" cargo afl fuzz -i "$input" -o "$out" -x "$dict" -t 1000 -m none \
    -E "$execs" -V "$((minutes * 60))" -- "$bin" "$t" >"$out.log" 2>&1 \
    || { echo "fuzz-campaign: afl-fuzz failed on $t:"; tail -20 "$out.log"; exit 1; }
  stats="$out/default/fuzzer_stats"
  queue_n=$(ls "$out/default/queue" | grep -c '^id' || true)
  kept="$(mktemp -d)"
  taskset -c "$core" "$afl_bin/afl-cmin.bash" -i "$out/default/queue" -o "$kept/min" -t 1000 -m none \
    -- "$bin" "$t" >"$out.cmin.log" 2>&1 \
    || { echo "fuzz-campaign: afl-cmin failed on $t:"; tail -20 "$out.cmin.log"; exit 1; }
  rm -rf "$corpus"
  mkdir -p "$corpus"
  n=0
  for f in "$kept"/min/*; do
    cp "$f" "$corpus/$(sha1sum "$f" | cut -c1-16)"
    n=$((n + 1))
  done
  rm -rf "$kept"
  found=0
  for kind in crashes hangs; do
    for f in "$out/default/$kind"/id*; do
      [ -e "$f" ] || continue
      mkdir -p "fuzz/crashes/$t"
      cp "$f" "fuzz/crashes/$t/$kind-$(sha1sum "$f" | cut -c1-16)"
      found=$((found + 1))
    done
  done
  rows+=("| \`$t\` | $(stat_of execs_done "$stats") | $(stat_of run_time "$stats") | $(stat_of execs_per_sec "$stats") | $queue_n | $n | $(stat_of saved_crashes "$stats") | $(stat_of saved_hangs "$stats") | $(stat_of bitmap_cvg "$stats") |")
  echo "fuzz-campaign: $t: ${rows[-1]}"
  [ "$found" -eq 0 ] || echo "fuzz-campaign: $t: $found crash/hang inputs in fuzz/crashes/$t/"
  write_results "last written"
done
write_results ended

echo "fuzz-campaign: results in $results"
