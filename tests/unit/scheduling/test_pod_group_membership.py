"""Who belongs to a pod group, and who is asked when a member arrives (issue 32 items
5, 7 and 8).

- A pending pod whose scheduling.x-k8s.io/pod-group label changes leaves its old group
  (scheduler-plugins lists a group's members by label every time): no phantom member
  counts toward the old group's minMember, is pulled into its cycle or outlives the pod.
- A pending pod's add asks only its own group's held members (upstream moves on an
  unscheduled pod's add only under GangScheduling, for the pod's group), never the
  whole unschedulable pool.
- A GenericWorkload gang that cannot fit waits out its backoff even on an idle
  scheduler, rather than being retried back to back.
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.queue.hints import QueueingHints
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import node
from tests.unit.scheduling import test_coscheduling_cycle as coscheduling
from tests.unit.scheduling import test_pod_group_cycle as gang


def _relabelled(pod: api.Pod, group: str) -> api.Pod:
    meta = pod.metadata
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(
        meta, labels={**meta.labels, cs.POD_GROUP_LABEL: group}, resource_version="2"))


async def test_a_relabelled_pod_leaves_its_old_group() -> None:
    harness = coscheduling.make_harness(node("n1", "4"))
    harness.group("a", 2)
    harness.group("b", 1)
    moved = harness.member("x", "a")
    relabelled = _relabelled(moved, "b")
    harness.pods.on_update(moved, relabelled)
    groups = harness.scheduler.cache.pod_groups
    assert groups is not None
    assert groups.get("default", "a").all_pods() == []
    assert [p.name for p in groups.get("default", "b").all_pods()] == ["x"]
    only = harness.member("a1", "a")
    # A's only real member: held, 1 of minMember 2 (not counted with the phantom).
    assert harness.scheduler.queue.where(only.metadata.uid) == "gated"
    await harness.schedule_all()
    # x now belongs to B (minMember 1) and goes alone; A places nobody.
    assert harness.bound() == {"x": "n1"}
    assert harness.notes("Scheduled", kind="PodGroup") == {
        "b": "PodGroup default/b: 1 of 1 pods fit, minMember 1"}
    assert harness.scheduler.queue.where(only.metadata.uid) == "gated"
    assert not harness.scheduler.cache.is_assumed(only.metadata.uid)
    harness.pods.on_delete(relabelled)
    assert [p.name for p in groups.get("default", "a").all_pods()] == ["a1"]
    assert groups.get("default", "b").all_pods() == []


async def test_a_pods_add_asks_only_its_own_groups_members(
        monkeypatch: pytest.MonkeyPatch) -> None:
    harness = coscheduling.make_harness(node("n1", "1"))
    harness.group("g", 2)
    harness.group("other", 2)
    for index in range(3):  # plain pods that fit nowhere: the unschedulable pool
        plain = make_pod(f"big-{index}").req(cpu="8").obj()
        plain.spec.scheduler_name = "kpysched"
        harness.pods.on_add(plain)
    await harness.schedule_all()
    held = harness.member("g-1", "g", cpu="100m")
    harness.member("o-1", "other", cpu="100m")
    queue = harness.scheduler.queue
    assert queue.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 3,
                                      "gated": 2}
    asked: list[str] = []
    judge = QueueingHints.strategy

    def spy(self: QueueingHints, info: object, *rest: object) -> object:
        asked.append(info.pod_info.name)  # type: ignore[attr-defined]
        return judge(self, info, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(QueueingHints, "strategy", spy)
    plain = make_pod("plain").req(cpu="100m").obj()
    plain.spec.scheduler_name = "kpysched"
    harness.pods.on_add(plain)
    assert asked == []  # no group: nobody else can gain from it
    harness.member("g-2", "g", cpu="100m")
    assert asked == ["g-1"]  # only its own group's held member
    assert queue.where(held.metadata.uid) == "active"


async def test_an_unschedulable_gang_waits_out_its_backoff_on_an_idle_scheduler() -> None:
    harness = gang.make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    queue = harness.scheduler.queue
    assert queue.pending_counts()["backoff"] == 3
    assert queue.scheduling_cycle == 3  # one attempt of the group
    # Nothing to pop until the backoff ends (it was popped at once before: 1,021
    # attempts in 2 s of an idle scheduler).
    task = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert queue.flush_backoff_completed() == 0
