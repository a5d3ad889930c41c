"""benchmarks/summary.py: docs/benchmarks.md's summary is the results files' figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import summary

DOC = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"


def test_the_doc_shows_exactly_the_table_the_current_files_give() -> None:
    assert summary.section_of(DOC.read_text()) == summary.render(), (
        "docs/benchmarks.md's summary differs from the results files: paste the output "
        "of `python -m benchmarks summary` between its markers")


def test_the_summary_fits_one_screen() -> None:
    table = [line for line in summary.section_of(DOC.read_text()).splitlines()
             if line.startswith("| ")]
    assert len(table) <= 30


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
