"""benchmarks/summary.py: docs/benchmarks.md's summary is the results files' figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import summary

DOC = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"


def test_the_doc_shows_exactly_the_table_the_current_files_give() -> None:
    assert summary.section_of(DOC.read_text()) == summary.render(), (
        "docs/benchmarks.md's summary differs from the results files: paste the output "
        "of `python -m benchmarks summary` between its markers")


def test_each_summary_table_fits_one_screen() -> None:
    tables = [[line for line in block.splitlines() if line.startswith("| ")]
              for block in summary.section_of(DOC.read_text()).split("\n\n")]
    tables = [table for table in tables if table]
    assert len(tables) == len(dict.fromkeys(row.section for row in summary.CURRENT))
    assert all(len(table) <= 30 for table in tables), [len(table) for table in tables]


def test_sections_make_titled_tables_with_one_numbering_of_commands(tmp_path: Path) -> None:
    def suite(workload: str, command: str) -> dict[str, Any]:
        return {"meta": {"workload": workload, "upstream": workload, "nodes": 1000,
                         "kubernetes_version": "v1.37.2", "repeat": 3,
                         "started_utc": "2026-11-28T09:00:00Z", "command": command},
                "summary": {"kpysched": _figures(400.0, 2.0),
                            "kube-scheduler": _figures(200.0, 4.0)}}
    (tmp_path / "a.json").write_text(json.dumps({"suites": [suite("basic", "run a")]}))
    (tmp_path / "b.json").write_text(json.dumps({"suites": [suite("gang", "run b")]}))
    original = summary.CURRENT
    summary.CURRENT = (summary.Row("a.json", "basic", 1000, section="First"),
                       summary.Row("b.json", "gang", 1000, section="Second"))
    try:
        rendered = summary.render(tmp_path).splitlines()
    finally:
        summary.CURRENT = original
    assert rendered[0] == "**First**"
    assert rendered[2].startswith("| workload (upstream) |")
    assert rendered[4].startswith("| basic (basic) |") and rendered[4].endswith("[1] |")
    assert rendered[6] == "**Second**"
    assert rendered[10].startswith("| gang (gang) |") and rendered[10].endswith("[2] |")
    assert rendered[-2:] == ["[1] `run a`  ", "[2] `run b`"]


def test_ratios_and_per_core_figures_come_from_the_medians(tmp_path: Path) -> None:
    def figures(rate: float, cpu_ms: float) -> dict[str, dict[str, float]]:
        return {"throughput_avg": {"median": rate}, "cpu_ms_per_pod": {"median": cpu_ms}}
    document = {"suites": [{
        "meta": {"workload": "basic", "nodes": 1000, "upstream": "SchedulingBasic",
                 "repeat": 3, "started_utc": "2026-11-26T21:03:30Z",
                 "kubernetes_version": "v1.37.2",
                 "command": "python -m benchmarks run --workload basic"},
        "summary": {"kpysched": figures(500.0, 2.0), "kube-scheduler": figures(250.0, 4.0)},
    }]}
    (tmp_path / "a.json").write_text(json.dumps(document))
    original = summary.CURRENT
    summary.CURRENT = (summary.Row("a.json", "basic", 1000),)
    try:
        rendered = summary.render(tmp_path)
    finally:
        summary.CURRENT = original
    row = rendered.splitlines()[2]
    assert row == ("| basic (SchedulingBasic) | 1,000 | v1.37.2 | 500 | 250 | **2.00x** | "
                   "500 | 250 | **2.00x** | 3 | 2026-11-26 | [1] |")
    assert rendered.endswith("[1] `python -m benchmarks run --workload basic`")


def test_a_row_naming_a_missing_suite_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"suites": []}))
    with pytest.raises(ValueError, match="no basic suite at 1000 nodes"):
        summary.suite_of(summary.Row("a.json", "basic", 1000), tmp_path)


def _figures(rate: float, cpu_ms: float) -> dict[str, dict[str, float]]:
    return {"throughput_avg": {"median": rate}, "cpu_ms_per_pod": {"median": cpu_ms}}


def _suite(workload: str, pods: int = 2400, **by_scheduler: dict[str, Any]) -> dict[str, Any]:
    return {"meta": {"workload": workload, "nodes": 1000, "init_pods": 1000, "pods": pods,
                     "qps": 5000, "burst": 5000, "create_mode": "before",
                     "upstream": f"{workload} upstream", "repeat": 3,
                     "started_utc": "2026-11-28T09:00:00Z", "kubernetes_version": "v1.37.2",
                     "command": "python -m benchmarks run --workload coscheduling,base"},
            "summary": {name.replace("_", "-"): figures
                        for name, figures in by_scheduler.items()}}


def _render(tmp_path: Path, suites: list[dict[str, Any]], *rows: summary.Row) -> str:
    (tmp_path / "a.json").write_text(json.dumps({"suites": suites}))
    original = summary.CURRENT
    summary.CURRENT = rows
    try:
        return summary.render(tmp_path)
    finally:
        summary.CURRENT = original


def test_a_kpysched_only_workload_is_compared_with_its_named_kpysched_baseline(
        tmp_path: Path) -> None:
    suites = [_suite("coscheduling", kpysched=_figures(300.0, 2.5)),
              _suite("base", kpysched=_figures(400.0, 2.0))]
    rendered = _render(tmp_path, suites,
                       summary.Row("a.json", "coscheduling", 1000, baseline="base"))
    # Both compared cells say whose figures they are: never a bare kube-scheduler number.
    assert rendered.splitlines()[2] == (
        "| coscheduling (coscheduling upstream) | 1,000 | v1.37.2 | 300 | "
        "kpysched baseline (base): 400 | **0.75x** | 400 | kpysched baseline (base): 500 | "
        "**0.80x** | 3 | 2026-11-28 | [1] |")


def test_a_baseline_from_another_run_or_size_is_refused(tmp_path: Path) -> None:
    suites = [_suite("coscheduling", kpysched=_figures(300.0, 2.5)),
              _suite("base", pods=3000, kpysched=_figures(400.0, 2.0))]
    with pytest.raises(ValueError, match="differ in pods"):
        _render(tmp_path, suites, summary.Row("a.json", "coscheduling", 1000, baseline="base"))


def test_a_baseline_without_a_kpysched_run_is_refused(tmp_path: Path) -> None:
    suites = [_suite("coscheduling", kpysched=_figures(300.0, 2.5)),
              _suite("base", kube_scheduler=_figures(400.0, 2.0))]
    with pytest.raises(ValueError, match="baseline base has no kpysched run"):
        _render(tmp_path, suites, summary.Row("a.json", "coscheduling", 1000, baseline="base"))


def test_a_row_without_kube_scheduler_must_name_a_baseline(tmp_path: Path) -> None:
    suites = [_suite("coscheduling", kpysched=_figures(300.0, 2.5))]
    with pytest.raises(ValueError, match="no kube-scheduler run; give the row a kpysched"):
        _render(tmp_path, suites, summary.Row("a.json", "coscheduling", 1000))
