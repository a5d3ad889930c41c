"""benchmarks/plot.py: the figures drawn from results files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks.plot import plot, pods_per_cpu_second, read_points

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def results_file(path: Path, nodes: int, rates: dict[str, float],
                 workload: str = "basic") -> Path:
    def figures(rate: float) -> dict[str, Any]:
        return {"throughput_avg": {"median": rate, "low": rate * 0.9, "high": rate * 1.1},
                "cpu_ms_per_pod": {"median": 1000 / rate},
                "algorithm_p99_ms": {"median": 5.0}, "peak_rss_mib": {"median": 200.0}}
    document = {"meta": {"workload": workload, "nodes": nodes, "schedulers": list(rates)},
                "summary": {name: figures(rate) for name, rate in rates.items()}}
    path.write_text(json.dumps({"suites": [document]}))
    return path


def test_workloads_and_growth_figures_are_drawn(tmp_path: Path) -> None:
    files = [results_file(tmp_path / "a.json", 500, {"kpysched": 500, "kube-scheduler": 250}),
             results_file(tmp_path / "b.json", 5000, {"kpysched": 400, "ceiling": 800}),
             results_file(tmp_path / "c.json", 1000, {"kpysched": 90}, workload="preemption")]
    written = plot(files, tmp_path / "out")
    # Growth only for the workload measured at two sizes.
    assert [p.name for p in written] == ["workloads.png", "growth-basic.png"]
    for path in written:
        assert path.read_bytes()[:8] == PNG_SIGNATURE


def test_a_point_given_by_two_files_is_refused_naming_both(tmp_path: Path) -> None:
    first = results_file(tmp_path / "first.json", 500, {"kpysched": 500})
    second = results_file(tmp_path / "second.json", 500, {"kpysched": 510})
    with pytest.raises(ValueError, match=r"first\.json and .*second\.json"):
        read_points([first, second])


def test_pods_per_cpu_second_inverts_cpu_per_pod(tmp_path: Path) -> None:
    (point,) = read_points([results_file(tmp_path / "a.json", 500, {"kpysched": 250})])
    assert pods_per_cpu_second(point) == pytest.approx(250.0)
    document = json.loads((tmp_path / "a.json").read_text())
    document["suites"][0]["summary"]["kpysched"]["cpu_ms_per_pod"] = {"median": 0}
    (tmp_path / "a.json").write_text(json.dumps(document))
    (zero,) = read_points([tmp_path / "a.json"])
    assert math.isnan(pods_per_cpu_second(zero))
