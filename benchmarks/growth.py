"""The growth table: one workload at several cluster sizes, so the cost per node shows.

Reads the suites that `python -m benchmarks run` wrote (any number of files, one
size or several each) and prints, per size and scheduler, the median throughput, CPU
per pod, algorithm latency and peak RSS, with each column's ratio to the smallest
size. `python -m benchmarks growth FILE...`.
"""

from __future__ import annotations

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
    value = summary.get(key, {}).get("median")
    return float(value) if value is not None else None


def growth_table(documents: Sequence[dict[str, Any]], workload: str) -> str:
    """Markdown: a row per (nodes, scheduler) of `workload`, smallest cluster first.
    Refuses suites of the same workload and size given twice (which to show?)."""
    suites = sorted((d for d in documents if d["meta"]["workload"] == workload),
                    key=lambda d: d["meta"]["nodes"])
    if not suites:
        raise ValueError(f"no suite of workload {workload!r} in the files given")
    sizes = [d["meta"]["nodes"] for d in suites]
    repeated = sorted({n for n in sizes if sizes.count(n) > 1})
    if repeated:
        raise ValueError(f"workload {workload!r} at {repeated} nodes given more than once")
    header = ["nodes", "pods", "scheduler",
              *(title for _, title, _ in COLUMNS)]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---:", "---:", "---"] + ["---:"] * len(COLUMNS)) + "|"]
    first: dict[str, dict[str, float | None]] = {}
    for document in suites:
        meta = document["meta"]
        for scheduler in meta["schedulers"]:
            summary = document["summary"].get(scheduler)
            if summary is None:
                continue
            base = first.setdefault(scheduler, {key: _median(summary, key)
                                                for key, _, _ in COLUMNS})
            cells = [str(meta["nodes"]), str(meta["pods"]), scheduler]
            for key, _, spec in COLUMNS:
                value = _median(summary, key)
                if value is None:
                    cells.append("-")
                    continue
                cell = spec.format(value)
                start = base[key]
                if start and meta["nodes"] != sizes[0]:
                    cell += f" ({value / start:.2f}x)"
                cells.append(cell)
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
