#!/usr/bin/env python3
"""Scale-out on one machine, with a real load balancer: HAProxy in front of
three `brisvox serve` processes on loopback, recorded calls from
`brisvox-bench v2v`, then a rolling restart while the calls go on.

Phases (each prints what it saw; the report goes to --out):

1. before: calls through HAProxy, no restart (the V2V baseline);
2. roll:   the same calls, and meanwhile each server in turn gets SIGTERM
           (readiness must turn false at once, HAProxy must mark it down,
           its calls must finish, it must exit 0), is restarted and must be
           back in HAProxy before the next one;
3. full:   the servers restarted with a small max_calls; one call more than
           they hold together must be refused with HTTP 503 and a reason,
           before any websocket exists.

Goals, checked at the end (exit status 1 if one is missed): no call dropped
in any phase, no call refused in `before` and `roll` (capacity remained),
exactly the excess calls refused in `full`, each with HTTP 503 `server_full`.

Usage: scripts/scale-out-roll.py [--out bench/results/scale-out-roll.md]
           [--brisvox PATH] [--bench PATH] [--agent FILE] [--calls N]
           [--concurrency N] [--fixture WAV ...]
Binaries default to target/release/{brisvox,brisvox-bench} (built if absent).
Everything runs on 127.0.0.1, is bounded in count and time and stops by itself.
"""

import argparse
import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = 3
WAIT_S = 60


def log(msg):
    print(f"scale-out-roll: {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eventually(what, predicate, timeout_s=WAIT_S, every_s=0.05):
    """Polls `predicate` until it is truthy; fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"scale-out-roll: timed out waiting for {what}")
        time.sleep(every_s)


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


def agent_text(base_path, max_calls, drain_admit_s):
    """The base agent file without its [limits] / [server] tables, plus ours."""
    out, skip = [], False
    for line in open(base_path, encoding="utf-8"):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            skip = header.group(1).split(".")[0] in ("limits", "server")
        if not skip:
            out.append(line)
    out.append(
        f"\n[limits]\nmax_calls = {max_calls}\nidle_prompt_after_s = 3600\n"
        f"idle_end_after_s = 3660\n\n[server]\ndrain_admit_s = {drain_admit_s}\n"
    )
    return "".join(out)


class Haproxy:
    def __init__(self, workdir, ports, bind_port):
        self.sock = os.path.join(workdir, "haproxy.sock")
        env = dict(os.environ, HAPROXY_STATS=self.sock,
                   HAPROXY_BIND=f"127.0.0.1:{bind_port}")
        for i, port in enumerate(ports, 1):
            env[f"BRISVOX_{i}"] = f"127.0.0.1:{port}"
        cfg = os.path.join(ROOT, "deploy/haproxy/haproxy.cfg")
        self.port = bind_port
        self.proc = subprocess.Popen(
            ["taskset", "-c", "1", "haproxy", "-db", "-f", cfg], env=env,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "haproxy.log"), "w"))

    def command(self, cmd):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(self.sock)
            s.sendall((cmd + "\n").encode())
            chunks = []
            while True:
                data = s.recv(65536)
                if not data:
                    return b"".join(chunks).decode()
                chunks.append(data)

    def stats(self):
        """{server name: row} of the backend's servers, plus BACKEND."""
        try:
            text = self.command("show stat")
        except OSError:
            return {}
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {r["svname"]: r for r in rows if r["pxname"] == "brisvox"}

    def status(self, name):
        if self.proc.poll() is not None:
            raise SystemExit(f"scale-out-roll: haproxy exited ({self.proc.returncode}); see its log")
        return self.stats().get(name, {}).get("status", "")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Server:
    def __init__(self, name, binary, agent, port, workdir):
        self.name, self.binary, self.agent, self.port = name, binary, agent, port
        self.log = os.path.join(workdir, f"{name}.log")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", self.binary, "serve", "--agent", self.agent,
             "--bind", f"127.0.0.1:{self.port}", "--log-format", "json"],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))

    def ready(self):
        return http_get(self.port, "/readyz")[0] == 200

    def stop_hard(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_v2v(args, port, runs, concurrency, out, fixtures):
    cmd = ["taskset", "-c", "1", args.bench, "v2v", "--url", f"ws://127.0.0.1:{port}/call",
           "--runs", str(runs), "--concurrency", str(concurrency), "--out", out]
    for f in fixtures:
        cmd += ["--fixture", f]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))


def summarise(path):
    data = json.load(open(path + ".json"))
    calls = data["calls"]
    refused = [c for c in calls if (c["error"] or "").startswith("refused")]
    failed = [c for c in calls if c["error"] and c not in refused]
    unanswered = [c for c in calls if not c["error"]
                  and any(t["outcome"] != "answered" for t in c["turns"])]
    v2v = sorted(t["v2v_ms"] for c in calls if not c["error"]
                 for t in c["turns"] if t["outcome"] == "answered")
    q = (lambda p: v2v[min(len(v2v) - 1, int(p * len(v2v)))]) if v2v else (lambda p: None)
    return {
        "calls": len(calls), "refused": len(refused), "dropped": len(failed) + len(unanswered),
        "failed": len(failed), "unanswered_turns": len(unanswered),
        "turns": len(v2v), "p50": q(0.50), "p95": q(0.95),
        "refusals": [c["error"] for c in refused], "errors": [c["error"] for c in failed],
    }


def roll(servers, haproxy, events):
    for s in servers:
        t0 = time.monotonic()
        os.kill(s.proc.pid, signal.SIGTERM)
        eventually(f"{s.name} readiness false",
                   lambda: http_get(s.port, "/readyz") == (503, "draining\n"), every_s=0.01)
        t_ready = time.monotonic() - t0
        eventually(f"HAProxy marks {s.name} down",
                   lambda: haproxy.status(s.name).startswith("DOWN"), every_s=0.02)
        t_down = time.monotonic() - t0
        code = s.proc.wait(timeout=WAIT_S)
        t_exit = time.monotonic() - t0
        s.start()
        eventually(f"{s.name} ready again", s.ready, every_s=0.05)
        eventually(f"HAProxy marks {s.name} up", lambda: haproxy.status(s.name) == "UP")
        t_up = time.monotonic() - t0
        events.append((s.name, t_ready, t_down, t_exit, code, t_up))
        log(f"{s.name}: not ready {t_ready*1000:.0f} ms, down in HAProxy {t_down:.2f} s, "
            f"exited {code} after {t_exit:.1f} s, back up after {t_up:.1f} s")


def fmt(v):
    return "-" if v is None else f"{v:.0f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="bench/results/scale-out-roll.md")
    p.add_argument("--brisvox", default=os.path.join(ROOT, "target/release/brisvox"))
    p.add_argument("--bench", default=os.path.join(ROOT, "target/release/brisvox-bench"))
    p.add_argument("--agent", default=os.path.join(ROOT, "bench/agents/mock-models.toml"))
    p.add_argument("--calls", type=int, default=150, help="calls in the roll phase")
    p.add_argument("--concurrency", type=int, default=12)
    p.add_argument("--fixture", action="append")
    args = p.parse_args()
    fixtures = args.fixture or [os.path.join(ROOT, f) for f in (
        "fixtures/librivox_0870.wav", "fixtures/librivox_0890.wav", "fixtures/librivox_0920.wav")]
    for tool in ("haproxy", "taskset"):
        if not shutil.which(tool):
            raise SystemExit(f"scale-out-roll: {tool} not found (Debian: apt-get install haproxy util-linux)")
    if not (os.path.exists(args.brisvox) and os.path.exists(args.bench)):
        log("building the release binaries")
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "brisvox-server",
                        "-p", "brisvox-bench"], cwd=ROOT, check=True)
    header = subprocess.run(
        [os.path.join(ROOT, "scripts/bench-header.sh"),
         "debug" if "/debug/" in os.path.abspath(args.brisvox) else "release",
         "scripts/scale-out-roll.py " + " ".join(sys.argv[1:])],
        capture_output=True, text=True, check=True).stdout
    work = tempfile.mkdtemp(prefix="scale-out-roll.")
    ports = [free_port() for _ in range(SERVERS)]
    roll_agent = os.path.join(work, "agent-roll.toml")
    open(roll_agent, "w").write(agent_text(args.agent, max_calls=64, drain_admit_s=2))
    servers = [Server(f"b{i}", args.brisvox, roll_agent, port, work)
               for i, port in enumerate(ports, 1)]
    haproxy = None
    try:
        for s in servers:
            s.start()
        haproxy = Haproxy(work, ports, free_port())
        for s in servers:
            eventually(f"{s.name} up in HAProxy", lambda s=s: haproxy.status(s.name) == "UP")
        log(f"3 servers up behind HAProxy on port {haproxy.port}; work dir {work}")

        before = os.path.join(work, "before")
        run_v2v(args, haproxy.port, args.calls // 2, args.concurrency, before, fixtures).wait()
        during = os.path.join(work, "roll")
        load = run_v2v(args, haproxy.port, args.calls, args.concurrency, during, fixtures)
        eventually("calls on every server", lambda: all(
            int(haproxy.stats().get(s.name, {}).get("scur") or 0) > 0 for s in servers))
        events = []
        roll(servers, haproxy, events)
        load.wait(timeout=1800)
        stats_roll = haproxy.stats().get("BACKEND", {})

        # Full: 2 calls per server, 7 calls at once: the 7th is refused by all.
        for s in servers:
            os.kill(s.proc.pid, signal.SIGINT)
            s.proc.wait(timeout=WAIT_S)
            eventually(f"HAProxy marks {s.name} down",
                       lambda s=s: haproxy.status(s.name).startswith("DOWN"))
        full_agent = os.path.join(work, "agent-full.toml")
        open(full_agent, "w").write(agent_text(args.agent, max_calls=2, drain_admit_s=0))
        for s in servers:
            s.agent = full_agent
            s.start()
        for s in servers:
            eventually(f"{s.name} up again", lambda s=s: haproxy.status(s.name) == "UP")
        full = os.path.join(work, "full")
        run_v2v(args, haproxy.port, 7, 7, full, [os.path.join(ROOT, "fixtures/en_long_question.wav")]).wait()
    finally:
        for s in servers:
            s.stop_hard()
        if haproxy:
            haproxy.stop()

    b, r, f = summarise(before), summarise(during), summarise(full)
    goals = [
        ("no call dropped before the roll", b["dropped"] == 0),
        ("no call refused before the roll", b["refused"] == 0),
        ("no call dropped during the roll", r["dropped"] == 0),
        ("no call refused during the roll (capacity remained)", r["refused"] == 0),
        ("every server exited 0 after its drain", all(e[4] == 0 for e in events)),
        ("when all were full: 6 calls answered, 1 refused", f["calls"] == 7 and f["refused"] == 1
         and f["dropped"] == 0),
        # From the last server HAProxy tried, or HAProxy's own 503 (errorfile)
        # once its checks see every server full: both the same JSON event.
        ("the refusal is HTTP 503 with the error event server_full, before the upgrade",
         bool(f["refusals"]) and all(
             x.startswith("refused: HTTP 503 ") and '"code":"server_full"' in x for x in f["refusals"])),
    ]
    lines = [
        "# Scale-out behind HAProxy and a rolling restart (scripts/scale-out-roll.py)", "",
        header.rstrip(), f"- haproxy: {subprocess.run(['haproxy', '-v'], capture_output=True, text=True).stdout.splitlines()[0]}",
        f"- servers: 3 x `brisvox serve` on core 0 (taskset), agent {os.path.relpath(args.agent, ROOT)} "
        "with max_calls 64 and drain_admit_s 2; HAProxy and the call generator on core 1",
        f"- config: deploy/haproxy/haproxy.cfg (leastconn, /readyz checks every 500 ms, retry-on 503 + redispatch)",
        f"- calls: `brisvox-bench v2v`, {args.concurrency} at once, fixtures "
        + ", ".join(os.path.basename(x) for x in fixtures), "",
        "| phase | calls | dropped | refused | answered turns | V2V p50 (ms) | V2V p95 (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in (("before the roll", b), ("during the roll", r), ("all servers full (max_calls 2 each)", f)):
        lines.append(f"| {name} | {s['calls']} | {s['dropped']} | {s['refused']} | {s['turns']} "
                     f"| {fmt(s['p50'])} | {fmt(s['p95'])} |")
    lines += ["", "Dropped = a call that failed after it was admitted (disconnect, error event) or had "
              "a turn without an answer; refused = HTTP 503 before the upgrade.", "",
              "## The roll, server by server", "",
              "| server | readiness false after (ms) | marked down by HAProxy after (s) | exited after (s) | exit code | back up after (s) |",
              "|---|---|---|---|---|---|"]
    for name, t_ready, t_down, t_exit, code, t_up in events:
        lines.append(f"| {name} | {t_ready*1000:.0f} | {t_down:.2f} | {t_exit:.1f} | {code} | {t_up:.1f} |")
    lines += ["", f"HAProxy backend counters after the roll: retries {stats_roll.get('wretr')}, "
              f"redispatches {stats_roll.get('wredis')}, sessions {stats_roll.get('stot')}.", "",
              "The refusal seen by the extra call when all were full: "
              + ("`" + f["refusals"][0] + "`" if f["refusals"] else "none"), "", "## Goals", ""]
    lines += [f"- {'met' if ok else 'MISSED'}: {what}" for what, ok in goals]
    if r["errors"] or b["errors"] or f["errors"]:
        lines += ["", "Errors: " + "; ".join(b["errors"] + r["errors"] + f["errors"])]
    report = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    open(args.out, "w").write(report)
    print(report)
    shutil.rmtree(work, ignore_errors=True) if all(ok for _, ok in goals) else log(f"kept {work}")
    sys.exit(0 if all(ok for _, ok in goals) else 1)


if __name__ == "__main__":
    main()
