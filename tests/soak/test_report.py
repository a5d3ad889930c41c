"""The soak's verdict logic, on made-up observations (no cluster)."""

from __future__ import annotations

import time

from tests.soak.churn import KPYSCHED, UPSTREAM, ChurnCounts
from tests.soak.observer import MAX_BACKOFF_SECONDS, Observer
from tests.soak.plan import PLANS
from tests.soak.report import MIB, SoakReport


def observer() -> Observer:
    return Observer()


def pod(uid: str, *, scheduler: str = KPYSCHED, node: str = "", cpu: str = "1",
        gated: bool = False) -> dict[str, object]:
    spec: dict[str, object] = {
        "schedulerName": scheduler, "nodeName": node,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": "g"}]
    return {"metadata": {"uid": uid, "name": f"pod-{uid}", "labels": {}}, "spec": spec}


def node(name: str, cpu: str = "2") -> dict[str, object]:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def report(seen: Observer) -> SoakReport:
    result = SoakReport(plan=PLANS["ci"], started="now", churn=ChurnCounts(), observer=seen)
    result.finish()
    return result


def test_a_pod_that_moves_is_a_double_bind() -> None:
    seen = observer()
    seen._on_node("ADDED", node("n1"))
    seen._on_pod("ADDED", pod("a", node="n1"))
    seen._on_pod("MODIFIED", pod("a", node="n2"))
    assert report(seen).figures["doubleBinds"] == 1


def test_two_scheduled_events_or_a_series_are_a_double_bind() -> None:
    seen = observer()
    event = {"reason": "Scheduled", "regarding": {"uid": "a", "name": "pod-a"},
             "metadata": {"name": "e1"}}
    seen._on_event("ADDED", event)
    assert report(seen).verdict() == []
    seen._on_event("MODIFIED", {**event, "series": {"count": 2}})
    assert report(seen).figures["doubleBinds"] == 1


def test_an_overcommit_by_kpysched_alone_is_a_violation_a_race_is_not() -> None:
    seen = observer()
    seen._on_node("ADDED", node("n1", cpu="2"))
    seen._on_pod("ADDED", pod("up", scheduler=UPSTREAM, node="n1", cpu="1500m"))
    seen._on_pod("ADDED", pod("kp", node="n1", cpu="1"))  # bound at once: a race
    assert [o["cause"] for o in seen.overcommits] == ["race"]
    assert report(seen).verdict() == []

    seen = observer()
    seen._on_node("ADDED", node("n1", cpu="2"))
    seen._on_pod("ADDED", pod("kp1", node="n1", cpu="1500m"))
    seen.pods["kp1"].bound_at = time.monotonic() - 60  # long before: kpysched knew
    seen._on_pod("ADDED", pod("kp2", node="n1", cpu="1"))
    assert [o["cause"] for o in seen.overcommits] == ["kpysched"]
    assert any("overcommit" in problem for problem in report(seen).verdict())


def test_a_long_pending_pod_without_failed_scheduling_is_late_unless_gated() -> None:
    seen = observer()
    seen.quiet_since = 0.0
    seen._on_pod("ADDED", pod("waiting"))
    seen._on_pod("ADDED", pod("gated", gated=True))
    seen._on_pod("ADDED", pod("told"))
    seen._on_event("ADDED", {"reason": "FailedScheduling", "regarding": {"uid": "told"},
                             "metadata": {"name": "e"}})
    for record in seen.pods.values():
        if record.released_at is not None:
            record.released_at -= 3 * MAX_BACKOFF_SECONDS
    seen.check_pending()
    assert seen.late_pending == {"waiting"}


def test_overlapping_binding_windows_mean_two_leaders() -> None:
    result = report(observer())
    result.bindings_by_replica = {
        0: [("2026-01-01T00:00:01Z", "a"), ("2026-01-01T00:00:05Z", "b")],
        1: [("2026-01-01T00:00:06Z", "c")]}
    assert result.leader_overlaps() == []
    result.bindings_by_replica[1].append(("2026-01-01T00:00:04Z", "d"))
    assert len(result.leader_overlaps()) == 1


def test_memory_that_keeps_growing_is_reported() -> None:
    result = report(observer())
    result.rss_samples = {0: [100 * MIB] * 6 + [400 * MIB] * 3,
                          1: [100 * MIB] * 9}
    assert [p.split(":")[0] for p in result.growth()] == ["replica 0"]
