"""benchmarks/growth.py: the growth table from results documents."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.growth import growth_table


def suite(nodes: int, cpu: dict[str, float], workload: str = "basic") -> dict[str, Any]:
    def figures(ms: float) -> dict[str, Any]:
        return {"throughput_avg": {"median": 1000 / ms}, "cpu_ms_per_pod": {"median": ms},
                "algorithm_p50_ms": {"median": ms / 2}, "algorithm_p99_ms": {"median": ms},
                "peak_rss_mib": {"median": 100 + nodes / 100}}
    return {"meta": {"workload": workload, "nodes": nodes, "pods": 2 * nodes,
                     "schedulers": list(cpu)},
            "summary": {name: figures(ms) for name, ms in cpu.items()}}


def test_rows_by_size_with_ratios_to_the_smallest() -> None:
    table = growth_table([suite(5000, {"kpysched": 4.0, "kube-scheduler": 3.0}),
                          suite(500, {"kpysched": 2.0, "kube-scheduler": 3.0}),
                          suite(500, {"kpysched": 9.0}, workload="node-affinity")], "basic")
    rows = table.splitlines()[2:]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| 500", "1000", "kpysched"], ["| 500", "1000", "kube-scheduler"],
        ["| 5000", "10000", "kpysched"], ["| 5000", "10000", "kube-scheduler"]]
    assert "| 4.00 (2.00x) |" in rows[2]
    assert "| 3.00 (1.00x) |" in rows[3]
    assert "(" not in rows[0]


def test_a_scheduler_given_twice_at_one_size_is_refused() -> None:
    with pytest.raises(ValueError, match="kpysched at 500 nodes given more than once"):
        growth_table([suite(500, {"kpysched": 2.0}), suite(500, {"kpysched": 2.1})], "basic")


def test_one_size_may_come_from_several_runs() -> None:
    table = growth_table([suite(500, {"kpysched": 2.0}), suite(500, {"ceiling": 1.0}),
                          suite(1000, {"kpysched": 3.0, "ceiling": 1.0})], "basic")
    rows = [row.split(" | ")[:3] for row in table.splitlines()[2:]]
    assert rows == [["| 500", "1000", "kpysched"], ["| 500", "1000", "ceiling"],
                    ["| 1000", "2000", "kpysched"], ["| 1000", "2000", "ceiling"]]


def test_no_suite_of_the_workload_is_refused() -> None:
    with pytest.raises(ValueError, match="no suite"):
        growth_table([suite(500, {"kpysched": 2.0})], "preemption")


def test_a_figure_the_scheduler_lacks_is_a_dash() -> None:
    ceiling = suite(500, {"ceiling": 1.0})
    ceiling["summary"]["ceiling"]["algorithm_p99_ms"] = {"median": float("nan")}
    row = growth_table([ceiling], "basic").splitlines()[2]
    assert row.split(" | ")[6] == "-"
