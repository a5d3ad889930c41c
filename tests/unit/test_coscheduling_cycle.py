"""Coscheduling's groups through the pod-group cycle: placed whole (at least minMember)
or not at all, nothing held while a group waits, the members that fit told which
member failed and why, the PodGroup told too, and a node added wakes the group at once.

Built as the application builds it, with a profile enabling Coscheduling as
scheduler-plugins' docs do; the API is a recording stand-in (the real API server is in
tests/e2e/test_coscheduling.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

import pytest

from kpysched.apiclient import RawApi
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.features import Features
from kpysched.listers import Listers
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.plugins import IN_TREE
from kpysched.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node, make_pod

PROFILE = {"schedulerName": "kpysched", "plugins": {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}


@dataclass
class Harness:
    scheduler: Scheduler
    api: RecordingApi
    listers: Listers
    pods: PodEventHandler
    nodes: NodeEventHandler

    def group(self, name: str, min_member: int) -> None:
        assert self.listers.coscheduling is not None
        self.listers.coscheduling.pod_groups.on_add(cs.PodGroup(
            metadata=api.ObjectMeta(name=name, namespace="default", uid=f"uid-pg-{name}",
                                    creation_timestamp="2026-01-01T00:00:00Z"),
            spec=cs.PodGroupSpec(min_member=min_member)))

    def member(self, name: str, group: str, cpu: str = "1") -> api.Pod:
        pod = make_pod(name).label(cs.POD_GROUP_LABEL, group).req(cpu=cpu).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    async def schedule_all(self) -> None:
        queue = self.scheduler.queue
        while queue.pending_counts()["active"]:
            queued = await queue.pop()
            assert queued is not None
            self.scheduler.schedule_one(queued)
        await self.scheduler.drain_writes(timeout=5)

    def bound(self) -> dict[str, str]:
        return {body["metadata"]["name"]: body["target"]["name"]
                for body in self.api.sent("POST", "/binding")}

    def notes(self, reason: str, kind: str = "Pod") -> dict[str, str]:
        return {body["regarding"]["name"]: body["note"]
                for body in self.api.sent("POST", "/events")
                if body["reason"] == reason and body["regarding"]["kind"] == kind}


def make_harness(*nodes: api.Node) -> Harness:
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, "profiles": [PROFILE]})
    recording = RecordingApi()
    listers = Listers(coscheduling=True)
    features = Features()
    scheduler = build_scheduler(config, build_profiles(config, IN_TREE, features), IN_TREE,
                                cast(RawApi, recording), listers, features=features)
    listers.coscheduling.requeue_with(scheduler.queue.move_on_event)  # type: ignore[union-attr]
    for node in nodes:
        scheduler.cache.add_or_update_node(node)
    return Harness(scheduler, recording, listers,
                   PodEventHandler(scheduler, scheduler.recorder, gang_scheduling=True),
                   NodeEventHandler(scheduler))


def node(name: str, cpu: str) -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


async def test_members_are_held_until_min_member_exist_then_bind_together() -> None:
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("g", 3)
    harness.member("a", "g")
    harness.member("b", "g")
    await harness.schedule_all()
    assert harness.bound() == {} and harness.notes("FailedScheduling") == {}
    assert harness.scheduler.queue.pending_counts()["gated"] == 2
    harness.member("c", "g")
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c"]
    assert harness.notes("Scheduled", kind="PodGroup") == {
        "g": "PodGroup default/g: 3 of 3 pods fit, minMember 3"}


async def test_a_group_that_fits_in_part_binds_none_holds_nothing_and_says_who_failed() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    assert harness.scheduler.cache.assumed_count() == 0
    notes = harness.notes("FailedScheduling")
    # Which member is tried last (and finds no room) follows the queue's order.
    (failed,) = [name for name, note in notes.items() if note.startswith("0/1 nodes")]
    assert notes[failed].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    verdict = f"PodGroup default/g: 2 of 3 pods fit, minMember 3; pod {failed}: {notes[failed]}"
    assert [note for name, note in notes.items() if name != failed] == [verdict, verdict]
    assert harness.notes("FailedScheduling", kind="PodGroup") == {"g": verdict}
    # The members that fit wait for an event, as the one that did not: none is retried
    # on a timer while nothing changes.
    queue = harness.scheduler.queue
    assert queue.pending_counts()["unschedulable"] == 3


async def test_a_node_added_wakes_the_whole_group(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    harness.nodes.on_add(node("n2", "2"))
    # Each member's backoff (1 s after one failure) still applies: let it pass.
    queue = harness.scheduler.queue
    assert queue.pending_counts()["backoff"] + queue.pending_counts()["active"] == 3
    later = time.monotonic() + 60
    monkeypatch.setattr(queue, "_clock", lambda: later)
    queue.flush_backoff_completed()
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c"]
