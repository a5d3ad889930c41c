"""What changed in the queue between kube-scheduler v1.36.4 and v1.37.2.

- v1.37's Update reports a pending pod's own change as a TargetPod event (its
  PodSchedulingPropertiesChange with isTargetPod), which a registration for Pod still
  hears but one for UnscheduledPod no longer does; v1.36 reports it as an unschedulable
  pod's update.
- v1.37 spells the pending-pod resource "UnscheduledPod" in its event labels, and an
  update of a pod the queue does not hold adds it as a new pod (UnscheduledPodAdd).
- v1.37 counts queue_incoming_entities_total beside queue_incoming_pods_total, skipping a
  move that lands where the queueing hint's answer pointed (recordIncomingEntitiesMetrics).
"""

from __future__ import annotations

import asyncio

import pytest

from kpysched.framework.cluster_events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    with_hints,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.objects.pod import DEFAULT_SCHEDULER_NAME, PodInfo
from kpysched.plugins import priority_sort, scheduling_gates
from kpysched.queue.hints import QueueingHints
from kpysched.queue.scheduling_queue import SchedulingQueue
from tests.unit.queue.test_scheduling_queue import FakeClock, pod, pop_now, reject, relabelled

POD_LABELS = "PodLabels"  # registers Pod/UpdatePodLabel: hears the pod itself either way
OTHERS = "OtherPods"  # registers UnscheduledPod/UpdatePodLabel
NODES = "Nodes"  # registers Node/Add with a hint answering Queue (after backoff)


def _queue(release: int, clock: FakeClock) -> SchedulingQueue:
    def queue_it(pod: PodInfo, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE

    registered = {
        POD_LABELS: with_hints([ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)]),
        OTHERS: with_hints([ClusterEvent(Resource.UNSCHEDULED_POD,
                                         ActionType.UPDATE_POD_LABEL)]),
        NODES: (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), queue_it),),
    }
    return SchedulingQueue(
        priority_sort.PrioritySort().less, scheduling_gates.SchedulingGates().pre_enqueue,
        QueueingHints({DEFAULT_SCHEDULER_NAME: registered}),
        initial_backoff_seconds=1.0, max_backoff_seconds=10.0, clock=clock, release=release)


async def _rejected(queue: SchedulingQueue, name: str, plugin: str) -> QueuedPodInfo:
    queue.add(pod(name, labels={"v": "1"}))
    popped = await pop_now(queue)
    reject(queue, popped, plugin)
    assert queue.where(popped.pod_info.uid) == "unschedulable"
    return popped


@pytest.mark.parametrize(("release", "event"), [
    (36, "UnschedulablePodUpdatePodLabel"),
    (37, "TargetPodUpdatePodLabel"),
])
async def test_a_pending_pods_own_relabel_is_heard_by_a_pod_registration(
        release: int, event: str) -> None:
    clock = FakeClock()
    queue = _queue(release, clock)
    rejected = await _rejected(queue, "p", POD_LABELS)
    clock.advance(60)  # backoff over: the hint's Queue sends it to the active queue
    queue.update(relabelled(rejected.pod_info, {"v": "2"}))
    assert queue.where(rejected.pod_info.uid) == "active"
    assert queue.incoming[("active", event)] == 1


@pytest.mark.parametrize(("release", "moved"), [(36, True), (37, False)])
async def test_an_unscheduled_pod_registration_no_longer_hears_the_pod_itself(
        release: int, moved: bool) -> None:
    """v1.37: UnscheduledPod means the other pending pods; the pod's own change is a
    TargetPod event."""
    clock = FakeClock()
    queue = _queue(release, clock)
    rejected = await _rejected(queue, "p", OTHERS)
    clock.advance(60)
    queue.update(relabelled(rejected.pod_info, {"v": "2"}))
    assert (queue.where(rejected.pod_info.uid) == "active") is moved


@pytest.mark.parametrize(("release", "label"), [
    (36, "UnschedulablePodAdd"), (37, "UnscheduledPodAdd")])
def test_the_add_label_follows_the_release(release: int, label: str) -> None:
    queue = _queue(release, FakeClock())
    queue.add(pod("p"))
    assert queue.incoming == {("active", label): 1}


@pytest.mark.parametrize(("release", "label"), [
    (36, "UnschedulablePodUpdate"), (37, "UnscheduledPodAdd")])
def test_an_update_of_a_pod_the_queue_does_not_hold_adds_it(release: int, label: str) -> None:
    """v1.37's Update ends in addPod (an add's label); v1.36 moves it as updated."""
    queue = _queue(release, FakeClock())
    queue.update(pod("p"))
    assert queue.incoming == {("active", label): 1}


async def test_entities_are_counted_unless_the_pod_lands_where_the_hint_pointed() -> None:
    clock = FakeClock()
    queue = _queue(37, clock)
    waiting = await _rejected(queue, "waiting", NODES)
    await _rejected(queue, "other", NODES)
    # A new pod counts; a rejected pod parked as its hints said (skip) counts as a pod only.
    assert queue.incoming[("active", "UnscheduledPodAdd")] == 2
    assert queue.incoming[("unschedulable", "ScheduleAttemptFailure")] == 2
    assert queue.incoming_entities == {("active", "UnscheduledPodAdd", "pod"): 2}
    # "Queue" means after backoff: a pod still backing off goes there (as pointed, not
    # counted); one whose backoff is over goes straight to the active queue (counted).
    clock.advance(0.5)
    queue.move_on_event(NODE_ADD)
    assert queue.where(waiting.pod_info.uid) == "backoff"
    assert queue.incoming[("backoff", "NodeAdd")] == 2
    assert ("backoff", "NodeAdd", "pod") not in queue.incoming_entities
    # Both wait out their backoff; once over, it moves them as upstream's flush does.
    clock.advance(60)
    assert queue.flush_backoff_completed() == 2
    assert queue.incoming_entities[("active", "BackoffComplete", "pod")] == 2


async def test_a_hint_sending_a_pod_whose_backoff_is_over_counts_the_entity() -> None:
    clock = FakeClock()
    queue = _queue(37, clock)
    rejected = await _rejected(queue, "p", NODES)
    clock.advance(60)
    queue.move_on_event(NODE_ADD)
    assert queue.where(rejected.pod_info.uid) == "active"
    assert queue.incoming_entities[("active", "NodeAdd", "pod")] == 1
    assert (await asyncio.wait_for(queue.pop(), 1.0)) is not None
