"""Draw the dashboard's panels from a snapshot of real Prometheus query results.

    KPYSCHED_DASHBOARD_SNAPSHOT=/tmp/dash.json .venv/bin/python -m pytest -m in_cluster
    .venv/bin/python scripts/render-dashboard.py /tmp/dash.json docs/dashboard.png

The snapshot (written by tests/e2e/test_in_cluster.py) holds the dashboard JSON and,
for each panel query, the range query result over that run. Panels are laid out by
their gridPos as Grafana does (24 columns); stat panels show the last value, time
series panels one line per series. The drawing is SVG, turned into PNG by
rsvg-convert (Debian's librsvg2-bin): no plotting library is needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html import escape
from pathlib import Path
from typing import Any

COLUMN, ROW = 56, 34  # pixels per grid column / grid row
COLOURS = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9",
           "#705da0", "#508642", "#cca300")


def substitute(expr: str, variables: dict[str, str]) -> str:
    for name, value in variables.items():
        expr = expr.replace(name, value)
    return expr


def points(series: dict[str, Any]) -> list[tuple[float, float]]:
    return [(float(t), float(v)) for t, v in series["values"] if v not in ("NaN", "+Inf", "-Inf")]


def short(value: float) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def panel_svg(panel: dict[str, Any], results: list[list[dict[str, Any]]], start: float,
              end: float) -> list[str]:
    grid = panel["gridPos"]
    x, y, w, h = grid["x"] * COLUMN, grid["y"] * ROW, grid["w"] * COLUMN, grid["h"] * ROW
    out = [f'<rect x="{x + 3}" y="{y + 3}" width="{w - 6}" height="{h - 6}" rx="3" '
           'fill="#181b1f" stroke="#2c3235"/>',
           f'<text x="{x + 12}" y="{y + 22}" class="title">{escape(panel["title"])}</text>']
    if panel["type"] == "row":
        return [f'<text x="{x + 6}" y="{y + 24}" class="row">{escape(panel["title"])}</text>']
    lines = [points(s) for result in results for s in result]
    lines = [line for line in lines if line]
    if panel["type"] == "stat":
        last = sum(line[-1][1] for line in lines) if lines else float("nan")
        out.append(f'<text x="{x + w / 2}" y="{y + h / 2 + 22}" class="stat">{short(last)}'
                   "</text>")
        return out
    left, top, right, bottom = x + 52, y + 34, x + w - 14, y + h - 22
    values = [v for line in lines for _, v in line] or [0.0]
    low, high = min(0.0, *values), max(values)
    high = high if high > low else low + 1
    out.append(f'<text x="{left - 4}" y="{top + 8}" class="axis" text-anchor="end">'
               f"{short(high)}</text>")
    out.append(f'<text x="{left - 4}" y="{bottom}" class="axis" text-anchor="end">'
               f"{short(low)}</text>")
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#444"/>')
    for index, line in enumerate(lines):
        coords = " ".join(
            f"{left + (t - start) / (end - start) * (right - left):.1f},"
            f"{bottom - (v - low) / (high - low) * (bottom - top):.1f}" for t, v in line)
        colour = COLOURS[index % len(COLOURS)]
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" '
                   'stroke-width="1.5"/>')
    return out


def render(snapshot: dict[str, Any]) -> str:
    dashboard, variables = snapshot["dashboard"], snapshot["variables"]
    results: dict[str, list[dict[str, Any]]] = snapshot["results"]
    panels = dashboard["panels"]
    width = 24 * COLUMN
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels) * ROW
    # The time axis starts at the first sample: the run's first minutes (image build,
    # helm install) have none.
    start = min((float(t) for result in results.values() for series in result
                 for t, _ in series["values"]), default=snapshot["start"])
    body: list[str] = []
    for panel in panels:
        exprs = [substitute(t["expr"], variables) for t in panel.get("targets", [])]
        body += panel_svg(panel, [results.get(e, []) for e in exprs], start, snapshot["end"])
    style = ("text{font-family:sans-serif;fill:#ccccdc}.title{font-size:13px;font-weight:bold}"
             ".row{font-size:15px;font-weight:bold}.axis{font-size:10px;fill:#8e8e8e}"
             ".stat{font-size:30px;text-anchor:middle;fill:#73bf69}")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            f"<style>{style}</style>"
            f'<rect width="{width}" height="{height}" fill="#111217"/>{"".join(body)}</svg>')


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    snapshot = json.loads(Path(sys.argv[1]).read_text())
    svg = Path(sys.argv[2]).with_suffix(".svg")
    svg.write_text(render(snapshot))
    subprocess.run(["rsvg-convert", "-o", sys.argv[2], str(svg)], check=True)
    svg.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
