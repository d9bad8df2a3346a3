#!/usr/bin/env bash
# What scripts/run.sh decides on a new user's machine, with stand-ins for
# cargo, the server binary, pip, id and the package managers on a PATH of
# its own (so the real ones on this machine do not count):
#
# 1. models present, python3 without pip, espeak-ng installed, binary built:
#    it serves (no pip, no root, no build message);
# 2. no binary yet: it says how long the first build takes before it fetches
#    anything, then builds and serves;
# 3. models missing and no pip: it stops before the build, naming the package
#    to install (python3-pip) and the command;
# 4. Debian without root and without espeak-ng: it names `sudo apt-get install
#    -y espeak-ng`, runs no apt-get, and serves with mock tones;
# 5. Fedora (dnf, no apt-get) and Arch (pacman): the package manager's own
#    command and names, no apt-get command in the output;
# 6. models missing, pip there but its download failing while the (slow)
#    build runs beside it: the build is stopped, it says why and fails.
#
# Cases 1, 2 and 4 check the real models' checksums (models/, linked into a
# scratch folder, read only): without the models they are skipped with a
# message, and fail when CI is set. About 10 s (each hashes the models). Scratch files go under
# one temporary folder, removed on exit.
#
# Usage: tests/scripts/run_sh_decisions.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d /tmp/brisvox-run-sh-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_in() { # what, text, needle
  if grep -qF -- "$3" <<<"$2"; then pass "$1"; else fail "$1: no \"$3\" in:"$'\n'"$2"; fi
}
expect_not_in() {
  if grep -qF -- "$3" <<<"$2"; then fail "$1: \"$3\" in:"$'\n'"$2"; else pass "$1"; fi
}

# The tools the scripts use, from this machine; everything else is a stand-in.
tools=(bash env dirname basename mkdir mktemp sha256sum cut ls head ln rm mv cat grep sed tr chmod sleep)
real_python="$(command -v python3)"

# A PATH for one case: $1 names the folder; the rest are stand-ins to add:
# cargo, cargo-slow, python3-nopip, python3-badpip, espeak-ng, apt-get, dnf,
# pacman, id-user.
sandbox() {
  local dir="$work/$1" t
  shift
  mkdir -p "$dir/bin" "$dir/target/release"
  for t in "${tools[@]}"; do ln -sf "$(command -v "$t")" "$dir/bin/$t"; done
  # id: root unless id-user is asked for.
  printf '#!/bin/sh\n[ "$1" = -u ] && echo 0\n' >"$dir/bin/id"
  for t in "$@"; do
    case "$t" in
      cargo) # builds "the binary": a script that says how it was served
        cat >"$dir/bin/cargo" <<EOF
#!/bin/sh
echo "cargo \$*" >>"$dir/calls"
printf '#!/bin/sh\necho "served \$*"\n' >"$dir/target/release/brisvox"
chmod +x "$dir/target/release/brisvox"
EOF
        ;;
      cargo-slow) # a build that takes a minute, unless stopped
        printf '#!/bin/sh\necho "cargo $*" >>"%s/calls"\nsleep 60\necho "cargo finished" >>"%s/calls"\n' \
          "$dir" "$dir" >"$dir/bin/cargo"
        ;;
      python3-badpip) # pip is there; its downloads fail (no registry), once the build has started
        printf '#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then [ "$3" = --version ] && exit 0; until grep -q cargo "%s/calls"; do sleep 0.1; done; echo "pip: no route to the registry" >&2; exit 1; fi\nexec %s "$@"\n' \
          "$dir" "$real_python" >"$dir/bin/python3"
        ;;
      python3-nopip) # Debian's python3 without python3-pip
        printf '#!/bin/sh\n[ "$1" = -m ] && [ "$2" = pip ] && { echo "No module named pip" >&2; exit 1; }\nexec %s "$@"\n' \
          "$real_python" >"$dir/bin/python3"
        ;;
      espeak-ng) printf '#!/bin/sh\nexit 0\n' >"$dir/bin/espeak-ng" ;;
      apt-get | dnf | pacman) printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$t" "$dir" >"$dir/bin/$t" ;;
      id-user) printf '#!/bin/sh\n[ "$1" = -u ] && echo 1000\n' >"$dir/bin/id" ;;
      *) echo "run_sh_decisions: unknown stand-in $t" >&2; exit 2 ;;
    esac
  done
  chmod +x "$dir"/bin/*
  touch "$dir/calls"
}

# Runs scripts/run.sh in case $1's sandbox with models folder $2; prints its
# output (stdout and stderr) and its exit status last.
run_case() {
  local dir="$work/$1" rc=0 out
  out="$(env -i HOME="$dir" PATH="$dir/bin" CARGO_TARGET_DIR="$dir/target" \
    BRISVOX_MODELS_DIR="$2" "$repo/scripts/run.sh" --bind 127.0.0.1:1 2>&1)" || rc=$?
  printf '%s\nexit=%s\n' "$out" "$rc"
}

# A models folder with the real files linked in (read only: nothing is fetched).
models="$work/models"
have_models=0
if [ -f "$repo/models/whisper-tiny.en/encoder.onnx" ]; then
  mkdir -p "$models/whisper-tiny.en"
  for f in silero_vad.onnx smart-turn-v3.2-cpu.onnx libonnxruntime.so.1.32.0 \
    en_US-joe-medium.onnx en_US-joe-medium.onnx.json; do
    ln -s "$repo/models/$f" "$models/$f"
  done
  for f in model.bin config.json tokenizer.json encoder.onnx decoder.onnx; do
    ln -s "$repo/models/whisper-tiny.en/$f" "$models/whisper-tiny.en/$f"
  done
  have_models=1
elif [ -n "${CI:-}" ]; then
  fail "the models are missing (scripts/fetch-models.sh --whisper) and CI is set"
else
  echo "run_sh_decisions: models/ has no Whisper model: cases 1, 2 and 4 skipped (scripts/fetch-models.sh --whisper)"
fi

if [ "$have_models" = 1 ]; then
  # 1. Everything there, python3 without pip: it serves.
  sandbox present cargo python3-nopip espeak-ng apt-get
  "$work/present/bin/cargo" # the binary of an earlier start
  : >"$work/present/calls"
  out="$(run_case present "$models")"
  expect_in "1: serves with the given arguments" "$out" "served serve --bind 127.0.0.1:1"
  expect_in "1: exits with the server's status" "$out" "exit=0"
  expect_not_in "1: no pip needed" "$out" "pip"
  expect_not_in "1: no first-build message" "$out" "first start"
  expect_in "1: builds (a no-op when up to date) with the release profile" \
    "$(cat "$work/present/calls")" "cargo build --profile release --locked -p brisvox-server --bin brisvox"
  expect_not_in "1: no apt-get" "$(cat "$work/present/calls")" "apt-get"

  # 2. First start: the build's time is said before anything is fetched.
  sandbox first cargo python3-nopip espeak-ng
  out="$(run_case first "$models")"
  first_line="$(head -n1 <<<"$out")"
  expect_in "2: says how long the first build takes, first" "$first_line" "first start: the models are fetched, then brisvox is built"
  expect_in "2: ... quoting the measured time and its results file" "$first_line" "bench/results/first-start-idle.md"
  expect_in "2: builds then serves" "$out" "served serve --bind 127.0.0.1:1"

  # 4. Debian, no root, no espeak-ng: named with sudo apt-get, not run; serves.
  sandbox debian-user cargo python3-nopip apt-get id-user
  "$work/debian-user/bin/cargo"
  : >"$work/debian-user/calls"
  out="$(run_case debian-user "$models")"
  expect_in "4: names the apt-get command" "$out" "install with: sudo apt-get install -y espeak-ng"
  expect_in "4: goes on with mock tones" "$out" "mock tones instead"
  expect_in "4: serves" "$out" "served serve"
  expect_not_in "4: runs no apt-get" "$(cat "$work/debian-user/calls")" "apt-get"
fi

# 3. No models, no pip: stops before the build and names python3-pip.
sandbox nopip cargo python3-nopip espeak-ng apt-get id-user
out="$(run_case nopip "$work/empty-models")"
expect_in "3: fails" "$out" "exit=1"
expect_in "3: names the package and the command" "$out" "install it with: sudo apt-get install -y python3-pip"
expect_not_in "3: does not build" "$(cat "$work/nopip/calls")" "cargo"

# 5. Other systems: their package manager's command and names.
sandbox fedora python3-nopip dnf
out="$(PATH="$work/fedora/bin" "$repo/scripts/setup-system.sh" espeak-ng 2>&1)" && fail "5: fedora: exit 0 with espeak-ng missing"
expect_in "5: fedora names dnf" "$out" "install with: dnf install -y espeak-ng"
expect_not_in "5: fedora: no apt-get" "$out" "apt-get"
expect_not_in "5: fedora: installs nothing" "$(cat "$work/fedora/calls")" "dnf"
sandbox arch python3-nopip pacman id-user
out="$(PATH="$work/arch/bin" "$repo/scripts/setup-system.sh" --hint python3-pip espeak-ng)"
expect_in "5: arch names pacman and its name for pip" "$out" "sudo pacman -S --needed python-pip espeak-ng"

# 6. The fetch fails while the build runs: the build is stopped.
sandbox badpip cargo-slow python3-badpip espeak-ng apt-get id-user
out="$(run_case badpip "$work/empty-models-6")"
expect_in "6: fails" "$out" "exit=1"
expect_in "6: says the fetch failed" "$out" "pip could not download"
expect_in "6: says it stopped" "$out" "run.sh: stopped: fetching the models or building brisvox failed"
expect_in "6: the build had started" "$(cat "$work/badpip/calls")" "cargo build --profile release"
expect_not_in "6: the build was stopped, not waited for" "$(cat "$work/badpip/calls")" "cargo finished"
expect_not_in "6: nothing served" "$out" "served"

if [ "$failures" -gt 0 ]; then
  echo "run_sh_decisions: $failures check(s) failed" >&2
  exit 1
fi
echo "run_sh_decisions: all checks passed"
