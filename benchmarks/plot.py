"""`python -m benchmarks plot FILE... --out DIR`: the figures docs/benchmarks.md shows.

From the results JSON files `python -m benchmarks run` wrote:

- `workloads.png`: for each workload at each size, the median pods/s of every scheduler
  the files measured (kpysched, kube-scheduler, the ceiling...), the bars spanning the
  repeats' low to high; beside it pods per CPU-second of the scheduler process.
- `growth-<workload>.png` for each workload measured at two sizes or more: median
  pods/s, CPU per pod, algorithm latency p99 and peak RSS against the number of nodes.

Each (workload, nodes, scheduler) must come from one suite only: a figure drawn from
two runs of different days would mix machines' moods, so a repeat is refused, naming
both files. Matplotlib draws without a display (the Agg backend).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Fixed colours, so a scheduler looks the same in every figure.
COLOURS = {"kpysched": "#1f77b4", "kube-scheduler": "#ff7f0e", "ceiling": "#7f7f7f",
           "kpysched-no-records": "#2ca02c"}
GROWTH_PANELS = (
    ("throughput_avg", "pods/s (median)"),
    ("cpu_ms_per_pod", "scheduler CPU per pod (ms)"),
    ("algorithm_p99_ms", "algorithm latency p99 (ms)"),
    ("peak_rss_mib", "scheduler peak RSS (MiB)"),
)


@dataclass(frozen=True, slots=True)
class Point:
    """One scheduler's summary of one workload at one size."""

    workload: str
    nodes: int
    scheduler: str
    summary: dict[str, Any]
    source: str  # the file it came from

    def median(self, key: str) -> float:
        value = self.summary.get(key, {}).get("median")
        return math.nan if value is None else float(value)

    def spread(self, key: str) -> tuple[float, float]:
        figure = self.summary.get(key, {})
        return float(figure.get("low", math.nan)), float(figure.get("high", math.nan))


def read_points(files: Iterable[Path]) -> list[Point]:
    """Every (workload, nodes, scheduler) summary in `files`; ValueError on a repeat."""
    seen: dict[tuple[str, int, str], str] = {}
    points = []
    for path in files:
        for document in json.loads(path.read_text())["suites"]:
            meta = document["meta"]
            for scheduler, summary in document["summary"].items():
                key = (meta["workload"], int(meta["nodes"]), scheduler)
                if key in seen:
                    raise ValueError(f"{scheduler} on {key[0]} at {key[1]} nodes is in both "
                                     f"{seen[key]} and {path}: give one")
                seen[key] = str(path)
                points.append(Point(*key, summary, str(path)))
    return points


def current_points() -> list[Point]:
    """The suites docs/benchmarks.md's summary table reads (benchmarks.summary.CURRENT)."""
    from benchmarks import summary

    points = []
    for row in summary.CURRENT:
        suite = summary.suite_of(row)
        points.extend(Point(row.workload, row.nodes, scheduler, figures, row.file)
                      for scheduler, figures in suite["summary"].items())
    return points


def pods_per_cpu_second(point: Point) -> float:
    """Pods scheduled per CPU-second of the scheduler process (1000 / CPU ms per pod)."""
    per_pod = point.median("cpu_ms_per_pod")
    return 1000.0 / per_pod if per_pod > 0 else math.nan


def _schedulers(points: Sequence[Point]) -> list[str]:
    """In a fixed order: the known ones first, then any other in order of appearance."""
    found = list(dict.fromkeys(point.scheduler for point in points))
    return [name for name in COLOURS if name in found] + [
        name for name in found if name not in COLOURS]


def plot_workloads(points: Sequence[Point], out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # One row per (workload, size), smallest clusters first, top to bottom.
    groups = sorted({(p.workload, p.nodes) for p in points}, key=lambda g: (g[1], g[0]))
    schedulers = _schedulers(points)
    by_key = {(p.workload, p.nodes, p.scheduler): p for p in points}
    height = 0.8 / max(1, len(schedulers))
    figure, (rate, per_core) = plt.subplots(
        1, 2, figsize=(13, 1.2 + 0.45 * len(groups) * max(1, len(schedulers)) / 2),
        sharey=True, constrained_layout=True)
    for index, scheduler in enumerate(schedulers):
        ys, medians, lows, highs, cores, core_ys = [], [], [], [], [], []
        for position, (workload, nodes) in enumerate(groups):
            point = by_key.get((workload, nodes, scheduler))
            if point is None:
                continue
            y = position + (index - (len(schedulers) - 1) / 2) * height
            median = point.median("throughput_avg")
            low, high = point.spread("throughput_avg")
            ys.append(y)
            medians.append(median)
            lows.append(max(0.0, median - low) if not math.isnan(low) else 0.0)
            highs.append(max(0.0, high - median) if not math.isnan(high) else 0.0)
            if not math.isnan(value := pods_per_cpu_second(point)):
                core_ys.append(y)
                cores.append(value)
        colour = COLOURS.get(scheduler)
        rate.barh(ys, medians, height, xerr=[lows, highs], capsize=2, label=scheduler,
                  color=colour)
        per_core.barh(core_ys, cores, height, label=scheduler, color=colour)
    rate.set_yticks(range(len(groups)),
                    [f"{workload}, {nodes:,} nodes" for workload, nodes in groups],
                    fontsize=8)
    rate.invert_yaxis()
    for axes, title, unit in (
            (rate, "Throughput: median of repeats, bars from low to high", "pods/s"),
            (per_core, "Pods per CPU-second of the scheduler process", "pods / CPU-s")):
        axes.set_xlabel(unit)
        axes.set_title(title, fontsize=10)
        axes.legend(fontsize=8, loc="lower right")
        axes.grid(axis="x", alpha=0.3)
    target = out / "workloads.png"
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target


def plot_growth(points: Sequence[Point], workload: str, out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = [p for p in points if p.workload == workload]
    figure, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for (key, title), panel in zip(GROWTH_PANELS, axes.flat, strict=True):
        for scheduler in _schedulers(mine):
            series = sorted((p.nodes, p.median(key)) for p in mine
                            if p.scheduler == scheduler and not math.isnan(p.median(key)))
            if len(series) < 2:
                continue
            panel.plot([n for n, _ in series], [v for _, v in series], marker="o",
                       label=scheduler, color=COLOURS.get(scheduler))
        panel.set_title(title, fontsize=10)
        panel.set_xlabel("nodes")
        panel.set_xscale("log")
        panel.grid(alpha=0.3)
        panel.legend(fontsize=8)
    figure.suptitle(f"{workload}: growth with cluster size")
    target = out / f"growth-{workload}.png"
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target


def plot(files: Sequence[Path], out: Path) -> list[Path]:
    """Every figure the files allow (no files: the summary table's), written under
    `out`; the paths written."""
    points = read_points(files) if files else current_points()
    if not points:
        raise ValueError("no suite in the files given")
    out.mkdir(parents=True, exist_ok=True)
    written = [plot_workloads(points, out)]
    for workload in sorted({p.workload for p in points}):
        sizes = {p.nodes for p in points if p.workload == workload}
        if len(sizes) >= 2:
            written.append(plot_growth(points, workload, out))
    return written
