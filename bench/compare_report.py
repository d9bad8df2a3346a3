#!/usr/bin/env python3
"""Summary of a bench/compare.sh directory: summary.md and summary.svg.

Usage: python3 bench/compare_report.py bench/results/compare/DATE

Reads every <system>-<mode>-runK.json (brisvox-bench capacity, schema
brisvox-bench/capacity/1) and header.txt, and writes, per system and mode, the
highest passing step of each run and their median, what ended each ramp, CPU
(% of one core) and PSS per call at the highest passing step, V2V at 1 call,
and the brisvox / Pipecat ratio of calls per core (the server has one core).
The chart is p95 V2V against concurrent calls, one line per system and mode
(the median p95 of the runs at each step). Python 3 stdlib only.
"""
import json
import re
import statistics
import sys
from pathlib import Path

SYSTEMS = ["brisvox", "pipecat"]
MODES = ["models", "no-models"]
NAME = re.compile(r"^(brisvox|pipecat)-(models|no-models)-run(\d+)\.json$")


def load(d):
    runs = {}
    for p in sorted(d.glob("*.json")):
        m = NAME.match(p.name)
        if not m:
            continue
        data = json.loads(p.read_text())
        runs.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3)), p.name, data))
    for v in runs.values():
        v.sort()
    return runs


def step_at(data, n):
    """The last record of the step with n calls (a step runs once per ramp)."""
    hit = [s for s in data["steps"] if s["calls_at_once"] == n]
    return hit[-1] if hit else None


def bottleneck(data):
    r = data["result"]
    if r.get("generator_limited_at") is not None:
        return "generator-limited at %d calls (a lower bound)" % r["generator_limited_at"]
    fail = r.get("smallest_failing_step")
    if fail is None:
        if r.get("stopped", "").startswith("run time limit"):
            return "none found: run time limit before a failing step (a lower bound)"
        return "none: the top step passed (a lower bound)"
    st = step_at(data, fail)
    reasons = st["verdict"]["reasons"] if st else []
    kinds = []
    for x in reasons:
        if "calls failed" in x:
            kinds.append("failures")
        elif "lost or unclean" in x:
            kinds.append("lost/unclean turns")
        elif x.startswith("p95 V2V"):
            kinds.append("p95 over the SLO")
        elif x == "no answered turn":
            kinds.append("no answered turn")
        elif "late" in x:
            kinds.append("generator late frames")
    text = "%s at %d calls (%s)" % (", ".join(kinds) or "fail", fail, "; ".join(reasons))
    return text + failing_step_context(st)


def failing_step_context(st):
    """What the server did during the failing step: its CPU and, where the server
    publishes them (brisvox's /metrics via capacity --metrics-url), the model queues."""
    if not st:
        return ""
    parts = []
    srv = st.get("server")
    if srv and srv.get("cpu_cores") is not None:
        parts.append("server %.2f cores over the step" % srv["cpu_cores"])
    m = ((st.get("server_metrics") or {}).get("metrics")) or {}
    wait = m.get("smart_turn_wait_ms")
    if wait and wait.get("count"):
        parts.append("Smart Turn queue wait p50 %.0f / p95 %.0f ms over %d analyses"
                     % (wait["p50"], wait["p95"], wait["count"]))
    vad = m.get("vad_wait_ms")
    if vad and vad.get("count"):
        parts.append("VAD wait p95 %.1f ms" % vad["p95"])
    return "; " + ", ".join(parts) if parts else ""


def fixture_label(data):
    """The fixture a step's calls play: one file (aligned), or under Poisson arrivals the
    list each call draws from (the 1-call warm-up, which sets the floor, plays `fixture`)."""
    opts = data.get("options") or {}
    one = Path(data.get("fixture") or "-").name
    if opts.get("arrivals") == "poisson" and opts.get("fixtures"):
        names = ", ".join(Path(x).name for x in opts["fixtures"])
        return "Poisson (seed %s) over %s; warm-up %s" % (opts.get("seed", "-"), names, one)
    return one


def per_run(data):
    r = data["result"]
    n = r.get("largest_passing_step")
    row = {"pass": n, "fail": r.get("smallest_failing_step"), "stopped": r.get("stopped"),
           "floor": data.get("floor_ms"), "limit": data.get("p95_limit_ms"),
           "bottleneck": bottleneck(data), "load": None, "cpu_pct": None,
           "cpu_cores": None, "pss_mb": None, "pss_per_call": None, "pss_1": None,
           "p50_1": None, "p95_1": None, "fixture": fixture_label(data)}
    for line in data.get("header", []):
        if line.startswith("- load average at start:"):
            row["load"] = line.split(":", 1)[1].strip()
    if n:
        st = step_at(data, n)
        srv = st and st.get("server")
        if srv:
            row["cpu_cores"] = srv["cpu_cores"]
            row["cpu_pct"] = 100.0 * srv["cpu_cores"] / n
            if srv.get("pss_peak_mb") is not None:
                row["pss_mb"] = srv["pss_peak_mb"]
                row["pss_per_call"] = srv["pss_peak_mb"] / n
    one = step_at(data, 1)
    if one:
        v = one["summary"].get("v2v_ms")
        if v:
            row["p50_1"], row["p95_1"] = v["p50"], v["p95"]
        srv = one.get("server")
        if srv and srv.get("pss_peak_mb") is not None:
            row["pss_1"] = srv["pss_peak_mb"]
    return row


def f(x, fmt="%.1f"):
    return "-" if x is None else fmt % x


def median_pass(rows):
    vals = [r["pass"] for r in rows if r["pass"] is not None]
    return statistics.median(vals) if vals else None


def lower_bound(rows):
    return any(r["fail"] is None for r in rows)


def svg(runs, path):
    colors = {("brisvox", "models"): "#1f77b4", ("brisvox", "no-models"): "#1f77b4",
              ("pipecat", "models"): "#d62728", ("pipecat", "no-models"): "#d62728"}
    dash = {"models": "", "no-models": "6,4"}
    series = {}
    for key, rs in runs.items():
        by_n = {}
        for _, _, data in rs:
            for st in data["steps"]:
                v = st["summary"].get("v2v_ms")
                if v:
                    by_n.setdefault(st["calls_at_once"], []).append(
                        (v["p95"], st["verdict"]["outcome"] == "pass"))
        series[key] = sorted((n, statistics.median(p for p, _ in xs), all(ok for _, ok in xs))
                             for n, xs in by_n.items())
    pts = [p for s in series.values() for p in s]
    if not pts:
        return
    import math
    W, H, L, R, T, B = 760, 460, 70, 200, 40, 50
    xmax = max(n for n, _, _ in pts)
    lx = lambda n: L + (W - L - R) * (math.log2(n) / max(1.0, math.log2(xmax)))
    ycap = 3000.0
    ymin = 500.0
    ymax = min(ycap, max(1500.0, max(p for _, p, _ in pts) * 1.05))
    ly = lambda ms: T + (H - T - B) * (1 - (min(ms, ymax) - ymin) / (ymax - ymin))
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="14">p95 V2V against concurrent calls (server on one pinned core)</text>' % L]
    y = ymin
    while y <= ymax:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, ly(y), ly(y)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%d</text>' % (L - 5, ly(y) + 4, y))
        y += 250
    n = 1
    while n <= xmax:
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>' % (lx(n), lx(n), T, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (lx(n), H - B + 16, n))
        n *= 2
    o.append('<text x="%d" y="%d" text-anchor="middle">concurrent calls (log scale)</text>' % ((L + W - R) // 2, H - 12))
    o.append('<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">p95 V2V (ms), clipped at %d</text>' % ((T + H - B) // 2, (T + H - B) // 2, ymax))
    ly_leg = T + 10
    for key in [(s, m) for m in MODES for s in SYSTEMS]:
        s = series.get(key)
        if not s:
            continue
        c, d = colors[key], dash[key[1]]
        poly = " ".join("%.1f,%.1f" % (lx(n), ly(p)) for n, p, _ in s)
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>' % (c, d, poly))
        for n, p, ok in s:
            o.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s"/>' % (lx(n), ly(p), c if ok else "white", c))
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>' % (W - R + 15, W - R + 45, ly_leg, ly_leg, c, d))
        o.append('<text x="%d" y="%d">%s, %s</text>' % (W - R + 50, ly_leg + 4, key[0], key[1]))
        ly_leg += 20
    o.append('<text x="%d" y="%d" font-size="11">filled: step passed</text>' % (W - R + 15, ly_leg + 10))
    o.append('<text x="%d" y="%d" font-size="11">hollow: step failed</text>' % (W - R + 15, ly_leg + 26))
    o.append('</svg>')
    path.write_text("\n".join(o) + "\n")


def main():
    d = Path(sys.argv[1])
    runs = load(d)
    header = (d / "header.txt").read_text().rstrip("\n") if (d / "header.txt").exists() else ""
    nruns = max((len(v) for v in runs.values()), default=0)
    out = ["# brisvox against the Pipecat peer, side by side (bench/compare.sh)", "", header, ""]
    notes = d / "notes.md"
    if notes.exists():
        out.append(notes.read_text().rstrip("\n"))
        out.append("")
    out.append("Each server runs alone on one pinned core (core 0) and the load generator on the other "
               "(core 1); mock providers with the same fixed latencies on both sides "
               "(bench/agents/mock-*.toml, bench/pipecat_baseline/README.md). A step passes when no call "
               "failed, no turn was lost or unclean and p95 V2V <= floor + 250 ms, the floor being the "
               "p50 of the run's 1-call warm-up (so each run has its own limit, shown below). One core, "
               "so calls per core = the highest passing step.")
    out.append("")
    if nruns < 3:
        out.append("**%d run(s) per system and mode only: the medians below are of %d run(s); the 3-run "
                   "medians are still to be measured.**" % (nruns, nruns))
        out.append("")
    out.append("| system | mode | fixture | run | load at start | floor / p95 limit (ms) | highest passing step | first failing step | what ended the ramp | CPU per call at the highest pass (% of a core) | PSS peak at the highest pass (MB) / per call (MB) | PSS at 1 call (MB) | V2V at 1 call p50 / p95 (ms) | file |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    med = {}
    for mode in MODES:
        for system in SYSTEMS:
            rs = runs.get((system, mode), [])
            rows = []
            for k, name, data in rs:
                r = per_run(data)
                rows.append(r)
                out.append("| %s | %s | %s | %d | %s | %s / %s | %s | %s | %s | %s | %s / %s | %s | %s / %s | %s |" % (
                    system, mode, r["fixture"], k, r["load"] or "-",
                    f(r["floor"]), f(r["limit"]), f(r["pass"], "%d"), f(r["fail"], "%d"),
                    r["bottleneck"], f(r["cpu_pct"], "%.2f"), f(r["pss_mb"], "%.0f"),
                    f(r["pss_per_call"], "%.2f"), f(r["pss_1"], "%.0f"),
                    f(r["p50_1"]), f(r["p95_1"]), name.replace(".json", ".{md,json}")))
            if rows:
                med[(system, mode)] = (median_pass(rows), lower_bound(rows), len(rows))
    out.append("")
    out.append("CPU per call = server CPU cores over the step / calls. PSS is the peak of the server's process "
               "tree during the step and carries over from earlier, larger steps of the ramp (the bisection "
               "runs smaller steps after a failing one, and neither server returns memory), so PSS per call "
               "is the total divided by the calls, the fixed part included, not a marginal cost.")
    out.append("")
    out.append("## Calls per core (median of the runs) and the ratio")
    out.append("")
    out.append("| mode | brisvox | Pipecat | brisvox / Pipecat |")
    out.append("|---|---|---|---|")
    for mode in MODES:
        b, p = med.get(("brisvox", mode)), med.get(("pipecat", mode))
        def cell(x):
            if not x or x[0] is None:
                return "-"
            return "%s%g (%d run%s)" % (">= " if x[1] else "", x[0], x[2], "" if x[2] == 1 else "s")
        ratio = "-"
        if b and p and b[0] and p[0]:
            ratio = "%s%.1f" % (">= " if b[1] else "", b[0] / p[0])
            if p[1]:
                ratio += " (Pipecat's figure is a lower bound too)"
        out.append("| %s | %s | %s | %s |" % (mode, cell(b), cell(p), ratio))
    out.append("")
    machine = next((l for l in header.splitlines() if l.startswith("- machine:")), "- machine: unknown")
    out.append("Machine: %s. One run of a one-core setup on a shared 2-core machine gives a ratio, not an "
               "absolute capacity; the spec's container figures (4 CPUs) are a different setup." % machine[len("- machine: "):])
    out.append("")
    out.append("Chart: summary.svg (p95 V2V of the answered turns against concurrent calls, median over the runs "
               "at each step; hollow markers are failing steps).")
    out.append("")
    (d / "summary.md").write_text("\n".join(out))
    svg(runs, d / "summary.svg")


if __name__ == "__main__":
    main()
