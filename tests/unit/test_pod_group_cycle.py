"""The pod-group scheduling cycle (GenericWorkload and GangScheduling on): a gang is
placed whole or not at all, trying it holds nothing, and every member turned away is
told why, in upstream's words.

Built as the application builds it, with the default profile; the API is a recording
stand-in (what crosses a real API server, against kube-scheduler itself, is in the
differential suite: tests/e2e/differential/test_gang_differential.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from kpysched.apiclient import RawApi
from kpysched.app import build_scheduler
from kpysched.cache.snapshot import Snapshot
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.event_handlers import PodEventHandler
from kpysched.features import Features
from kpysched.listers import Listers
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node, make_pod, make_pod_group

GANG = Features(generic_workload=True, gang_scheduling=True)
HELD_BACK = ("pod group is unschedulable, waiting for minCount pods from a gang to be "
             "scheduled, one or more plugins asked to wait and no plugin rejected pod")


@dataclass
class Harness:
    scheduler: Scheduler
    api: RecordingApi
    listers: Listers
    pods: PodEventHandler

    def group(self, name: str, min_count: int) -> None:
        assert self.listers.workloads is not None
        self.listers.workloads.pod_groups.on_add(make_pod_group(name, min_count))

    def member(self, name: str, group: str, cpu: str = "1", priority: int = 0) -> api.Pod:
        pod = make_pod(name).group(group).req(cpu=cpu).priority(priority).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    async def schedule_all(self) -> None:
        """Run cycles while the active queue has pods, then let the writes finish."""
        queue = self.scheduler.queue
        while queue.pending_counts()["active"]:
            queued = await queue.pop()
            assert queued is not None
            self.scheduler.schedule_one(queued)
        await self.scheduler.drain_writes(timeout=5)

    def bound(self) -> dict[str, str]:
        return {body["metadata"]["name"]: body["target"]["name"]
                for body in self.api.sent("POST", "/binding")}

    def failed(self) -> dict[str, str]:
        return {body["regarding"]["name"]: body["note"]
                for body in self.api.sent("POST", "/events")
                if body["reason"] == "FailedScheduling"}

    def conditions(self) -> list[dict[str, Any]]:
        return [condition for body in self.api.sent("PATCH", "/status")
                if isinstance(body, dict)
                for condition in body.get("status", {}).get("conditions", [])
                if condition.get("type") == "PodGroupScheduled"]


def make_harness(*nodes: api.Node) -> Harness:
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND,
                           "profiles": [{"schedulerName": "kpysched"}]})
    recording = RecordingApi()
    listers = Listers(generic_workload=True)
    scheduler = build_scheduler(config, build_profiles(config, IN_TREE, GANG), IN_TREE,
                                cast(RawApi, recording), listers, features=GANG)
    for node in nodes:
        scheduler.cache.add_or_update_node(node)
    return Harness(scheduler, recording, listers,
                   PodEventHandler(scheduler, scheduler.recorder, gang_scheduling=True))


def node(name: str, cpu: str) -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


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
