#!/usr/bin/env python3
"""Per-thread CPU of a process, sampled from /proc every --period-ms (default 100).

Usage: bench/thread_cpu.py PID [--period-ms 100] [--seconds S] [--json OUT]

Reads /proc/PID/task/*/schedstat (ns on the CPU, ns waiting on a run queue) and
comm. Prints, grouped by thread name with trailing digits removed (brisvox-turn-0 ->
brisvox-turn-), CPU seconds and run-queue wait seconds over the sampling, and for
the whole process the share of periods in which it used at least 90 % of a core
(bursts that a 500 ms average hides) and the largest CPU in one period. Stops
after --seconds or when the process ends. Linux only; needs read access to the
process (same user).
"""
import argparse
import json
import os
import re
import sys
import time


def read_tasks(pid):
    out = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                run_ns, wait_ns, _ = (int(x) for x in f.read().split())
            with open(f"{base}/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError):
            continue
        out[tid] = (name, run_ns, wait_ns)
    return out


def group(name):
    return re.sub(r"\d+$", "", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("--period-ms", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    period = a.period_ms / 1000.0
    first = read_tasks(a.pid)
    if first is None:
        sys.exit(f"no process {a.pid}")
    prev, t_prev = first, time.monotonic()
    t0 = t_prev
    per_period = []  # (t, cpu share of one core)
    totals = {}  # group -> [run_ns, wait_ns]
    while time.monotonic() - t0 < a.seconds:
        time.sleep(period)
        cur = read_tasks(a.pid)
        now = time.monotonic()
        if cur is None:
            break
        run = 0
        for tid, (name, r, w) in cur.items():
            pr, pw = prev.get(tid, (name, 0, 0))[1:]
            g = totals.setdefault(group(name), [0, 0])
            g[0] += r - pr
            g[1] += w - pw
            run += r - pr
        per_period.append((round(now - t0, 3), run / 1e9 / (now - t_prev)))
        prev, t_prev = cur, now
    wall = t_prev - t0
    busy = [c for _, c in per_period]
    summary = {
        "pid": a.pid,
        "wall_s": round(wall, 2),
        "period_ms": a.period_ms,
        "periods": len(busy),
        "cpu_cores_mean": round(sum(busy) / len(busy), 3) if busy else None,
        "cpu_cores_max_period": round(max(busy), 3) if busy else None,
        "share_of_periods_at_90pct": round(sum(c >= 0.9 for c in busy) / len(busy), 3) if busy else None,
        "threads": {
            g: {"cpu_s": round(r / 1e9, 3), "runqueue_wait_s": round(w / 1e9, 3)}
            for g, (r, w) in sorted(totals.items(), key=lambda kv: -kv[1][0])
        },
    }
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "per_period": per_period}, f)


if __name__ == "__main__":
    main()
