"""Draw the dashboard's panels from a snapshot of real Prometheus query results.

    KPYSCHED_DASHBOARD_SNAPSHOT=/tmp/dash.json .venv/bin/python -m pytest -m in_cluster
    .venv/bin/python scripts/render-dashboard.py /tmp/dash.json docs/dashboard.png

The snapshot (written by tests/e2e/test_in_cluster.py) holds the dashboard JSON and,
for each panel query, the range query result over that run. Panels are laid out by
their gridPos as Grafana does (24 columns) and read as Grafana shows them: each series
named by its target's legendFormat (`{{label}}` filled from the series' labels) in a
legend list under the graph, values and axes in the panel's unit
(fieldConfig.defaults.unit: s, ops, percentunit, bytes, short), stat panels the last
value on their threshold's colour. Drawn with matplotlib (a dev dependency).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch
from matplotlib.ticker import FuncFormatter, MaxNLocator

COLUMN, ROW = 64, 36  # pixels per grid column / grid row
DPI = 100
# Grafana's dark theme and its classic palette, so the picture reads as the real thing.
CANVAS, PANEL, BORDER, TEXT, MUTED, GRID = ("#111217", "#181b1f", "#2c3235", "#ccccdc",
                                            "#8e8e8e", "#26292e")
PALETTE = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9",
           "#705da0", "#508642", "#cca300", "#447ebc", "#c15c17")
NAMED_COLOURS = {"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830",
                 "yellow": "#fade2a", "blue": "#5794f2", "purple": "#b877d9"}
LEGEND_FONT, LEGEND_LINE = 7.5, 13  # points, pixels per legend row
LEGEND_ROWS = 4  # at most; Grafana scrolls a longer list


# -- units, as Grafana formats them -------------------------------------------------

def _trim(value: float) -> str:
    text = f"{value:.3g}"
    return text if "e" not in text else f"{value:.0f}"


def _scaled(value: float, steps: tuple[tuple[float, str], ...], base: str) -> str:
    for scale, suffix in steps:
        if abs(value) >= scale:
            return f"{_trim(value / scale)} {suffix}"
    return f"{_trim(value)}{base}"


def format_value(value: float, unit: str | None) -> str:
    """A value in the panel's unit: 0.25 s -> '250 ms', 0.4 percentunit -> '40%', ..."""
    if math.isnan(value):
        return "No data"
    if value == 0:
        return {"percentunit": "0%", "s": "0 s", "bytes": "0 B", "ops": "0 ops/s"}.get(
            unit or "", "0")
    if unit == "s":
        if abs(value) >= 3600:
            return f"{_trim(value / 3600)} hour"
        if abs(value) >= 60:
            return f"{_trim(value / 60)} min"
        if abs(value) >= 1:
            return f"{_trim(value)} s"
        if abs(value) >= 1e-3:
            return f"{_trim(value * 1e3)} ms"
        return f"{_trim(value * 1e6)} µs"
    if unit == "ops":
        return _scaled(value, ((1e6, "Mil ops/s"), (1e3, "K ops/s")), " ops/s")
    if unit == "percentunit":
        return f"{_trim(value * 100)}%"
    if unit == "percent":
        return f"{_trim(value)}%"
    if unit == "bytes":
        return _scaled(value, ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")), " B")
    return _scaled(value, ((1e9, "Bil"), (1e6, "Mil"), (1e3, "K")), "")


# -- queries and series -------------------------------------------------------------

def substitute(expr: str, variables: dict[str, str]) -> str:
    for name, value in variables.items():
        expr = expr.replace(name, value)
    return expr


def legend_name(legend_format: str | None, labels: dict[str, str], expr: str) -> str:
    """The series' name as Grafana gives it: legendFormat with {{label}} filled in, else
    the metric and its labels."""
    if legend_format:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""),
                      legend_format)
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{labels.get('__name__', '')}{{{inner}}}" if labels else expr


def points(series: dict[str, Any]) -> list[tuple[float, float]]:
    return [(float(t), float(v)) for t, v in series["values"]
            if v not in ("NaN", "+Inf", "-Inf")]


def panel_series(panel: dict[str, Any], results: dict[str, list[dict[str, Any]]],
                 variables: dict[str, str]) -> list[tuple[str, list[tuple[float, float]]]]:
    out = []
    for target in panel.get("targets", []):
        expr = substitute(target["expr"], variables)
        for series in results.get(expr, []):
            # A series whose samples are all NaN keeps its legend entry, as in Grafana.
            out.append((legend_name(target.get("legendFormat"), series["metric"], expr),
                        points(series)))
    return out


def with_gaps(values: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Times and values, broken (NaN) where samples stop for a while, as Grafana does
    not join a series across missing scrapes."""
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(values))
    usual = steps[len(steps) // 2] if steps else 0.0
    times: list[float] = []  # matplotlib's date numbers
    ys: list[float] = []
    for index, (t, v) in enumerate(values):
        if index and usual and t - values[index - 1][0] > 3 * usual:
            times.append(_date(t - usual))
            ys.append(float("nan"))
        times.append(_date(t))
        ys.append(v)
    return times, ys


def _date(seconds: float) -> float:
    return float(mdates.date2num(datetime.fromtimestamp(seconds, UTC)))


# -- drawing ------------------------------------------------------------------------

def _box(figure: Figure, panel: dict[str, Any], height: float) -> tuple[float, ...]:
    grid = panel["gridPos"]
    width = 24 * COLUMN
    x, y = grid["x"] * COLUMN + 4, grid["y"] * ROW + 4
    w, h = grid["w"] * COLUMN - 8, grid["h"] * ROW - 8
    return x / width, 1 - (y + h) / height, w / width, h / height


def _threshold_colour(panel: dict[str, Any], value: float) -> str:
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get(
        "steps", [])
    colour = "green"
    for step in steps:
        if step.get("value") is None or (not math.isnan(value) and value >= step["value"]):
            colour = step["color"]
    return NAMED_COLOURS.get(colour, colour)


def draw_stat(figure: Figure, panel: dict[str, Any], box: tuple[float, ...],
              series: list[tuple[str, list[tuple[float, float]]]], unit: str | None) -> None:
    x, y, w, h = box
    last = [(name, values[-1][1]) for name, values in series if values] or [
        ("", float("nan"))]
    cell = w / len(last)
    for index, (name, value) in enumerate(last):
        colour = _threshold_colour(panel, value)
        figure.patches.append(FancyBboxPatch(
            (x + index * cell, y), cell, h, boxstyle="round,pad=0,rounding_size=0.002",
            transform=figure.transFigure, facecolor=colour, edgecolor=BORDER, zorder=-1))
        figure.text(x + index * cell + 0.006, y + h - 0.004, panel["title"], color="white",
                    fontsize=9.5, fontweight="bold", va="top")
        figure.text(x + (index + 0.5) * cell, y + h * 0.4, format_value(value, unit),
                    color="white", fontsize=24, ha="center", va="center", fontweight="bold")
        if len(last) > 1:
            figure.text(x + (index + 0.5) * cell, y + h * 0.12, name, color="white",
                        fontsize=8, ha="center")


def _legend_layout(names: list[str], width_px: float) -> tuple[int, int]:
    longest = max((len(n) for n in names), default=1)
    per_row = max(1, int(width_px // (longest * 5.2 + 26)))
    rows = min(LEGEND_ROWS, math.ceil(len(names) / per_row))
    return per_row, rows


def row_major(items: list[Any], per_row: int) -> list[Any]:
    """matplotlib fills a legend column by column; Grafana's list reads row by row."""
    rows = math.ceil(len(items) / per_row)
    return [items[row * per_row + column] for column in range(per_row)
            for row in range(rows) if row * per_row + column < len(items)]


def draw_timeseries(figure: Figure, panel: dict[str, Any], box: tuple[float, ...],
                    series: list[tuple[str, list[tuple[float, float]]]], unit: str | None,
                    height: float, span: tuple[float, float]) -> None:
    x, y, w, h = box
    figure.patches.append(FancyBboxPatch(
        (x, y), w, h, boxstyle="round,pad=0,rounding_size=0.002",
        transform=figure.transFigure, facecolor=PANEL, edgecolor=BORDER, zorder=-1))
    figure.text(x + 0.006, y + h - 0.004, panel["title"], color=TEXT, fontsize=9.5,
                fontweight="bold", va="top")
    width_px = w * 24 * COLUMN
    names = [name for name, _ in series]
    per_row, rows = _legend_layout(names, width_px - 20)
    legend_px, title_px, axis_px = rows * LEGEND_LINE + 6, 26, 22
    left_px = 62
    axes = figure.add_axes((x + left_px / (24 * COLUMN), y + (legend_px + axis_px) / height,
                            w - (left_px + 12) / (24 * COLUMN),
                            h - (legend_px + axis_px + title_px) / height))
    axes.set_facecolor(PANEL)
    for side in axes.spines.values():
        side.set_visible(False)
    axes.grid(True, color=GRID, linewidth=0.8)
    axes.tick_params(colors=MUTED, labelsize=7.5, length=0)
    counts = all(float(v).is_integer() for _, values in series for _, v in values)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=4, min_n_ticks=2, integer=counts))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_value(v, unit)))
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=UTC))
    axes.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=3, maxticks=7))
    axes.set_xlim(*span)
    handles = []
    for index, (name, values) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        times, ys = with_gaps(values)
        (line,) = axes.plot(times, ys, color=colour, linewidth=1.1, label=name)
        axes.fill_between(times, ys, color=colour, alpha=0.10, linewidth=0)
        handles.append(line)
    low = min((v for _, values in series for _, v in values), default=0.0)
    axes.set_ylim(bottom=min(0.0, low))
    if not any(values for _, values in series):
        axes.text(0.5, 0.5, "No data", transform=axes.transAxes, color=MUTED, ha="center")
    shown = handles[:per_row * rows]
    if shown:
        legend = figure.legend(
            handles=row_major(shown, per_row), loc="lower left", ncol=per_row, frameon=False,
            bbox_to_anchor=(x + 0.004, y + 2 / height), fontsize=LEGEND_FONT,
            handlelength=1.2, handletextpad=0.4, columnspacing=1.2, labelspacing=0.25,
            borderaxespad=0, labelcolor=TEXT)
        for handle in legend.legend_handles:
            if isinstance(handle, Line2D):
                handle.set_linewidth(3)
    if len(handles) > len(shown):
        figure.text(x + w - 0.006, y + 3 / height, f"+{len(handles) - len(shown)} more",
                    color=MUTED, fontsize=LEGEND_FONT, ha="right", va="bottom")


def render(snapshot: dict[str, Any]) -> Figure:
    dashboard, variables = snapshot["dashboard"], snapshot["variables"]
    results: dict[str, list[dict[str, Any]]] = snapshot["results"]
    panels = dashboard["panels"]
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels) * ROW
    figure = plt.figure(figsize=(24 * COLUMN / DPI, height / DPI), dpi=DPI,
                        facecolor=CANVAS)
    # The time axis starts at the first sample: the run's first minutes (image build,
    # helm install) have none.
    start = min((float(t) for result in results.values() for series in result
                 for t, _ in series["values"]), default=snapshot["start"])
    span = (_date(start), _date(snapshot["end"]))
    for panel in panels:
        box = _box(figure, panel, height)
        if panel["type"] == "row":
            figure.text(box[0], box[1] + box[3] / 2, panel["title"], color=TEXT, fontsize=12,
                        fontweight="bold", va="center")
            continue
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        series = panel_series(panel, results, variables)
        if panel["type"] == "stat":
            draw_stat(figure, panel, box, series, unit)
        else:
            draw_timeseries(figure, panel, box, series, unit, height, span)
    return figure


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    snapshot = json.loads(Path(sys.argv[1]).read_text())
    render(snapshot).savefig(sys.argv[2], dpi=DPI, facecolor=CANVAS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
