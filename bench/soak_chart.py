#!/usr/bin/env python3
"""Draws a soak's per-minute samples (brisvox-bench soak --out PATH: PATH.json)
as an SVG with three panels: server memory (RSS, anonymous), V2V p50/p95 of
the turns of each minute, and fds / threads / alive tasks. No dependencies.

Usage: bench/soak_chart.py SOAK.json OUT.svg
"""
import json
import sys

W, PANEL_H, PAD_L, PAD_R, PAD_T, GAP = 900, 220, 70, 160, 40, 50
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def panel(y0, title, minutes, series, unit):
    """One panel: `series` is a list of (name, values), values may hold None."""
    values = [v for _, vs in series for v in vs if v is not None]
    top = max(values) * 1.1 if values and max(values) > 0 else 1.0
    x_max = max(minutes) if minutes else 1
    plot_w = W - PAD_L - PAD_R
    x = lambda m: PAD_L + plot_w * m / x_max
    y = lambda v: y0 + PANEL_H - PANEL_H * v / top
    out = [f'<text x="{PAD_L}" y="{y0 - 10}" font-size="14" font-weight="bold">{title}</text>',
           f'<rect x="{PAD_L}" y="{y0}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="#999"/>']
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:.0f}</text>')
        out.append(f'<line x1="{PAD_L}" x2="{PAD_L + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
    out.append(f'<text x="12" y="{y0 + PANEL_H / 2}" font-size="11" transform="rotate(-90 12 {y0 + PANEL_H / 2})">{unit}</text>')
    for k, (name, vs) in enumerate(series):
        pts = " ".join(f"{x(m):.1f},{y(v):.1f}" for m, v in zip(minutes, vs) if v is not None)
        c = COLOURS[k % len(COLOURS)]
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.8"/>')
        out.append(f'<text x="{PAD_L + plot_w + 10}" y="{y0 + 16 + 16 * k}" font-size="12" fill="{c}">{name}</text>')
    for m in range(0, x_max + 1, max(1, x_max // 12)):
        out.append(f'<text x="{x(m):.1f}" y="{y0 + PANEL_H + 14}" font-size="11" text-anchor="middle">{m}</text>')
    return out


def main():
    run = json.load(open(sys.argv[1]))
    s = run["samples"]
    minutes = [x["minute"] for x in s]
    col = lambda k: [x.get(k) for x in s]
    h = PAD_T + 3 * (PANEL_H + GAP) + 20
    body = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif">',
            f'<rect width="{W}" height="{h}" fill="white"/>',
            f'<text x="{PAD_L}" y="20" font-size="15">Soak: {run["calls"]} calls at once, {run["minutes"]} min (x: minutes; warm-up: first {run["warmup_minutes"]})</text>']
    y0 = PAD_T + 20
    body += panel(y0, "Server memory", minutes, [("RSS", col("rss_mb")), ("anonymous", col("anon_mb"))], "MB")
    y0 += PANEL_H + GAP
    body += panel(y0, "V2V of the minute's answered turns", minutes, [("p50", col("v2v_p50_ms")), ("p95", col("v2v_p95_ms"))], "ms")
    y0 += PANEL_H + GAP
    body += panel(y0, "Server resources", minutes, [("fds", col("fds")), ("threads", col("threads")), ("alive tasks", col("alive_tasks")), ("active calls", col("active_calls"))], "count")
    body.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(body) + "\n")


if __name__ == "__main__":
    main()
