"""The pod-group scheduling cycle as v1.36 (GenericWorkload and GangScheduling on): a gang is
placed whole or not at all, trying it holds nothing, and every member turned away is
told why, in upstream's words.

Built as the application builds it, with the default profile; the API is a recording
stand-in (what crosses a real API server, against kube-scheduler itself, is in the
differential suite: tests/e2e/differential/test_gang_differential.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.cache.snapshot import Snapshot
from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api
from tests.unit.builders import make_pod, make_pod_group
from tests.unit.scheduler_harness import SchedulerHarness, build_harness, node

# v1.36's rules (v1.37's are in test_pod_group_cycle_1_37.py).
GANG = Features(generic_workload=True, gang_scheduling=True, release=36)
HELD_BACK = ("pod group is unschedulable, waiting for minCount pods from a gang to be "
             "scheduled, one or more plugins asked to wait and no plugin rejected pod")


class Harness(SchedulerHarness):
    def group(self, name: str, min_count: int) -> None:
        assert self.listers.workloads is not None
        self.listers.workloads.pod_groups.on_add(make_pod_group(name, min_count))

    def member(self, name: str, group: str, cpu: str = "1", priority: int = 0) -> api.Pod:
        pod = make_pod(name).group(group).req(cpu=cpu).priority(priority).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    def failed(self) -> dict[str, str]:
        return self.notes("FailedScheduling")

    def conditions(self) -> list[dict[str, Any]]:
        return [condition for body in self.api.sent("PATCH", "/status")
                if isinstance(body, dict)
                for condition in body.get("status", {}).get("conditions", [])
                if condition.get("type") == "PodGroupScheduled"]


def make_harness(*nodes: api.Node) -> Harness:
    built = build_harness({"schedulerName": "kpysched"}, GANG,
                          Listers(generic_workload=True, release=36), *nodes)
    return Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)


async def test_members_wait_for_min_count_then_the_whole_gang_binds() -> None:
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("g", 3)
    for name in ("a", "b"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    assert harness.scheduler.queue.pending_counts()["gated"] == 2
    harness.member("c", "g")  # completes minCount: every member is released
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c"]
    assert harness.failed() == {}
    assert [c["status"] for c in harness.conditions()] == ["True"]


async def test_a_gang_that_fits_only_in_part_places_nobody_and_holds_nothing() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    failed = harness.failed()
    assert sorted(failed) == ["a", "b", "c"]
    # Two fit and were held back for their group; the third fits nowhere.
    assert sorted(failed.values()).count(HELD_BACK) == 2
    assert any(note.startswith("0/1 nodes are available: 1 Insufficient cpu.")
               for note in failed.values())
    cache = harness.scheduler.cache
    assert cache.assumed_count() == 0
    assert [(c["status"], c["reason"], c["message"]) for c in harness.conditions()] == [
        ("False", "Unschedulable", "pod group is unschedulable")]
    # Trying the gang held nothing: a plain pod gets the whole node.
    plain = make_pod("plain").req(cpu="2").obj()
    plain.spec.scheduler_name = "kpysched"
    harness.pods.on_add(plain)
    await harness.schedule_all()
    assert harness.bound() == {"plain": "n1"}


async def test_a_gang_is_placed_even_when_one_member_fits_nowhere_if_min_count_fits() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 2)
    harness.member("a", "g")
    harness.member("b", "g")
    harness.member("huge", "g", cpu="8")
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b"]
    assert harness.failed()["huge"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


async def test_a_crash_in_the_group_cycle_fails_the_members_and_keeps_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    harness = make_harness(node("n1", "4"))
    harness.group("g", 2)
    harness.member("a", "g")
    harness.member("b", "g")

    def explode(*_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Snapshot, "assume_pod", explode)
    await harness.schedule_all()
    failed = harness.failed()
    assert sorted(failed) == ["a", "b"]
    assert "RuntimeError: boom" in failed["a"]
    assert harness.scheduler.cache.assumed_count() == 0
    assert {harness.scheduler.queue.where(f"uid-default-{n}") for n in "ab"} == {"backoff"}
