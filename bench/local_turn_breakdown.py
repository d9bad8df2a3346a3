#!/usr/bin/env python3
"""Where a local turn's time goes, side by side for several v2v runs.

Reads brisvox-bench v2v JSON results (scripts/measure-local-turn.sh writes
them) and prints one Markdown table: per run, the median over its answered
turns of

- V2V: the caller's end of speech (the fixture's) to the first audible bot
  audio at the client;
- the server's turn_metrics, from the end of speech as the VAD placed it:
  the end-of-turn verdict, the STT final, the turn end (what it waited for
  last), the LLM's first token, the TTS's first byte, the first audio sent;
- "after the first audio sent": V2V minus the server's first audio sent (the
  VAD's end of speech after the fixture's, the transport, and the quiet
  start of the voice before the first audible sample).

Medians (lower median for an even count) of the turns that have the metric;
n says how many turns a column is over.

Usage: bench/local_turn_breakdown.py RESULT.json...
"""

import json
import sys

COLUMNS = [
    ("V2V", None),
    ("verdict", "turn_verdict_delay_ms"),
    ("STT final", "stt_final_delay_ms"),
    ("turn end", "end_of_turn_delay_ms"),
    ("LLM first token", "llm_ttft_ms"),
    ("TTS first byte", "tts_ttfb_ms"),
    ("first audio sent", "response_latency_ms"),
    ("after the first audio sent", "gap"),
]


def median(values):
    values = sorted(values)
    return values[(len(values) - 1) // 2] if values else None


def turns(result):
    """(v2v_ms, turn_metrics) of each answered turn."""
    for call in result["calls"]:
        metrics = {m.get("turn"): m for m in call.get("turn_metrics", [])}
        for i, turn in enumerate(call.get("turns", []), start=1):
            if turn.get("outcome") == "answered" and turn.get("v2v_ms") is not None:
                yield turn["v2v_ms"], metrics.get(i, {})


def row(path):
    result = json.load(open(path))
    cols = {name: [] for name, _ in COLUMNS}
    waited = {}
    for v2v, m in turns(result):
        cols["V2V"].append(v2v)
        for name, key in COLUMNS[1:-1]:
            if key in m:
                cols[name].append(m[key])
        if "response_latency_ms" in m:
            cols["after the first audio sent"].append(v2v - m["response_latency_ms"])
        w = m.get("waited_for", "-")
        waited[w] = waited.get(w, 0) + 1
    cells = []
    for name, _ in COLUMNS:
        med = median(cols[name])
        cells.append("-" if med is None else f"{med:.0f} (n={len(cols[name])})")
    prefix = "- load average at start: "
    load = next((h[len(prefix):] for h in result.get("header", []) if h.startswith(prefix)), "")
    waits = ", ".join(f"{k} {v}" for k, v in sorted(waited.items()))
    return f"| {path.split('/')[-1]} | " + " | ".join(cells) + f" | {waits} | {load} |"


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    print("| run | " + " | ".join(f"{n} p50 ms" for n, _ in COLUMNS) + " | waited for | load at start |")
    print("|---|" + "---|" * (len(COLUMNS) + 2))
    for path in paths:
        print(row(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
