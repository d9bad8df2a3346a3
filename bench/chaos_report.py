#!/usr/bin/env python3
"""The report of scripts/chaos.sh: the clean runs and the faulted run side by
side, and its checks (see the script's header). Writes OUT.md and OUT.json;
exit status 1 when a check fails.

Usage: bench/chaos_report.py RUNS_DIR OUT APOLOGY LOAD CAPACITY PERCENT SHARE
                             SEED FAULT ITEMS HEADER
"""
import json
import math
import os
import sys


# The least widening of the clean runs' V2V band, in ms (1 % of a ~1 s V2V,
# well under what a caller notices).
MIN_BAND_MS = 10.0


def nearest_rank(values, p):
    """Nearest-rank percentile, as brisvox-bench computes it."""
    if not values:
        return None
    v = sorted(values)
    rank = math.ceil(p / 100 * len(v))
    return v[min(max(rank, 1), len(v)) - 1]


def picked_ids(path):
    """The call ids the server logged as picked by [chaos]."""
    ids = set()
    if not os.path.exists(path):
        return ids
    for line in open(path):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        fields = entry.get("fields", {})
        call_id = fields.get("call_id") or entry.get("call_id")
        if call_id is None:
            for span in entry.get("spans", []) + [entry.get("span", {})]:
                call_id = call_id or (span or {}).get("call_id")
        if call_id:
            ids.add(call_id)
    return ids


def heard_apology(call, apology):
    return apology in " ".join(call.get("bot_texts", []))


def v2v_of(calls):
    return [
        t["v2v_ms"]
        for c in calls
        for t in c["turns"]
        if t["outcome"] == "answered" and t.get("v2v_ms") is not None
    ]


def run_summary(dir_, name, apology):
    r = json.load(open(f"{dir_}/{name}.json"))
    step = r["steps"][0]
    calls = step["calls"]
    picked = picked_ids(f"{dir_}/{name}.picked.jsonl")
    faulted = [c for c in calls if c.get("call_id") in picked]
    clean = [c for c in calls if c.get("call_id") not in picked]
    v = v2v_of(clean)
    before = json.load(open(f"{dir_}/{name}.idle-before.json"))
    after = json.load(open(f"{dir_}/{name}.idle-after.json"))
    turns = [t["outcome"] for c in clean for t in c["turns"]]
    return {
        "name": name,
        "calls": len(calls),
        "picked_in_step": len(faulted),
        "picked_logged": len(picked),
        "clean_calls": len(clean),
        "clean_failed": [c.get("call_id") for c in clean if c.get("error")],
        "clean_with_apology": [c.get("call_id") for c in clean if heard_apology(c, apology)],
        "clean_turns": len(turns),
        "clean_answered": turns.count("answered"),
        "faulted_failed": [c.get("call_id") for c in faulted if c.get("error")],
        "faulted_unclean_end": [
            c.get("call_id") for c in faulted if c.get("end_reason") != "client_end"
        ],
        "faulted_spoke": sum(1 for c in faulted if c.get("bot_texts")),
        "faulted_spoke_no_apology": [
            c.get("call_id")
            for c in faulted
            if c.get("bot_texts") and not heard_apology(c, apology)
        ],
        "faulted_with_apology": sum(1 for c in faulted if heard_apology(c, apology)),
        "clean_v2v": {"n": len(v), "p50": nearest_rank(v, 50), "p95": nearest_rank(v, 95)},
        "server": step.get("server"),
        "idle_before": before,
        "idle_after": after,
        "growth": {k: (after[k] - before[k]) if None not in (after[k], before[k]) else None
                   for k in ("tasks", "fds", "threads")},
        "wall_s": step.get("wall_s"),
    }


def fmt(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    (dir_, out, apology, load, capacity, percent, share, seed, fault, items, header) = sys.argv[1:12]
    names = [n for n in ("clean-1", "faulted", "clean-2") if os.path.exists(f"{dir_}/{n}.json")]
    runs = {n: run_summary(dir_, n, apology) for n in names}
    cleans = [runs[n] for n in names if n.startswith("clean")]
    f = runs.get("faulted")
    checks = []

    def check(ok, text):
        checks.append({"ok": bool(ok), "check": text})

    if f is None or not cleans:
        check(False, "a clean run and the faulted run completed")
    else:
        check(f["picked_in_step"] > 0, f"the faulted run had picked calls ({f['picked_in_step']} of {f['calls']})")
        check(not f["faulted_failed"] and not f["faulted_unclean_end"],
              f"every picked call ended cleanly (`end` client_end, no error): failed {f['faulted_failed']}, other ends {f['faulted_unclean_end']}")
        check(not f["faulted_spoke_no_apology"],
              f"every picked call that the bot spoke in heard the apology ({f['faulted_with_apology']} of {f['faulted_spoke']}; without: {f['faulted_spoke_no_apology']})")
        for r in runs.values():
            check(not r["clean_failed"], f"{r['name']}: no call failed that was not picked ({len(r['clean_failed'])} failed: {r['clean_failed'][:5]})")
            check(not r["clean_with_apology"], f"{r['name']}: no call that was not picked heard the apology ({r['clean_with_apology'][:5]})")
        for k in ("p50", "p95"):
            vals = [c["clean_v2v"][k] for c in cleans]
            got = f["clean_v2v"][k]
            if None in vals or got is None:
                check(False, f"{k} V2V of the calls not picked measured in every run")
            elif len(vals) == 2:
                # The band: the clean runs' two values widened by their
                # difference, and by at least MIN_BAND_MS (with fixed mock
                # latencies two clean runs can agree to 0.01 ms, which would
                # leave no band at all).
                noise = max(abs(vals[0] - vals[1]), MIN_BAND_MS)
                lo, hi = min(vals) - noise, max(vals) + noise
                check(lo <= got <= hi,
                      f"{k} V2V of the calls not picked {got:.1f} ms within the clean runs' {vals[0]:.1f} / {vals[1]:.1f} ms widened by their difference, at least {MIN_BAND_MS:.0f} ms ({lo:.1f} to {hi:.1f} ms)")
            else:
                checks.append({"ok": None, "check": f"{k} V2V of the calls not picked {got:.0f} ms beside the clean run's {vals[0]:.0f} ms ({got - vals[0]:+.0f} ms; one clean run, so no noise band)"})
        for k in ("tasks", "fds", "threads"):
            clean_growth = [c["growth"][k] for c in cleans if c["growth"][k] is not None]
            got = f["growth"][k]
            if got is None or not clean_growth:
                check(False, f"{k} read before and after every run")
            else:
                check(got <= max(clean_growth + [0]),
                      f"idle {k} growth in the faulted run {got:+d} no larger than in the clean runs ({', '.join(f'{g:+d}' for g in clean_growth)}) or 0")

    lines = ["# Chaos at load: faulted and clean calls on one server (#19 item 4)", ""]
    lines += header.splitlines()
    lines += [
        f"- agent: bench/agents/mock-models.toml (mock providers, Silero VAD, Smart Turn v3.2) with `apology = \"{apology}\"`; the faulted run adds `[chaos]` share {share}, seed {seed}, `[chaos.llm]` fault `{fault}`, items {items} (each picked call's first LLM request fails: a server error 503 after {items} tokens for fail_after); agents in `{os.path.basename(dir_)}/`",
        f"- load: {load} calls at once = {percent} % of the capacity {capacity} given on the command line, over /call, Poisson arrivals; server on core 0, generator on core 1; every run against a fresh server, in the order {', '.join(names)}",
        "- V2V: from the end of the caller's speech to the first bot audio, nearest-rank percentiles over the answered turns of the calls the server did not pick (in the clean runs: every call); the picked calls are read from the server's log",
        "- idle figures: read once the server is ready and again once the run's calls have ended (`brisvox_runtime_alive_tasks`, entries of /proc/PID/fd, Threads of /proc/PID/status), each the least of 5 readings 200 ms apart",
        "",
        "| run | calls | picked (faulted) | picked: ended cleanly / heard the apology / spoke | not picked: failed / answered turns of all | not picked: V2V n / p50 / p95 (ms) | idle tasks before → after | idle fds before → after | idle threads before → after | server cores | RSS peak (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs.values():
        b, a, s = r["idle_before"], r["idle_after"], r["server"] or {}
        picked = r["picked_in_step"]
        ended = picked - len(set(r["faulted_failed"]) | set(r["faulted_unclean_end"]))
        v = r["clean_v2v"]
        lines.append(
            f"| {r['name']} | {r['calls']} | {picked} | {ended} / {r['faulted_with_apology']} / {r['faulted_spoke']} | "
            f"{len(r['clean_failed'])} / {r['clean_answered']} of {r['clean_turns']} | {v['n']} / {fmt(v['p50'])} / {fmt(v['p95'])} | "
            f"{b['tasks']} → {a['tasks']} | {b['fds']} → {a['fds']} | {b['threads']} → {a['threads']} | "
            f"{fmt(s.get('cpu_cores'), 2)} | {fmt(s.get('rss_peak_mb'))} |"
        )
    lines += ["", "## Checks", ""]
    for c in checks:
        mark = {True: "pass", False: "FAIL", None: "shown"}[c["ok"]]
        lines.append(f"- {mark}: {c['check']}")
    lines += ["", f"Per-run reports of `brisvox-bench capacity` (every call, its turns and `bot_texts`), the idle samples and the last /metrics scrape: `{os.path.basename(dir_)}/`."]
    open(f"{out}.md", "w").write("\n".join(lines) + "\n")
    json.dump({"runs": runs, "checks": checks}, open(f"{out}.json", "w"), indent=1)
    return 1 if any(c["ok"] is False for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
