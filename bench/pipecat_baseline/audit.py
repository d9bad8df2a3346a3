#!/usr/bin/env python3
"""Audit of the Pipecat peer (issue #7): how much work each call does and what it
costs in CPU, at a few concurrencies, read from /proc rather than the wall clock.

For each mode (models, no-models) it starts bot.py with BRISVOX_PEER_COUNT=1 pinned
to one core (taskset), waits until the port answers, reads the server's idle CPU
for a few seconds, then for each concurrency N runs `brisvox-bench v2v --runs N
--concurrency N` pinned to the other core and reads the CPU time (utime + stime
of every process in the server's tree, /proc/PID/stat) before and after the batch.
The server prints one `pipecat-peer: counts {...}` line per call (bot.py,
count_work()); this script checks each against what the audio length implies:

  - every byte the client sent reached the VAD, and the VAD scored
    floor(bytes / 1024) 512-sample windows (32 ms at 16 kHz), each exactly 512
    samples;
  - Smart Turn ran once per VAD stop, on the audio of the turn;
  - the model build (one Silero and one Smart Turn session per connection).

Writes a markdown report (first line: the command; then the machine).

Usage (from the repository root, after install.sh and a release build of
brisvox-bench):
  bench/pipecat_baseline/.venv/bin/python bench/pipecat_baseline/audit.py \\
      --bench target-peer/release/brisvox-bench --out bench/results/pipecat-audit-DATE.md
"""

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TICK = os.sysconf("SC_CLK_TCK")


def tree(pid):
    """pid and all its descendants (from /proc/*/stat)."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        parent[int(d)] = int(st.rsplit(")", 1)[1].split()[1])
    out, todo = [pid], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def cpu_s(pid):
    """utime + stime (all threads) of the process tree of pid, seconds."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / TICK


def switches(pid):
    """Context switches (voluntary + involuntary) of every thread in the tree: how
    often its threads went to sleep or were preempted, i.e. about how many wake-ups."""
    total = 0
    for p in tree(pid):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/status") as f:
                    for line in f:
                        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                            total += int(line.split()[1])
            except OSError:
                continue
    return total


def host_busy():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def wait_port(port, proc, timeout=60):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.25)
    return False


def fixture_speech(path):
    side = os.path.splitext(path)[0] + ".json"
    with open(side) as f:
        meta = json.load(f)
    return meta["duration_ms"] / 1000.0, [(u["start_ms"], u["end_ms"]) for u in meta["utterances"]]


def run(args):
    py = os.path.join(HERE, ".venv", "bin", "python")
    report = []
    header = subprocess.run(
        [os.path.join(ROOT, "scripts", "bench-header.sh"), "release (brisvox-bench client)",
         "bench/pipecat_baseline/audit.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])],
        capture_output=True, text=True, check=True).stdout
    ver = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('pipecat-ai'))"],
                         capture_output=True, text=True).stdout.strip()
    report.append("# Pipecat peer audit: work per call and CPU per call (issue #7)\n")
    report.append(header.rstrip())
    report.append(f"- pipecat-ai {ver}, {subprocess.run([py, '--version'], capture_output=True, text=True).stdout.strip()}")
    report.append(f"- server on core {args.server_core} (taskset), client on core {args.client_core}; "
                  "CPU from /proc/PID/stat (utime + stime of the server's process tree, all threads)")
    report.append("- the machine is shared with other helpers' builds: the host's busy share during "
                  "each batch is in the tables; CPU time is less sensitive to that than wall time but "
                  "not immune (cache and frequency effects, and a pinned core that a build also uses "
                  "stretches the calls)\n")

    dur, utts = fixture_speech(args.fixture)
    for mode in args.modes.split(","):
        flag = ["--no-models"] if mode == "no-models" else []
        errlog = tempfile.NamedTemporaryFile("w+", prefix=f"peer-audit-{mode}-", suffix=".log", delete=False)
        env = dict(os.environ, BRISVOX_PEER_COUNT="1")
        cmd = ["taskset", "-c", str(args.server_core), py, os.path.join(HERE, "bot.py"),
               "--port", str(args.port)] + flag + args.bot_args
        srv = subprocess.Popen(cmd, stdout=errlog, stderr=errlog, env=env, start_new_session=True)
        try:
            if not wait_port(args.port, srv):
                raise SystemExit(f"audit: bot.py did not come up (log {errlog.name})")
            time.sleep(2.0)
            c0 = cpu_s(srv.pid)
            time.sleep(args.idle_s)
            idle = (cpu_s(srv.pid) - c0) / args.idle_s
            report.append(f"## Mode: {mode}\n")
            report.append(f"- server: `BRISVOX_PEER_COUNT=1 {' '.join(shlex.quote(x) for x in cmd)}`")
            report.append(f"- fixture {args.fixture}: {dur:.2f} s, utterances (ms) {utts}")
            report.append(f"- idle server before any call: {100 * idle:.2f} % of a core over {args.idle_s:.0f} s\n")
            rows = []
            all_counts = []
            for n in args.concurrency:
                for rep in range(args.repeats):
                    seen = open(errlog.name).read().count("pipecat-peer: counts ")
                    out = os.path.join(tempfile.gettempdir(), f"peer-audit-{mode}-c{n}-r{rep}")
                    b0, h0 = host_busy()
                    c0, t0, s0 = cpu_s(srv.pid), time.monotonic(), switches(srv.pid)
                    bench = ["taskset", "-c", str(args.client_core), args.bench, "v2v",
                             "--url", f"ws://127.0.0.1:{args.port}/call", "--fixture", args.fixture,
                             "--runs", str(n), "--concurrency", str(n), "--client-workers", "1",
                             "--label", f"pipecat peer audit {mode} c{n}", "--out", out]
                    res = subprocess.run(bench, capture_output=True, text=True)
                    # the server prints the counts after the call's pipeline ended
                    t_wait = time.monotonic() + 15
                    while time.monotonic() < t_wait:
                        if open(errlog.name).read().count("pipecat-peer: counts ") >= seen + n:
                            break
                        time.sleep(0.2)
                    # threads that ended during the batch (executors of closed calls) take
                    # their switches with them: this undercounts, never overcounts
                    c1, t1, s1 = cpu_s(srv.pid), time.monotonic(), switches(srv.pid)
                    b1, h1 = host_busy()
                    text = open(errlog.name).read()
                    counts = [json.loads(m) for m in re.findall(r"pipecat-peer: counts (\{.*\})", text)][seen:]
                    all_counts += [(n, rep, c) for c in counts]
                    with open(out + ".json") as f:
                        v2v = json.load(f)
                    lat = sorted(t["v2v_ms"] for call in v2v.get("calls", []) for t in call.get("turns", [])
                                 if t.get("v2v_ms") is not None)
                    call_s = sum(c["call_wall_s"] for c in counts)
                    rows.append({
                        "n": n, "rep": rep, "rc": res.returncode, "wall": t1 - t0, "cpu": c1 - c0,
                        "calls": len(counts), "call_s": call_s,
                        "build_cpu": sum(c["model_build_cpu_s"] for c in counts),
                        "vad_cpu": sum(c["vad_cpu_s"] for c in counts),
                        "st_cpu": sum(c["smart_turn_cpu_s"] for c in counts),
                        "host": (b1 - b0) / max(1, h1 - h0), "lat": lat, "sw": s1 - s0,
                    })
                    time.sleep(args.gap_s)
            report.append("### CPU per call\n")
            report.append("`server CPU` is the process tree's utime + stime from the start of the batch until "
                          "every call's counts line was printed; `per call-second` divides it by the calls' "
                          "own durations (accept to pipeline end, summed over the calls), i.e. the share of a "
                          "core one call uses while it is up. Model build = constructing SileroVADAnalyzer + "
                          "the turn analyzer for the connection (on the event loop thread); Silero and Smart "
                          "Turn = CPU of their executor threads inside the model calls; the rest is the "
                          "framework (transport, frames, mocks, event loop, threads' hand-offs).\n")
            report.append("| calls at once | run | server CPU (s) | batch wall (s) | call-seconds | % of a core per call-second | "
                          "model build CPU (s) | Silero CPU (s) | Smart Turn CPU (s) | rest (s) | "
                          "% per call-second without the model build | context switches per call-second (live threads) | host busy (both cores) | V2V ms (all turns) | bench exit |")
            report.append("|" + "---|" * 15)
            for r in rows:
                rest = r["cpu"] - r["build_cpu"] - r["vad_cpu"] - r["st_cpu"]
                pct = 100 * r["cpu"] / r["call_s"] if r["call_s"] else float("nan")
                pct_nb = 100 * (r["cpu"] - r["build_cpu"]) / r["call_s"] if r["call_s"] else float("nan")
                report.append(
                    f"| {r['n']} | {r['rep'] + 1} | {r['cpu']:.2f} | {r['wall']:.1f} | {r['call_s']:.1f} | {pct:.1f} | "
                    f"{r['build_cpu']:.2f} | {r['vad_cpu']:.2f} | {r['st_cpu']:.2f} | {rest:.2f} | {pct_nb:.1f} | "
                    f"{r['sw'] / r['call_s']:.0f} | {100 * r['host']:.0f} % | {', '.join(f'{x:.0f}' for x in r['lat'])} | {r['rc']} |")
            report.append("\n### Work per call against the audio\n")
            report.append("Expected Silero windows = floor(bytes that reached the VAD / 1024) (512 samples, "
                          "PCM16, 16 kHz). The client sends the fixture, then digital silence until the last "
                          "reply has played and its linger (800 ms) ended, in 20 ms frames.\n")
            report.append("| calls at once | run | frames in | audio in (s) | bytes to VAD = bytes in | frames that never reached the VAD (of frames in) | VAD rate / start / stop windows | Silero windows (expected) | windows of another size | VAD starts / stops | turn analyses (wall ms, VAD stop to verdict) | Smart Turn runs: audio (s) -> P(complete) | TTS requests / chars | audio out (s) | model build CPU / wall (s) |")
            report.append("|" + "---|" * 15)
            for n, rep, c in all_counts:
                exp = c["vad_bytes"] // 1024
                st = ", ".join(f"{a:.2f} -> {p:.2f}" for a, p in zip(c["smart_turn_audio_s"], c["smart_turn_prob"])) or "-"
                report.append(
                    f"| {n} | {rep + 1} | {c['frames_in']} | {c['bytes_in'] / 32000:.2f} | "
                    f"{'yes' if c['vad_bytes'] == c['bytes_in'] else 'no'} ({c['vad_bytes']} of {c['bytes_in']}) | "
                    f"{', '.join(str(x) for x in c['frames_not_at_vad']) or 'none'} | "
                    f"{c['vad_rate']} / {c['vad_start_windows']} / {c['vad_stop_windows']} | "
                    f"{c['vad_windows']} ({exp}) | {c['vad_window_bytes_other']} | {c['vad_starts']} / {c['vad_stops']} | "
                    f"{c['turn_analyses']} ({', '.join(str(x) for x in c.get('turn_analysis_wall_ms', []))}) | {st} | {c['tts_requests']} / {c['tts_chars']} | "
                    f"{c['audio_out_bytes'] / 32000:.2f} | {c['model_build_cpu_s']:.3f} / {c['model_build_wall_s']:.3f} |")
            report.append("")
        finally:
            try:
                os.killpg(srv.pid, signal.SIGTERM)
                srv.wait(timeout=10)
            except Exception:
                os.killpg(srv.pid, signal.SIGKILL)
                srv.wait()
            errlog.close()
    text = "\n".join(report) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"audit: wrote {args.out}", file=sys.stderr)
    else:
        print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default=os.path.join(ROOT, "target", "release", "brisvox-bench"))
    p.add_argument("--fixture", default="fixtures/librivox_0870.wav")
    p.add_argument("--modes", default="models,no-models")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4])
    p.add_argument("--repeats", type=int, default=2, help="batches per concurrency")
    p.add_argument("--port", type=int, default=18947)
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--client-core", type=int, default=1)
    p.add_argument("--idle-s", type=float, default=5.0)
    p.add_argument("--gap-s", type=float, default=1.0, help="pause between batches")
    p.add_argument("--out")
    p.add_argument("bot_args", nargs="*", help="extra bot.py flags (after --)")
    args = p.parse_args()
    if not os.path.exists(args.bench):
        raise SystemExit(f"audit: {args.bench} missing (cargo build --release -p brisvox-bench)")
    run(args)


if __name__ == "__main__":
    main()
