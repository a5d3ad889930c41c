"""A v1.37 pod group waits, backs off and moves as one entity (pod_group_entities.py).

Cases from upstream v1.37.2's TestBackoffQueue_calculateBackoffDuration,
TestAddPodGroupMember, TestDeletePodGroupMember, TestUpdatePodGroupMember,
TestActivatePodGroupMember, TestMoveAllToActiveOrBackoffQueuePodGroupMember,
TestFlushBackoffQCompletedPodGroupMember and TestAddAttemptedPodGroupIfNeeded, as
observed through kpysched's queue (where each member waits, and when it comes back).
"""

from __future__ import annotations

import msgspec
import pytest

from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Status
from kpysched.informers.listers import Listers
from kpysched.objects.pod import PodInfo
from kpysched.plugins import priority_sort, scheduling_gates
from kpysched.queue.pod_group_entities import group_backoff_seconds
from kpysched.queue.scheduling_queue import SchedulingQueue
from tests.unit.builders import make_pod
from tests.unit.queue.test_scheduling_queue import (
    FIT,
    FakeClock,
    hints,
    pop_now,
    reject,
    still_waiting,
)
from tests.unit.scheduler_harness import build_harness, node
from tests.unit.scheduling.test_pod_group_preemption import Harness

NS = 1e-9
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")


@pytest.mark.parametrize(("initial", "maximum", "count", "size", "want"), [
    pytest.param(1, 32, 0, 1, 0, id="no backoff"),
    pytest.param(3, 1000, 5, 1, 48, id="normal"),
    pytest.param(1, 32, 16, 1, 32, id="hitting max backoff duration"),
    pytest.param(1, 2**31 - 1, 32, 1, 2**31 - 1, id="overflow_32bit"),
    pytest.param(1, 32, 7, 10, 64, id="larger entity size"),
    pytest.param(1, 32, 16, 10, 101, id="hitting max backoff duration with larger entity size"),
])
def test_group_backoff_duration(initial: int, maximum: int, count: int, size: int,
                                want: int) -> None:
    got = group_backoff_seconds(count, initial * NS, maximum * NS, size)
    assert round(got / NS) == want


def test_a_group_of_one_has_the_pod_cap() -> None:
    assert group_backoff_seconds(9, 1.0, 10.0, 1) == 10.0
    assert group_backoff_seconds(9, 1.0, 10.0, 4) == 20.0  # 10 * sqrt(4)


def queue_37(clock: FakeClock, *, release: int = 37, maximum: float = 10.0) -> SchedulingQueue:
    return SchedulingQueue(priority_sort.PrioritySort().less,
                           scheduling_gates.SchedulingGates().pre_enqueue, hints(),
                           clock=clock, pod_groups=True, release=release,
                           initial_backoff_seconds=1.0, max_backoff_seconds=maximum)


def member(name: str, *, gates: tuple[str, ...] = (), group: str = "g") -> PodInfo:
    builder = make_pod(name).group(group)
    if gates:
        builder.gates(*gates)
    return builder.info()


def add_all(queue: SchedulingQueue, *members: PodInfo) -> None:
    for info in members:
        queue.add(info)


def ungated(info: PodInfo) -> PodInfo:
    return PodInfo.of(msgspec.structs.replace(
        info.pod, spec=msgspec.structs.replace(info.pod.spec, scheduling_gates=[])))


async def take_group(queue: SchedulingQueue, *others: PodInfo) -> list[QueuedPodInfo]:
    """What the pod-group cycle does: pop one member, take the others with it."""
    first = await pop_now(queue)
    taken = [first]
    for other in others:
        if other.uid != first.pod_info.uid:
            found = queue.pop_specific(other.uid)
            assert found is not None
            taken.append(found)
    return taken


async def fail_group(queue: SchedulingQueue, *members: PodInfo) -> None:
    for info in await take_group(queue, *members):
        reject(queue, info, FIT)


async def test_a_failed_group_backs_off_once_per_attempt_and_together() -> None:
    clock = FakeClock()
    queue = queue_37(clock)
    a, b = member("a"), member("b")
    add_all(queue, a, b)
    await fail_group(queue, a, b)
    assert queue.where(a.uid) == queue.where(b.uid) == "backoff"
    # One failure of the group (not two, one per member): 1 s.
    clock.advance(1.01)
    assert queue.flush_backoff_completed() == 2
    await fail_group(queue, a, b)
    clock.advance(1.5)
    assert queue.flush_backoff_completed() == 0  # second failure: 2 s
    clock.advance(0.6)
    assert queue.flush_backoff_completed() == 2


async def test_the_group_backoff_cap_grows_with_the_square_root_of_its_size() -> None:
    clock = FakeClock()
    queue = queue_37(clock, maximum=2.0)
    pods = [member(f"m{i}") for i in range(4)]
    add_all(queue, *pods)
    for _ in range(3):  # 1 s, 2 s, then 4 s (a pod's cap would be 2 s)
        await fail_group(queue, *pods)
        clock.advance(10)
        queue.flush_backoff_completed()
    await fail_group(queue, *pods)
    clock.advance(3.5)
    assert queue.flush_backoff_completed() == 0  # 2 * sqrt(4) = 4 s
    clock.advance(0.6)
    assert queue.flush_backoff_completed() == 4


async def test_v1_36_members_keep_their_own_backoff() -> None:
    clock = FakeClock()
    queue = queue_37(clock, release=36, maximum=2.0)
    pods = [member(f"m{i}") for i in range(4)]
    add_all(queue, *pods)
    for _ in range(3):
        await fail_group(queue, *pods)
        clock.advance(10)
        queue.flush_backoff_completed()
    await fail_group(queue, *pods)
    clock.advance(2.1)
    assert queue.flush_backoff_completed() == 4  # capped at the pod's 2 s


async def test_a_member_arriving_while_its_group_backs_off_waits_with_it() -> None:
    # "existing pod group in backoffQ (ungated addition), stays in backoffQ"
    clock = FakeClock()
    queue = queue_37(clock)
    a = member("a")
    queue.add(a)
    await fail_group(queue, a)
    late = member("late")
    queue.add(late)
    assert queue.where(late.uid) == "backoff"
    assert await still_waiting(queue)
    clock.advance(1.01)
    assert queue.flush_backoff_completed() == 2


async def test_a_gated_member_holds_its_whole_group() -> None:
    # "existing pod group in activeQ (gated addition), becomes gated ..."
    queue = queue_37(FakeClock())
    a, b = member("a"), member("b", gates=("wait",))
    queue.add(a)
    assert queue.where(a.uid) == "active"
    queue.add(b)
    assert queue.where(a.uid) == queue.where(b.uid) == "gated"
    assert await still_waiting(queue)
    # "gated pod update (removal of gate), ungates and moves pod group to activeQ"
    queue.update(ungated(b))
    assert queue.where(a.uid) == queue.where(b.uid) == "active"


async def test_a_group_first_seen_gated_stays_held_when_an_ungated_member_comes() -> None:
    # "first member added (gated), creates new pod group directly in
    # unschedulableEntities"; "existing gated pod group ... (ungated addition), stays
    # ... as gated"
    queue = queue_37(FakeClock())
    a, b = member("a", gates=("wait",)), member("b")
    add_all(queue, a, b)
    assert queue.where(a.uid) == queue.where(b.uid) == "gated"
    assert await still_waiting(queue)


async def test_a_held_group_hears_only_its_holder_events() -> None:
    # "gated pod group not matching gating event stays in unschedulableEntities"
    queue = queue_37(FakeClock())
    a, b = member("a"), member("b", gates=("wait",))
    add_all(queue, a, b)
    hints_before = queue.hints
    queue.hints = hints({"SchedulingGates": (
        ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),)})
    assert queue.move_on_event(NODE_ADD) == 0
    assert queue.where(a.uid) == "gated"
    queue.hints = hints_before


async def test_ungating_one_member_of_two_gated_keeps_the_group_held() -> None:
    # "ungate one pod but another remains gated, keeps pod group ... as gated"
    queue = queue_37(FakeClock())
    a, b = member("a", gates=("x",)), member("b", gates=("y",))
    add_all(queue, a, b)
    queue.update(ungated(a))
    assert queue.where(a.uid) == queue.where(b.uid) == "gated"


async def test_deleting_the_only_gated_member_leaves_the_group_waiting_unheld() -> None:
    # "delete the only gated pod from a group, ungates the pod group" (it stays
    # among the unschedulable until an event moves it)
    queue = queue_37(FakeClock())
    a, b = member("a"), member("b", gates=("wait",))
    add_all(queue, a, b)
    queue.delete(b.uid)
    assert queue.where(a.uid) == "unschedulable"
    assert await still_waiting(queue)
    assert queue.move_on_event(NODE_ADD) == 1  # no rejecting plugin: any event of interest
    assert queue.where(a.uid) == "active"


async def test_activating_one_member_activates_its_group_from_backoff() -> None:
    # "activate pod group in backoffQ, moves pod group to activeQ"
    queue = queue_37(FakeClock())
    a, b = member("a"), member("b")
    add_all(queue, a, b)
    await fail_group(queue, a, b)
    queue.activate([a.uid])
    assert queue.where(a.uid) == queue.where(b.uid) == "active"


async def test_a_placed_group_forgets_its_failures_and_requeues_left_overs_at_once() -> None:
    # "Unschedulable pods are present but pod group scheduling was successful,
    # requeue to active queue directly"
    clock = FakeClock()
    queue = queue_37(clock)
    a, b = member("a"), member("b")
    add_all(queue, a, b)
    await fail_group(queue, a, b)
    clock.advance(1.01)
    queue.flush_backoff_completed()
    await fail_group(queue, a, b)  # two failures: a third would back off 4 s
    clock.advance(2.01)
    queue.flush_backoff_completed()
    placed, left = await take_group(queue, a, b)
    queue.release_events(placed.pod_info.uid)
    reject(queue, left, FIT)
    queue.activate_left_over([left.pod_info.uid])
    assert queue.where(left.pod_info.uid) == "active"
    queue.done(placed.pod_info.uid)
    queue.delete(placed.pod_info.uid)  # bound
    (again,) = await take_group(queue)
    reject(queue, again, FIT)
    clock.advance(1.01)  # failures forgotten: 1 s again
    assert queue.flush_backoff_completed() == 1


async def test_a_binding_failure_is_no_failure_of_the_group() -> None:
    clock = FakeClock()
    queue = queue_37(clock)
    a = member("a")
    queue.add(a)
    (taken,) = await take_group(queue)
    queue.release_events(a.uid)  # Permit let it through; its binding failed
    taken.unschedulable_plugins = set()
    queue.add_unschedulable(taken, error=True)
    # It rejoins its group as a new member would: a fresh entity, tried at once.
    assert queue.where(a.uid) == "active"


async def test_a_group_moved_by_an_event_moves_whole() -> None:
    # "event of interest moves ungated pod group from unschedulableEntities"
    clock = FakeClock()
    queue = queue_37(clock)
    a, b = member("a"), member("b", gates=("wait",))
    add_all(queue, a, b)
    queue.delete(b.uid)
    c = member("c")
    queue.add(c)  # joins the waiting group unasked
    assert queue.where(c.uid) == "unschedulable"
    assert queue.move_on_event(NODE_ADD) == 2
    assert queue.where(a.uid) == queue.where(c.uid) == "active"


# --- through the scheduler: GangScheduling's PreEnqueue, the pod event handlers -------


async def test_a_gang_with_a_gated_member_waits_whole_then_binds_whole() -> None:
    built = build_harness({"schedulerName": "kpysched"},
                          Features.from_gates({"GenericWorkload": True}, release=37),
                          Listers(generic_workload=True, release=37), node("n1", "4"))
    harness = Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)
    harness.group("g", 2, 0)
    held = make_pod("g-2").group("g").gates("example.com/hold").obj()
    held.spec.scheduler_name = "kpysched"
    harness.pods.on_add(held)
    for name in ("g-0", "g-1"):
        harness.pod(name, "1", 0, group="g")
    await harness.schedule_all()
    # Two members would make minCount, but the group waits as one entity.
    assert harness.bound() == {}
    assert harness.notes("FailedScheduling") == {}
    released = msgspec.structs.replace(held, spec=msgspec.structs.replace(
        held.spec, scheduling_gates=[]))
    harness.pods.on_update(held, released)
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["g-0", "g-1", "g-2"]


async def test_a_failed_group_asks_pre_enqueue_once_per_member_coming_back() -> None:
    # Upstream asks PreEnqueue of every member once when the group goes back whole;
    # members coming back one by one must not ask every other member again each time.
    clock = FakeClock()
    asked: list[str] = []
    gates = scheduling_gates.SchedulingGates()

    def counting(pod: PodInfo) -> Status:
        asked.append(pod.name)
        return gates.pre_enqueue(pod)

    queue = SchedulingQueue(priority_sort.PrioritySort().less, counting, hints(),
                            clock=clock, pod_groups=True, release=37)
    pods = [member(f"m{i}") for i in range(50)]
    add_all(queue, *pods)
    taken = await take_group(queue, *pods)
    asked.clear()
    for info in taken:
        reject(queue, info, FIT)
    assert len(asked) == len(pods)
    assert {queue.where(info.uid) for info in pods} == {"backoff"}


async def test_a_group_whose_pod_group_is_deleted_waits_for_it_again() -> None:
    # TestDeletePodGroup / "requeuing a pod group members after PodGroup was deleted
    # moves them to incompletePodGroupPods": no cycle for them until it is back.
    built = build_harness({"schedulerName": "kpysched"},
                          Features.from_gates({"GenericWorkload": True}, release=37),
                          Listers(generic_workload=True, release=37), node("n1", "1"))
    harness = Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)
    harness.group("g", 2, 0)
    uids = [harness.pod(name, "1", 0, group="g").metadata.uid for name in ("g-0", "g-1")]
    await harness.schedule_all()  # one CPU for two: the gang fails and backs off
    queue = harness.scheduler.queue
    assert {queue.where(uid) for uid in uids} == {"backoff"}
    assert harness.listers.workloads is not None
    pod_groups = harness.listers.workloads.pod_groups
    group = pod_groups.get("default/g")
    assert group is not None
    pod_groups.on_delete(group)
    assert {queue.where(uid) for uid in uids} == {"gated"}
    pod_groups.on_add(group)
    assert {queue.where(uid) for uid in uids} <= {"active", "backoff"}


async def test_left_over_members_keep_their_groups_place_in_the_active_queue() -> None:
    # "Unschedulable pods are present but pod group scheduling was successful, requeue
    # to active queue directly and preserve timestamp"
    clock = FakeClock()
    queue = queue_37(clock)
    a, b = member("a"), member("b")
    add_all(queue, a, b)
    placed, left = await take_group(queue, a, b)
    clock.advance(5)
    plain = make_pod("plain").info()
    queue.add(plain)  # came while the group was tried
    clock.advance(1)
    queue.release_events(placed.pod_info.uid)
    reject(queue, left, FIT)
    queue.activate_left_over([left.pod_info.uid])
    assert (await pop_now(queue)).pod_info.uid == left.pod_info.uid


# --- v1.37's entity metrics: a group counts as one "podgroup" entity ----------------


async def test_a_group_is_one_entity_in_the_queue_metrics() -> None:
    # TestIncomingEntitiesMetrics / TestQueuedEntitiesMetrics, for pod groups.
    clock = FakeClock()
    queue = queue_37(clock)
    a, b = member("a"), member("b")
    plain = make_pod("plain").info()
    add_all(queue, a, b)
    queue.add(plain)
    assert queue.incoming_entities == {("active", "UnscheduledPodAdd", "podgroup"): 1,
                                       ("active", "UnscheduledPodAdd", "pod"): 1}
    assert queue.incoming[("active", "UnscheduledPodAdd")] == 3
    assert queue.pending_entities() == {
        ("active", "pod"): 1, ("active", "podgroup"): 1, ("backoff", "pod"): 0,
        ("unschedulable", "pod"): 0, ("gated", "pod"): 0}
    await fail_group(queue, a, b)
    # The group comes back from its attempt once, whatever its hint would say.
    assert queue.incoming_entities[("backoff", "ScheduleAttemptFailure", "podgroup")] == 1
    assert queue.pending_entities()[("backoff", "podgroup")] == 1
    clock.advance(1.01)
    queue.flush_backoff_completed()
    assert queue.incoming_entities[("active", "BackoffComplete", "podgroup")] == 1
    held = member("held", gates=("wait",))
    queue.add(held)  # the group in the active queue: PreEnqueue holds it whole
    assert queue.incoming_entities[("unschedulable", "UnscheduledPodAdd", "podgroup")] == 1
    assert queue.pending_entities()[("gated", "podgroup")] == 1
