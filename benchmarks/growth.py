"""The growth table: one workload at several cluster sizes, so the cost per node shows.

Reads the suites that `python -m benchmarks run` wrote (any number of files, one
size or several each) and prints, per size and scheduler, the median throughput, CPU
per pod, algorithm latency and peak RSS, with each column's ratio to the smallest
size. `python -m benchmarks growth FILE...`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

COLUMNS = (
    ("throughput_avg", "pods/s", "{:.1f}"),
    ("cpu_ms_per_pod", "CPU ms per pod", "{:.2f}"),
    ("algorithm_p50_ms", "algorithm p50 ms", "{:.2f}"),
    ("algorithm_p99_ms", "algorithm p99 ms", "{:.2f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
)


def _median(summary: dict[str, Any], key: str) -> float | None:
    """The median, or None where the scheduler has no such figure (the ceiling has no
    algorithm latency: its summary holds NaN)."""
    value = summary.get(key, {}).get("median")
    if value is None or math.isnan(float(value)):
        return None
    return float(value)


def growth_table(documents: Sequence[dict[str, Any]], workload: str) -> str:
    """Markdown: a row per (nodes, scheduler) of `workload`, smallest cluster first.
    Suites of one size may come from several runs (say, the ceiling measured apart);
    a scheduler given twice at one size is refused (which to show?)."""
    by_size: dict[int, dict[str, tuple[int, dict[str, Any]]]] = {}
    for document in documents:
        meta = document["meta"]
        if meta["workload"] != workload:
            continue
        found = by_size.setdefault(meta["nodes"], {})
        for scheduler in meta["schedulers"]:
            summary = document["summary"].get(scheduler)
            if summary is None:
                continue
            if scheduler in found:
                raise ValueError(f"workload {workload!r}: {scheduler} at {meta['nodes']} "
                                 "nodes given more than once")
            found[scheduler] = (meta["pods"], summary)
    if not by_size:
        raise ValueError(f"no suite of workload {workload!r} in the files given")
    smallest = min(by_size)
    header = ["nodes", "pods", "scheduler", *(title for _, title, _ in COLUMNS)]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---:", "---:", "---"] + ["---:"] * len(COLUMNS)) + "|"]
    first = {scheduler: summary for scheduler, (_, summary) in by_size[smallest].items()}
    for nodes in sorted(by_size):
        for scheduler, (pods, summary) in by_size[nodes].items():
            cells = [str(nodes), str(pods), scheduler]
            for key, _, spec in COLUMNS:
                value = _median(summary, key)
                if value is None:
                    cells.append("-")
                    continue
                cell = spec.format(value)
                start = _median(first[scheduler], key) if scheduler in first else None
                if start and nodes != smallest:
                    cell += f" ({value / start:.2f}x)"
                cells.append(cell)
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
