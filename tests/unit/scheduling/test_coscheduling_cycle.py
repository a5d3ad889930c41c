"""Coscheduling's groups through the pod-group cycle: placed whole (at least minMember)
or not at all, nothing held while a group waits, the members that fit told which
member failed and why, the PodGroup told too, and a node added wakes the group at once.

Built as the application builds it, with a profile enabling Coscheduling as
scheduler-plugins' docs do; the API is a recording stand-in (the real API server is in
tests/e2e/test_coscheduling.py).
"""

from __future__ import annotations

import time

import pytest

from kpysched.config.features import Features
from kpysched.framework.status import Status
from kpysched.informers.listers import Listers
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.objects.pod import PodInfo
from kpysched.queue.scheduling_queue import SchedulingQueue
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import SchedulerHarness, build_harness, node

PROFILE = {"schedulerName": "kpysched", "plugins": {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}


class Harness(SchedulerHarness):
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


def make_harness(*nodes: api.Node, decision_records: int = 0,
                 metrics: SchedulerMetrics | None = None) -> Harness:
    built = build_harness(PROFILE, Features(), Listers(coscheduling=True), *nodes,
                          metrics=metrics, decision_records=decision_records)
    return Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)


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


async def test_explain_tells_a_held_back_member_which_member_failed() -> None:
    harness = make_harness(node("n1", "2"), decision_records=10)
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    store = harness.scheduler.context.decisions
    assert store is not None
    notes = harness.notes("FailedScheduling")
    for name, note in notes.items():
        (record,) = store.for_pod("default", name)
        assert record["message"] == note
    assert sum("2 of 3 pods fit" in note for note in notes.values()) == 2


async def test_each_member_tried_counts_in_the_algorithm_latency_and_the_group_once() -> None:
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=True)
    harness = make_harness(node("n1", "2"), metrics=metrics)
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    registry = metrics.registry
    assert registry.get_sample_value(
        "scheduler_scheduling_algorithm_duration_seconds_count", {}) == 3
    assert registry.get_sample_value("scheduler_podgroup_schedule_attempts_total",
                                     {"result": "unschedulable", "profile": "kpysched"}) == 1


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


def _record_pre_enqueue(queue: SchedulingQueue) -> list[str]:
    """The names of the pods `queue` asks PreEnqueue about from now on, in order."""
    asked: list[str] = []
    pre_enqueue = queue._pre_enqueue

    def recording(pod: PodInfo) -> Status:
        asked.append(pod.name)
        return pre_enqueue(pod)

    queue._pre_enqueue = recording  # type: ignore[method-assign]
    return asked


async def test_a_node_added_leaves_members_held_for_their_group_alone() -> None:
    """Members PreEnqueue holds (PodGroup missing, or short of members) are not asked
    again for a node: no node can lift that. The last member still releases them."""
    harness = make_harness(node("n1", "4"))
    harness.member("x", "missing")
    harness.group("g", 3)
    harness.member("a", "g")
    harness.member("b", "g")
    queue = harness.scheduler.queue
    asked = _record_pre_enqueue(queue)
    harness.nodes.on_add(node("n2", "4"))
    assert asked == []
    assert queue.pending_counts()["gated"] == 3
    harness.member("c", "g")
    assert sorted(asked) == ["a", "b", "c"]
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c"]
    assert queue.where("uid-default-x") == "gated"


async def test_members_arriving_one_by_one_are_asked_again_only_when_the_last_arrives() -> None:
    """PreEnqueue runs once for each member as it arrives, and once more for the held
    ones when the last completes the group; not for the held ones on every arrival."""
    harness = make_harness(node("n1", "8"))
    harness.group("g", 4)
    queue = harness.scheduler.queue
    asked = _record_pre_enqueue(queue)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    assert asked == ["a", "b", "c"]
    assert queue.pending_counts()["gated"] == 3
    harness.member("d", "g")
    assert sorted(asked[3:]) == ["a", "b", "c", "d"]
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c", "d"]


# --- preemption: all or nothing --------------------------------------------------------


def placed(harness: Harness, name: str, node_name: str, cpu: str = "1", priority: int = 0,
           group: str | None = None) -> None:
    pod = make_pod(name).req(cpu=cpu).priority(priority).node(node_name)
    if group is not None:
        pod = pod.label(cs.POD_GROUP_LABEL, group)
    harness.pods.on_add(pod.obj())


def high_member(harness: Harness, name: str, group: str, cpu: str = "1") -> None:
    pod = make_pod(name).label(cs.POD_GROUP_LABEL, group).req(cpu=cpu).priority(10).obj()
    pod.spec.scheduler_name = "kpysched"
    harness.pods.on_add(pod)


async def deleted(harness: Harness) -> list[str]:
    await harness.scheduler.drain_placements(timeout=5)
    return sorted(path.rsplit("/", 1)[-1] for method, path, _ in harness.api.requests
                  if method == "DELETE")


async def test_a_group_preempts_when_that_places_all_of_it() -> None:
    harness = make_harness(node("n1", "2"))
    placed(harness, "low-1", "n1")
    placed(harness, "low-2", "n1")
    harness.group("g", 2)
    high_member(harness, "a", "g")
    high_member(harness, "b", "g")
    await harness.schedule_all()
    assert await deleted(harness) == ["low-1", "low-2"]
    assert harness.bound() == {}  # they go once the victims are gone


async def test_a_group_that_preemption_cannot_place_whole_preempts_nobody() -> None:
    harness = make_harness(node("n1", "2"))
    placed(harness, "low-1", "n1")
    placed(harness, "low-2", "n1")
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        high_member(harness, name, "g")
    await harness.schedule_all()
    assert await deleted(harness) == []
    assert harness.bound() == {}
    assert sorted(harness.notes("FailedScheduling")) == ["a", "b", "c"]


async def test_victims_from_another_group_go_whole() -> None:
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("low", 2)
    placed(harness, "low-1", "n1", cpu="2", group="low")
    placed(harness, "low-2", "n2", cpu="2", group="low")
    harness.group("g", 1)
    high_member(harness, "a", "g", cpu="2")
    await harness.schedule_all()
    # One node would do for "a", but its victim's group goes with it, on both nodes.
    assert await deleted(harness) == ["low-1", "low-2"]


async def test_a_victims_group_with_a_more_important_member_is_not_preempted() -> None:
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("mixed", 2)
    placed(harness, "low", "n1", cpu="2", group="mixed")
    placed(harness, "high", "n2", cpu="2", priority=100, group="mixed")
    harness.group("g", 1)
    high_member(harness, "a", "g", cpu="2")
    await harness.schedule_all()
    assert await deleted(harness) == []
    note = harness.notes("FailedScheduling")["a"]
    assert "pod group default/mixed of victim default/low cannot be preempted whole" in note
