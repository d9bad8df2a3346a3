#!/usr/bin/env python3
"""Writes DIR/summary.md from the brisvox-bench quality runs of
scripts/quality-compare.sh (DIR/brisvox.json, DIR/brisvox-speculation.json,
DIR/pipecat.json, DIR/brisvox-vad-only.json): the totals side by side. The
VAD-alone run plays only the fixtures with speech over the bot, so its turn and
V2V rows cover fewer calls."""
import json
import sys
from pathlib import Path

RUNS = [("brisvox", "brisvox"), ("brisvox-speculation", "brisvox + speculation"), ("pipecat", "Pipecat peer"),
        ("brisvox-vad-only", "brisvox, VAD-alone interruption")]


def cell(summary, hi):
    if not summary:
        return "-"
    return f"{summary['p50']:.0f} / {summary[hi]:.0f} (n = {summary['n']})"


def main(out: Path) -> None:
    runs = [(name, label, json.loads((out / f"{name}.json").read_text())) for name, label in RUNS
            if (out / f"{name}.json").exists()]
    if not runs:
        sys.exit(f"quality_report: no run files in {out}")
    first = runs[0][2]
    lines = ["# Conversation quality: brisvox and the Pipecat peer on the same fixtures", ""]
    lines += first["header"]
    lines += ["", "Each column is one `brisvox-bench quality` run over the same fixtures, one call at a time, "
              "run one after the other on this machine (the run files beside this one have each run's own "
              "header, per-call table and, for brisvox, the engine's counters). The VAD-alone column (brisvox with "
              "`[interruption] min_speech_ms = 0, backchannels = []`, cutting the bot when the VAD confirms "
              "speech, as the peer does) plays only the fixtures with speech over the bot.", ""]
    rows = [
        ("calls (failed)", lambda t: f"{t['calls']} ({t['failed_calls']})"),
        ("turns", lambda t: t["turns"]),
        ("answered", lambda t: t["answered"]),
        ("premature ends of turn", lambda t: t["premature_ends"]),
        ("missed turns", lambda t: t["missed_turns"]),
        ("turns that began while the bot still spoke", lambda t: t["bot_still_speaking"]),
        ("V2V p50 / p90, ms", lambda t: cell(t["v2v_ms"], "p90")),
        ("V2V max, ms", lambda t: f"{t['v2v_ms']['max']:.0f}" if t["v2v_ms"] else "-"),
        ("barge-ins (talk-over > 1 s)", lambda t: f"{t['barge_ins']} ({t['talk_overs']})"),
        ("barge-in onset -> bot silent p50 / p95, ms", lambda t: cell(t["barge_in_ms"], "p95")),
        ("backchannels over the bot (cut it)", lambda t: f"{t['backchannels_over_bot']} ({t['backchannel_cuts']})"),
        ("noise bursts over the bot (cut it)", lambda t: f"{t['noise_over_bot']} ({t['noise_cuts']})"),
        ("bot spoke again after a cut", lambda t: t["spoke_again_after_cut"]),
    ]
    lines += ["| metric | " + " | ".join(label for _, label, _ in runs) + " |",
              "|---|" + "---|" * len(runs)]
    for name, fn in rows:
        lines.append(f"| {name} | " + " | ".join(str(fn(r["totals"])) for _, _, r in runs) + " |")
    for name, label, r in runs:
        c = r.get("server_counters") or {}
        started = c.get('brisvox_speculation_runs_total{result="started"}', 0)
        wasted = c.get('brisvox_speculation_wasted_tokens_total{kind="output"}', 0)
        if started:
            committed = c.get('brisvox_speculation_runs_total{result="committed"}', 0)
            responses = max(c.get('brisvox_turn_events_total{event="response"}', 0), 1)
            lines += ["", f"{label}: {committed} of {started} speculative runs committed "
                      f"({100 * committed / started:.0f} % of runs); {committed} of {responses} LLM responses "
                      f"started from a committed run ({100 * committed / responses:.0f} %); "
                      f"{(started - committed) / responses:.2f} extra LLM requests per response; "
                      f"wasted output tokens {wasted} (the engine's counters, `{name}.md`)."]
    lines += ["", "Labels:", ""] + [f"- {label}: {r['label']} ({r['url']})" for _, label, r in runs]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'summary.md'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
