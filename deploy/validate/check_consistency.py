#!/usr/bin/env python3
"""Checks that the deployment files agree with each other and with the code,
where a schema cannot see it: scripts/validate-deploy.sh runs it on the
rendered Kubernetes manifests.

- the pods stop within their grace: terminationGracePeriodSeconds (and the
  systemd unit's TimeoutStopSec) is longer than the agent file's drain grace;
- the probes hit the routes the server serves, on the port it binds;
- the preStop hook runs `brisvox drain` at the path the image installs;
- the selectors of the Service and the PodDisruptionBudget pick the pods;
- the HPA scales the Deployment on the metric the adapter rule serves, which
  the server exports, with a target within the agent's max_calls.

Usage: check_consistency.py RENDERED.yaml BRISVOX_BIN   (from the repository root)
"""

import configparser
import re
import subprocess
import sys
import tomllib

import yaml

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def by_kind(docs, kind):
    found = [d for d in docs if d and d.get("kind") == kind]
    if len(found) != 1:
        sys.exit(f"consistency: expected one {kind}, found {len(found)}")
    return found[0]


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def main():
    docs = list(yaml.safe_load_all(open(sys.argv[1])))
    dep = by_kind(docs, "Deployment")
    svc = by_kind(docs, "Service")
    pdb = by_kind(docs, "PodDisruptionBudget")
    hpa = by_kind(docs, "HorizontalPodAutoscaler")
    adapter = by_kind([d for d in docs if d.get("metadata", {}).get("name", "").endswith(
        "prometheus-adapter-rules")], "ConfigMap")
    agent = tomllib.load(open("deploy/kubernetes/agent.toml", "rb"))
    containerfile = open("deploy/container/Containerfile").read()
    metrics_rs = open("crates/brisvox-server/src/metrics.rs").read()
    http_rs = open("crates/brisvox-server/src/http.rs").read()

    limits, server = agent.get("limits", {}), agent.get("server", {})
    max_duration = limits.get("max_call_duration_s", 1800)
    grace = server.get("drain_grace_s", max_duration)
    max_calls = limits.get("max_calls", 100)
    port = int(server.get("bind", "0.0.0.0:8080").rsplit(":", 1)[1])

    pod = dep["spec"]["template"]
    spec = pod["spec"]
    (ctr,) = spec["containers"]
    check(spec.get("terminationGracePeriodSeconds", 30) > grace + server.get("drain_admit_s", 5),
          f"terminationGracePeriodSeconds {spec.get('terminationGracePeriodSeconds')} must exceed "
          f"the drain (drain_admit_s + drain_grace_s {grace} s)")
    check(dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
          "the Deployment's selector does not match its pod template")
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    check(ports.get("http") == port, f"containerPort {ports.get('http')} != the agent's bind port {port}")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        got = ctr[probe]["httpGet"]["path"]
        check(got == path, f"{probe} path {got} is not {path}")
        check(f'"{got}"' in http_rs, f"{probe} path {got} is not a route in http.rs")
    pre = ctr["lifecycle"]["preStop"]["exec"]["command"]
    check(pre[:2] == ["/usr/local/bin/brisvox", "drain"], f"preStop {pre} does not run brisvox drain")
    usage = subprocess.run([sys.argv[2], "drain", "--help"], capture_output=True, text=True).stdout
    for flag in (a for a in pre[2:] if a.startswith("--")):
        check(flag in usage, f"preStop passes {flag}, which `brisvox drain` does not take")
    check(re.search(r"COPY --from=bin /out/brisvox /usr/local/bin/brisvox", containerfile) is not None,
          "the Containerfile does not install /usr/local/bin/brisvox")
    check(re.search(r"^USER 10001", containerfile, re.M) is not None
          and pod["spec"]["securityContext"].get("runAsUser") == 10001,
          "the image's user and the pod's runAsUser differ (10001)")
    check(matches(svc["spec"]["selector"], pod["metadata"]["labels"]),
          "the Service's selector does not pick the pods")
    check(matches(pdb["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]),
          "the PodDisruptionBudget's selector does not pick the pods")

    target = hpa["spec"]["scaleTargetRef"]
    check((target["kind"], target["name"]) == ("Deployment", dep["metadata"]["name"]),
          f"the HPA scales {target}, not the Deployment")
    rules = yaml.safe_load(adapter["data"]["config.yaml"])["rules"]
    served = {r["name"]["as"] for r in rules}
    pods_metrics = [m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    for m in pods_metrics:
        name = m["metric"]["name"]
        check(name in served, f"the HPA's metric {name} is not served by the adapter rule")
        check(f'"{name}"' in metrics_rs, f"the server does not export {name}")
        value = float(m["target"]["averageValue"])
        check(0 < value <= max_calls, f"the HPA target {value} calls is not within max_calls {max_calls}")
    check(any(m["type"] == "Resource" for m in hpa["spec"]["metrics"]), "the HPA has no CPU fallback")

    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read("deploy/systemd/brisvox.service")
    stop = int(unit["Service"]["TimeoutStopSec"])
    check(stop > 1800 + 5, f"the systemd unit's TimeoutStopSec {stop} is shorter than the default drain")
    check(unit["Service"]["KillSignal"] == "SIGTERM", "the systemd unit must stop the server with SIGTERM")

    if problems:
        for p in problems:
            print(f"consistency: {p}", file=sys.stderr)
        sys.exit(1)
    print(f"consistency: ok (grace {grace} s < {spec['terminationGracePeriodSeconds']} s, "
          f"port {port}, HPA on {', '.join(sorted(served))} <= {max_calls} calls)")


if __name__ == "__main__":
    main()
