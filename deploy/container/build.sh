#!/usr/bin/env bash
# Builds the brisvox container image from deploy/container/Containerfile on a
# machine that can reach Debian's package mirror and PyPI but no container
# registry: the Debian base is made here with debootstrap and imported into
# podman, the binary is built on the host (BIN_STAGE=prebuilt), the models are
# fetched and checksummed inside the build. Then it checks the image:
# `brisvox --version` runs, the user is 10001 (not root), no compiler is in
# it, the models are there, and `brisvox serve` from the image answers
# /healthz and /readyz on loopback.
#
# Usage: deploy/container/build.sh [TAG]        (default localhost/brisvox:dev)
#   BRISVOX_BIN=path   the binary to put in (default target/release/brisvox,
#                      built if absent); must be inside the repository
# Needs root, podman, buildah and debootstrap (Debian: apt-get install podman
# buildah debootstrap). On a machine with a registry, a plain
# `podman build -f deploy/container/Containerfile --ignorefile deploy/container/containerignore .`
# builds the same image from the official Debian and Rust images.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

tag="${1:-localhost/brisvox:dev}"
base=localhost/brisvox-base:bookworm
say() { echo "container: $*"; }
die() { echo "container: error: $*" >&2; exit 1; }

for tool in podman buildah debootstrap curl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (Debian: apt-get install podman buildah debootstrap curl)"
done
# No cgroup delegation and no rlimit changes in this kind of sandbox: build
# with chroot isolation and cgroupfs.
build_opts=(--isolation chroot --cgroup-manager cgroupfs)

if ! podman image exists "$base"; then
  # The mirror this machine's apt already uses (no mirror is named here).
  mirror="$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | awk '/^(URIs:|deb) / {print $2}' | grep -m1 -E '/debian/?$' || true)"
  [ -n "$mirror" ] || die "cannot find a Debian mirror in /etc/apt sources"
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  say "debootstrap of Debian 12 (minbase) from the apt mirror ..."
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
  tar -C "$root" -c . | podman import - "$base" >/dev/null
  rm -rf "$root"
  trap - EXIT
  say "base image $base imported"
fi

bin="${BRISVOX_BIN:-target/release/brisvox}"
if [ ! -x "$bin" ]; then
  [ -z "${BRISVOX_BIN:-}" ] || die "BRISVOX_BIN=$bin is not an executable"
  say "building the release binary ..."
  cargo build --release --locked -p brisvox-server --bin brisvox
fi
bin="$(realpath --relative-to=. "$bin")"
case "$bin" in ../*|/*) die "BRISVOX_BIN must be inside the repository (the build context)";; esac

say "podman build $tag (binary $bin) ..."
# This machine's CA bundle (it may hold a proxy's CA) for the model download.
podman build "${build_opts[@]}" --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt \
  --build-arg BASE="$base" --build-arg BIN_STAGE=prebuilt --build-arg PREBUILT="$bin" \
  --ignorefile deploy/container/containerignore \
  -f deploy/container/Containerfile -t "$tag" . >/tmp/brisvox-container-build.log 2>&1 \
  || { tail -30 /tmp/brisvox-container-build.log; die "podman build failed (log: /tmp/brisvox-container-build.log)"; }

# ---- checks on the built image ----
ctr="$(buildah from "$tag")"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
run() { buildah run --isolation chroot "$ctr" -- "$@"; }

version="$(run /usr/local/bin/brisvox --version)"
uid="$(run id -u)"
[ "$uid" = 10001 ] || die "the image runs as uid $uid, not 10001"
for compiler in cargo rustc gcc cc c++; do
  if run sh -c "command -v $compiler" >/dev/null 2>&1; then die "a build tool is in the image: $compiler"; fi
done
models="$(run ls /opt/brisvox/models)"
for f in silero_vad.onnx smart-turn-v3.2-cpu.onnx libonnxruntime.so.1.32.0; do
  grep -qx "$f" <<<"$models" || die "model file $f is missing from the image"
done
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
# The image's own defaults (no agent file: the local demo with the real models).
# chroot isolation shares the host's process ids: the server writes its pid.
buildah run --isolation chroot "$ctr" -- sh -c \
  "echo \$\$ > /tmp/brisvox.pid && exec /usr/local/bin/brisvox serve --bind 127.0.0.1:$port" \
  >/tmp/brisvox-container-serve.log 2>&1 &
pid=$!
ready=""
for _ in $(seq 1 300); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ready" ] || { tail -20 /tmp/brisvox-container-serve.log; die "brisvox serve from the image never became ready"; }
[ "$(curl -s "http://127.0.0.1:$port/healthz")" = ok ] || die "/healthz did not answer ok"
# The Kubernetes preStop hook, from the image: drain the server and wait for it.
server_pid="$(run cat /tmp/brisvox.pid)"
run /usr/local/bin/brisvox drain --pid "$server_pid" --timeout-s 60 \
  || die "brisvox drain (the preStop command) failed"
wait "$pid" || die "brisvox serve in the image did not exit cleanly after the drain"
pid=""
grep -q drained /tmp/brisvox-container-serve.log || die "the server did not log its drain"
size="$(podman image inspect "$tag" --format '{{.Size}}')"
say "ok: $tag ($version, uid $uid, no compiler, models present, serve ready and drained; $((size / 1000000)) MB)"
