#!/usr/bin/env python3
"""Summary of scripts/carrier-v2v.sh: V2V per route, against /call of the same run.

Usage: bench/carrier_v2v_report.py DIR ROUTE... > DIR/summary.md

DIR holds one brisvox-bench v2v JSON per route and round (ROUTE-rK.json);
each ROUTE is NAME=BASELINE, the baseline being the /call route at the same
sample rate (the /call routes themselves name no baseline: NAME=). Pooled
over the rounds: answered turns, failed calls and unclean turns, p50 and p90
(nearest rank), and against the baseline: the difference of the p50s, their
ratio, and the median of the paired differences (the same fixture in the
same round, the route minus /call), which cancels most of the drift of a
loaded machine between rounds.
"""

import glob
import json
import math
import os
import re
import sys


def nearest_rank(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def fixture_key(name):
    """The recording a fixture holds, whatever its rate (`_8k`/`_16k` cut)."""
    return re.sub(r"_(8|16)k$", "", name)


def load(directory, route):
    """Per round: the route's JSON (sorted by round)."""
    runs = []
    for path in glob.glob(os.path.join(directory, f"{route}-r*.json")):
        m = re.search(r"-r(\d+)\.json$", path)
        with open(path) as f:
            runs.append((int(m.group(1)), json.load(f)))
    return sorted(runs, key=lambda r: r[0])


def turns_of(runs):
    """(round, fixture key, call index, v2v) of every answered turn."""
    out = []
    for rnd, data in runs:
        for i, call in enumerate(data["calls"]):
            for t in call["turns"]:
                if t["outcome"] == "answered" and t["v2v_ms"] is not None:
                    out.append((rnd, fixture_key(call["fixture"]), i, t["v2v_ms"]))
    return out


def unclean(runs):
    failed = sum(d["summary"]["failed_calls"] for _, d in runs)
    bad = sum(
        n
        for _, d in runs
        for k, n in d["summary"]["outcomes"].items()
        if k != "answered"
    )
    return failed, bad


def paired(route_turns, base_turns):
    """Route minus baseline for each (round, fixture, call) both answered."""
    base = {(r, f, i): v for r, f, i, v in base_turns}
    return [v - base[(r, f, i)] for r, f, i, v in route_turns if (r, f, i) in base]


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def main():
    directory, routes = sys.argv[1], sys.argv[2:]
    rows = []
    turns = {}
    for spec in routes:
        name, _, base = spec.partition("=")
        runs = load(directory, name)
        if not runs:
            sys.exit(f"carrier_v2v_report: no {name}-r*.json in {directory}")
        turns[name] = turns_of(runs)
        rows.append((name, base, runs))
    print("| route | wire | calls | failed / unclean turns | answered | p50 ms | p90 ms "
          "| vs | p50 - /call p50 | p50 / /call p50 | median paired diff (n) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, base, runs in rows:
        v = [t[3] for t in turns[name]]
        p50, p90 = nearest_rank(v, 50), nearest_rank(v, 90)
        failed, bad = unclean(runs)
        calls = sum(len(d["calls"]) for _, d in runs)
        wire = runs[0][1].get("wire", "").removeprefix("- wire: ")
        wire = wire.split("), ")[-1] if ")" in wire else wire
        if base:
            b = [t[3] for t in turns[base]]
            b50 = nearest_rank(b, 50)
            diff = None if p50 is None or b50 is None else p50 - b50
            ratio = None if diff is None else p50 / b50
            pairs = paired(turns[name], turns[base])
            med = nearest_rank(pairs, 50)
            cmp = (f"{base} | {fmt(diff, '+.1f')} | {fmt(ratio, '.3f')} "
                   f"| {fmt(med, '+.1f')} ({len(pairs)})")
        else:
            cmp = "(baseline) | | | "
        print(f"| {name} | {wire} | {calls} | {failed} / {bad} | {len(v)} "
              f"| {fmt(p50)} | {fmt(p90)} | {cmp} |")


if __name__ == "__main__":
    main()
