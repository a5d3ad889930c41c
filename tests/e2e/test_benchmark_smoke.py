"""The benchmark command end to end in a tiny form (issue: benchmark suite).

It runs `python -m benchmarks run` exactly as docs/benchmarks.md does, for both
schedulers and the ceiling (a round-robin binder) on their own fresh clusters, and
checks only that every pod was placed and that the report carries every field.
Timings are never asserted here.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.results import FIGURE_KEYS, FIGURES

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SCHEDULERS = ("kpysched", "kube-scheduler", "ceiling")
NODES, PODS = 20, 60


def test_benchmark_smoke_places_every_pod_and_reports_every_field(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    command = [sys.executable, "-m", "benchmarks", "run", "--workload", "basic",
               "--nodes", str(NODES), "--pods", str(PODS), "--qps", "5000",
               "--schedulers", ",".join(SCHEDULERS), "--out", str(out),
               "--workdir", str(tmp_path / "clusters")]
    finished = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert finished.returncode == 0, f"benchmark failed:\n{finished.stdout}\n{finished.stderr}"

    suites = json.loads(out.read_text())["suites"]
    assert len(suites) == 1
    suite = suites[0]
    meta = suite["meta"]
    for field in ("command", "machine", "kubernetes_version", "kpysched_version", "workload",
                  "nodes", "init_pods", "pods", "qps", "burst", "repeat", "create_mode"):
        assert field in meta, field
    assert (meta["workload"], meta["nodes"], meta["pods"]) == ("basic", NODES, PODS)

    runs = {run["scheduler"]: run for run in suite["runs"]}
    assert set(runs) == set(SCHEDULERS)
    for name, run in runs.items():
        assert run["complete"], f"{name} placed {run['bound']}/{run['pods']} pods"
        assert run["bound"] == PODS
        assert set(run["figures"]) == set(FIGURE_KEYS)
        # Counters that cannot be empty once every pod was placed.
        for key in ("peak_rss_mib", "cpu_seconds", "api_requests_per_pod", "makespan_s"):
            assert run["figures"][key] > 0, (name, key)
        assert run["attempts_by_result"].get("scheduled", 0) >= PODS
        assert run["api_writes_by_kind"].get("POST pods/binding", 0) >= PODS
        # The ceiling writes what a scheduler writes: a Scheduled event per pod too.
        assert run["api_writes_by_kind"].get("POST events", 0) >= PODS
        if name != "ceiling":  # it runs no algorithm to time
            assert not math.isnan(run["figures"]["algorithm_p99_ms"])

    assert set(suite["summary"]) == set(SCHEDULERS)
    for figures in suite["summary"].values():
        assert set(figures) == set(FIGURE_KEYS)
        for spread in figures.values():
            assert set(spread) == {"median", "low", "high", "values"}
    assert set(suite["ratios"]) == set(FIGURE_KEYS)
    assert set(suite["ceiling_ratios"]) == {"kpysched", "kube-scheduler"}

    table = out.with_suffix(".md").read_text()
    for figure in FIGURES:
        assert f"| {figure.label} |" in table, figure.label
    assert "kpysched / kube-scheduler" in table
    assert "kpysched / ceiling" in table and "kube-scheduler / ceiling" in table
