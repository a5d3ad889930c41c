"""SchedulingQueue: activeQ order, backoff, unschedulable and gated pods, cluster-event moves.

Time is a fake clock handed to the constructor; upstream's facts come from
pkg/scheduler/backend/queue (scheduling_queue.go, backoff_queue.go). Queueing hints
and the in-flight events rules have their own file (test_queueing_hints.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

import msgspec
import pytest

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    EVERYTHING,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    Registration,
    Resource,
    with_hints,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Status
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.objects.pod import DEFAULT_SCHEDULER_NAME, PodInfo
from kpysched.plugins import priority_sort, scheduling_gates
from kpysched.queue.hints import HintObserver, QueueingHints
from kpysched.queue.scheduling_queue import SchedulingQueue
from tests.unit.builders import make_pod

FIT = "NodeResourcesFit"
TAINT = "TaintToleration"
LABELS = "PodLabelWatcher"
POD_UPDATES = "PodUpdateWatcher"
UNKNOWN = "NotRegistered"

# Which cluster events each (pretend) plugin registered, without hints (always Queue); a
# plugin the profile does not list wakes on anything, as the framework's registry does.
REGISTERED: dict[str, tuple[Registration, ...]] = {
    FIT: (ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
          ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
    TAINT: (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),),
    LABELS: (ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL),),
    POD_UPDATES: (ClusterEvent(Resource.POD, ActionType.UPDATE),),
}

NODE_LABEL_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeUpdate")
NODE_TAINT_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeUpdate")


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def hints(registered: Mapping[str, Iterable[Registration]] | None = None,
          observe: HintObserver | None = None) -> QueueingHints:
    """The one profile's registrations (the builder's pods use the default scheduler)."""
    plugins = {**REGISTERED, **(registered or {})}
    return QueueingHints({DEFAULT_SCHEDULER_NAME: {
        plugin: with_hints(events) for plugin, events in plugins.items()}}, observe=observe)


def make_queue(clock: FakeClock, *, initial: float = 1.0, maximum: float = 10.0,
               pre_enqueue: Callable[[PodInfo], Status] | None = None,
               registered: Mapping[str, Iterable[Registration]] | None = None,
               observe: HintObserver | None = None) -> SchedulingQueue:
    gates = scheduling_gates.SchedulingGates()
    return SchedulingQueue(
        priority_sort.PrioritySort().less,
        pre_enqueue if pre_enqueue is not None else gates.pre_enqueue,
        hints(registered, observe),
        initial_backoff_seconds=initial, max_backoff_seconds=maximum, clock=clock)


def pod(name: str, priority: int | None = None, *, gates: Iterable[str] = (),
        labels: dict[str, str] | None = None) -> PodInfo:
    builder = make_pod(name)
    if priority is not None:
        builder.priority(priority)
    if gates:
        builder.gates(*gates)
    if labels:
        builder.obj().metadata.labels = dict(labels)
    return builder.info()


def changed(info: PodInfo, **spec: object) -> PodInfo:
    """The same pod (same uid) with some spec fields replaced."""
    return PodInfo.of(msgspec.structs.replace(
        info.pod, spec=msgspec.structs.replace(info.pod.spec, **spec)))


def relabelled(info: PodInfo, labels: dict[str, str]) -> PodInfo:
    return PodInfo.of(msgspec.structs.replace(
        info.pod, metadata=msgspec.structs.replace(info.pod.metadata, labels=labels)))


async def pop_now(queue: SchedulingQueue) -> QueuedPodInfo:
    popped = await asyncio.wait_for(queue.pop(), timeout=1.0)
    assert popped is not None
    return popped


async def still_waiting(queue: SchedulingQueue) -> bool:
    """Whether pop() blocks (nothing poppable); cancels the attempt."""
    task = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    waiting = not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return waiting


def reject(queue: SchedulingQueue, info: QueuedPodInfo, *plugins: str) -> None:
    """What the scheduler does when plugins rejected the pod."""
    info.unschedulable_plugins = set(plugins)
    queue.add_unschedulable(info)


def fail_with_error(queue: SchedulingQueue, info: QueuedPodInfo) -> None:
    info.unschedulable_plugins = set()
    queue.add_unschedulable(info, error=True)


async def rejected_pod(queue: SchedulingQueue, clock: FakeClock, info: PodInfo,
                       *plugins: str) -> QueuedPodInfo:
    """Add, pop and reject a pod with no move request: it lands in unschedulable."""
    queue.add(info)
    queued = await pop_now(queue)
    reject(queue, queued, *plugins)
    assert queue.where(info.uid) == "unschedulable"
    return queued


# --- activeQ order ---------------------------------------------------------------------


@pytest.mark.parametrize(("pods", "order"), [
    pytest.param([("low", 0), ("high", 10)], ["high", "low"], id="higher priority first"),
    pytest.param([("first", 5), ("second", 5), ("third", 5)], ["first", "second", "third"],
                 id="equal priority: earliest queued first"),
    pytest.param([("none", None), ("negative", -1), ("positive", 1)],
                 ["positive", "none", "negative"], id="missing priority counts as zero"),
    pytest.param([("a", 1), ("b", 100), ("c", 1), ("d", 100)], ["b", "d", "a", "c"],
                 id="priority then queue time"),
])
async def test_pop_order(pods: list[tuple[str, int | None]], order: list[str]) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in pods:
        queue.add(pod(name, priority))
        clock.advance(1)
    assert [(await pop_now(queue)).pod_info.name for _ in pods] == order


async def test_pop_waits_until_a_pod_is_added() -> None:
    queue = make_queue(FakeClock())
    task = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    assert not task.done()
    queue.add(pod("late"))
    popped = await asyncio.wait_for(task, timeout=1.0)
    assert popped is not None
    assert popped.pod_info.name == "late"
    assert queue.where(popped.pod_info.uid) == "in_flight"


async def test_pop_counts_attempts_and_scheduling_cycles() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("p"))
    first = await pop_now(queue)
    assert (first.attempts, queue.scheduling_cycle) == (1, 1)
    fail_with_error(queue, first)
    clock.advance(60)
    queue.flush_backoff_completed()
    second = await pop_now(queue)
    assert (second.attempts, queue.scheduling_cycle) == (2, 2)


async def test_close_wakes_a_waiting_pop_with_none() -> None:
    queue = make_queue(FakeClock())
    task = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    queue.close()
    assert await asyncio.wait_for(task, timeout=1.0) is None
    assert await asyncio.wait_for(queue.pop(), timeout=1.0) is None


# --- gated pods (PreEnqueue) -----------------------------------------------------------


async def test_gated_pod_stays_out_of_the_active_queue() -> None:
    queue = make_queue(FakeClock())
    gated = pod("gated", 100, gates=["example.com/wait"])
    queue.add(gated)
    queue.add(pod("free", 0))
    assert queue.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0,
                                      "gated": 1}
    assert (await pop_now(queue)).pod_info.name == "free"
    assert await still_waiting(queue)
    assert queue.where(gated.uid) == "gated"


async def test_removing_the_gates_by_update_activates_the_pod() -> None:
    queue = make_queue(FakeClock())
    gated = pod("gated", gates=["example.com/wait"])
    queue.add(gated)
    queue.update(changed(gated, scheduling_gates=[]))
    assert queue.where(gated.uid) == "active"
    assert (await pop_now(queue)).pod_info.pod.spec.scheduling_gates == []


async def test_update_that_keeps_a_gate_keeps_the_pod_gated() -> None:
    queue = make_queue(FakeClock())
    gated = pod("gated", gates=["a", "b"])
    queue.add(gated)
    queue.update(changed(gated, scheduling_gates=[gated.pod.spec.scheduling_gates[1]]))
    assert queue.where(gated.uid) == "gated"
    assert await still_waiting(queue)


async def test_a_finished_preemption_asks_again_only_the_pods_preemption_holds() -> None:
    # Issue 32 item 6: with 10,000 pods behind other gates (e.g. Kueue's), each finished
    # preemption ran PreEnqueue for all of them (78 ms); it is for the preemptors alone.
    admitted: set[str] = set()
    asked: list[str] = []

    def pre_enqueue(info: PodInfo) -> Status:
        asked.append(info.name)
        if info.name in admitted:
            return Status()
        plugin = "DefaultPreemption" if info.name.startswith("preemptor") else "Waiter"
        return Status.unresolvable("not yet", plugin=plugin)

    queue = make_queue(FakeClock(), pre_enqueue=pre_enqueue)
    for name in ("preemptor-a", "preemptor-b", "kept-1", "kept-2"):
        queue.add(pod(name))
    assert queue.pending_counts()["gated"] == 4
    admitted.update({"preemptor-a", "kept-1"})
    asked.clear()
    queue.activate_gated()
    assert sorted(asked) == ["preemptor-a", "preemptor-b"]
    assert queue.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0,
                                      "gated": 3}
    assert (await pop_now(queue)).pod_info.name == "preemptor-a"
    asked.clear()
    queue.activate_gated()  # preemptor-a left the gated pods: not asked again
    assert asked == ["preemptor-b"]


async def test_gated_pod_ignores_cluster_events_and_flushes() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    gated = pod("gated", gates=["g"])
    queue.add(gated)
    queue.move_on_event(EVERYTHING)
    clock.advance(301)
    queue.flush_unschedulable_leftover()
    queue.flush_backoff_completed()
    assert queue.where(gated.uid) == "gated"


# --- failed attempts -------------------------------------------------------------------


@pytest.mark.parametrize(("event_before", "event_during", "plugins", "error", "where"), [
    pytest.param(None, None, {FIT}, False, "unschedulable",
                 id="rejected with no event meanwhile: unschedulable"),
    pytest.param(None, NODE_ADD, {FIT}, False, "backoff",
                 id="event the rejecting plugin hears during the attempt: backoff"),
    pytest.param(None, NODE_TAINT_UPDATE, {FIT}, False, "unschedulable",
                 id="event only another plugin hears during the attempt: unschedulable"),
    pytest.param(NODE_ADD, None, {FIT}, False, "unschedulable",
                 id="event before the attempt started: unschedulable"),
    pytest.param(None, None, set(), False, "backoff",
                 id="no rejecting plugin: backoff"),
    pytest.param(None, None, set(), True, "backoff", id="error: backoff"),
])
async def test_add_unschedulable_destination(event_before: ClusterEvent | None,
                                             event_during: ClusterEvent | None,
                                             plugins: set[str], error: bool,
                                             where: str) -> None:
    queue = make_queue(FakeClock())
    info = pod("p")
    queue.add(info)
    if event_before is not None:
        queue.move_on_event(event_before)
    queued = await pop_now(queue)
    if event_during is not None:
        queue.move_on_event(event_during)
    queued.unschedulable_plugins = set(plugins)
    queue.add_unschedulable(queued, error=error)
    assert queue.where(info.uid) == where


async def test_pod_deleted_in_flight_is_not_requeued() -> None:
    queue = make_queue(FakeClock())
    info = pod("p")
    queue.add(info)
    queued = await pop_now(queue)
    queue.delete(info.uid)
    reject(queue, queued, FIT)
    assert queue.where(info.uid) is None
    assert not queue.contains(info.uid)
    assert queue.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0,
                                      "gated": 0}


async def test_pod_updated_in_flight_is_requeued_in_its_latest_version() -> None:
    queue = make_queue(FakeClock())
    info = pod("p", labels={"v": "1"})
    queue.add(info)
    queued = await pop_now(queue)
    queue.update(relabelled(info, {"v": "2"}))
    fail_with_error(queue, queued)
    assert queue.where(info.uid) == "backoff"
    assert queued.pod_info.pod.metadata.labels == {"v": "2"}


async def test_a_pod_activated_in_flight_is_requeued_when_its_cycle_fails() -> None:
    """Upstream's Activate registers ForceActivate for an in-flight pod (a preemption's
    API calls ending while its preemptor is in its next cycle): a rejection then sends
    it to backoff/active, not to wait among the unschedulable. Meant for that pod
    alone: another pod in flight at the same time still parks."""
    clock = FakeClock()
    queue = make_queue(clock)
    activated, other = pod("activated", 10), pod("other")
    queue.add(activated)
    queue.add(other)
    first, second = await pop_now(queue), await pop_now(queue)
    assert first.pod_info.uid == activated.uid
    queue.activate([activated.uid])
    reject(queue, first, FIT)
    reject(queue, second, FIT)
    assert queue.where(activated.uid) in ("backoff", "active")
    assert queue.where(other.uid) == "unschedulable"


async def test_pop_specific_of_an_in_flight_pod_registers_no_activation() -> None:
    queue = make_queue(FakeClock())
    info = pod("p")
    queue.add(info)
    queued = await pop_now(queue)
    assert queue.pop_specific(info.uid) is None
    reject(queue, queued, FIT)
    assert queue.where(info.uid) == "unschedulable"


async def test_done_forgets_the_in_flight_pod() -> None:
    queue = make_queue(FakeClock())
    info = pod("p")
    queue.add(info)
    await pop_now(queue)
    queue.done(info.uid)
    assert queue.where(info.uid) is None


# --- backoff -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["error", "rejected during a move request"])
@pytest.mark.parametrize(("failures", "seconds"), [
    pytest.param(1, 1.0, id="1st"), pytest.param(2, 2.0, id="2nd"),
    pytest.param(3, 4.0, id="3rd"), pytest.param(4, 8.0, id="4th"),
    pytest.param(5, 10.0, id="5th"), pytest.param(6, 10.0, id="6th"),
])
async def test_backoff_grows_with_consecutive_failures(kind: str, failures: int,
                                                       seconds: float) -> None:
    # (Upstream also rounds expiries to 1s windows under SchedulerPopFromBackoffQ; the
    # durations themselves are what is checked here.)
    clock = FakeClock()
    queue = make_queue(clock, initial=1.0, maximum=10.0)
    info = pod("p")
    queue.add(info)
    for attempt in range(1, failures + 1):
        queued = await pop_now(queue)
        if kind == "error":
            fail_with_error(queue, queued)
        else:
            queue.move_on_event(NODE_ADD)
            reject(queue, queued, FIT)
        assert queue.where(info.uid) == "backoff"
        if attempt < failures:
            clock.advance(60)
            assert queue.flush_backoff_completed() == 1
    clock.advance(seconds - 0.01)
    assert queue.flush_backoff_completed() == 0
    assert queue.where(info.uid) == "backoff"
    clock.advance(0.02)
    assert queue.flush_backoff_completed() == 1
    assert queue.where(info.uid) == "active"


async def test_backoff_is_not_complete_at_the_exact_expiry() -> None:
    # isPodBackingoff: !backoffTime.Before(now) -- equal means still backing off.
    clock = FakeClock(1000.0)
    queue = make_queue(clock)
    info = pod("p")
    queue.add(info)
    fail_with_error(queue, await pop_now(queue))
    clock.advance(1.0)
    assert queue.flush_backoff_completed() == 0
    assert queue.where(info.uid) == "backoff"


async def test_flush_backoff_completed_moves_only_expired_pods_in_priority_order() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in (("low", 0), ("high", 10), ("slow", 50)):
        queue.add(pod(name, priority))
    popped = [await pop_now(queue) for _ in range(3)]
    by_name = {q.pod_info.name: q for q in popped}
    fail_with_error(queue, by_name["low"])
    fail_with_error(queue, by_name["high"])
    clock.advance(2)
    fail_with_error(queue, by_name["slow"])
    clock.advance(0.5)  # low/high expired 1.5s ago, slow has 0.5s to go
    assert queue.flush_backoff_completed() == 2
    assert queue.where(by_name["slow"].pod_info.uid) == "backoff"
    assert [(await pop_now(queue)).pod_info.name for _ in range(2)] == ["high", "low"]


async def test_error_after_a_rejection_backs_off_from_the_initial_duration() -> None:
    # Upstream counts consecutive errors apart from rejections (ConsecutiveErrorsCount vs
    # UnschedulableCount): the first error after a rejection waits the initial 1s.
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, FIT)
    clock.advance(60)
    queue.move_on_event(NODE_ADD)
    queued = await pop_now(queue)
    clock.advance(0.5)  # mid-second: 1.5s later is past upstream's 1s ordering window too
    fail_with_error(queue, queued)
    clock.advance(1.5)
    queue.flush_backoff_completed()
    assert queue.where(info.uid) == "active"


async def test_rejection_after_an_error_backs_off_from_the_initial_duration() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    queue.add(info)
    fail_with_error(queue, await pop_now(queue))
    clock.advance(60)
    queue.flush_backoff_completed()
    queued = await pop_now(queue)
    queue.move_on_event(NODE_ADD)
    clock.advance(0.5)
    reject(queue, queued, FIT)
    assert queue.where(info.uid) == "backoff"
    clock.advance(1.5)
    queue.flush_backoff_completed()
    assert queue.where(info.uid) == "active"


async def test_pop_takes_a_backing_off_rejected_pod_when_the_active_queue_is_empty() -> None:
    # SchedulerPopFromBackoffQ (beta, on by default since v1.33): an idle scheduler does
    # not sit out the backoff of a pod that plugins rejected (podBackoffQ).
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    queue.add(info)
    queued = await pop_now(queue)
    queue.move_on_event(NODE_ADD)
    reject(queue, queued, FIT)
    assert queue.where(info.uid) == "backoff"
    popped = await asyncio.wait_for(queue.pop(), timeout=0.2)
    assert popped is not None
    assert popped.pod_info.uid == info.uid


async def test_pop_does_not_take_an_errored_pod_before_its_backoff_ends() -> None:
    # Pods that failed with an error wait in podErrorBackoffQ, which pop never reads.
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    queue.add(info)
    fail_with_error(queue, await pop_now(queue))
    assert queue.where(info.uid) == "backoff"
    assert await still_waiting(queue)


# --- cluster events ----------------------------------------------------------------------


@pytest.mark.parametrize(("plugins", "event", "moved"), [
    pytest.param({FIT}, NODE_ADD, True, id="Fit rejected, node added"),
    pytest.param({FIT}, ASSIGNED_POD_DELETE, True,
                 id="Fit rejected, assigned pod deleted (Pod registration hears AssignedPod)"),
    pytest.param({TAINT}, ASSIGNED_POD_DELETE, False,
                 id="Taint rejected, assigned pod deleted"),
    pytest.param({TAINT}, NODE_LABEL_UPDATE, False, id="Taint rejected, node label update"),
    pytest.param({TAINT}, NODE_TAINT_UPDATE, True, id="Taint rejected, node taint update"),
    pytest.param({FIT}, NODE_LABEL_UPDATE, False, id="Fit rejected, node label update"),
    pytest.param({TAINT, FIT}, ASSIGNED_POD_DELETE, True,
                 id="any rejecting plugin interested is enough"),
    pytest.param({UNKNOWN}, NODE_TAINT_UPDATE, True, id="plugin without registration: any"),
    pytest.param({UNKNOWN}, NODE_LABEL_UPDATE, False,
                 id="an event no plugin registered moves no one (isEventOfInterest)"),
    pytest.param({TAINT}, UNSCHEDULABLE_TIMEOUT, True, id="wildcard event moves everyone"),
])
async def test_move_on_event_moves_only_interested_pods(plugins: set[str], event: ClusterEvent,
                                                        moved: bool) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, *plugins)
    assert queue.move_on_event(event) == int(moved)
    assert (queue.where(info.uid) != "unschedulable") is moved


async def test_moved_pod_still_backing_off_goes_to_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, FIT)
    clock.advance(0.5)
    queue.move_on_event(NODE_ADD)
    assert queue.where(info.uid) == "backoff"
    clock.advance(1.5)
    queue.flush_backoff_completed()
    assert queue.where(info.uid) == "active"


async def test_moved_pod_past_its_backoff_goes_to_active() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, FIT)
    clock.advance(5)
    queue.move_on_event(NODE_ADD)
    assert queue.where(info.uid) == "active"
    assert (await pop_now(queue)).pod_info.uid == info.uid


async def test_move_on_event_counts_and_leaves_others() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    fit_pod, taint_pod = pod("fit"), pod("taint")
    await rejected_pod(queue, clock, fit_pod, FIT)
    await rejected_pod(queue, clock, taint_pod, TAINT)
    clock.advance(30)
    assert queue.move_on_event(ASSIGNED_POD_DELETE) == 1
    assert queue.where(fit_pod.uid) == "active"
    assert queue.where(taint_pod.uid) == "unschedulable"


async def test_update_of_an_unschedulable_pod_requeues_it() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p", labels={"v": "1"})
    await rejected_pod(queue, clock, info, LABELS)
    clock.advance(30)
    queue.update(relabelled(info, {"v": "2"}))
    assert queue.where(info.uid) == "active"
    assert (await pop_now(queue)).pod_info.pod.metadata.labels == {"v": "2"}


async def test_update_no_rejecting_plugin_registered_for_keeps_the_pod_unschedulable() -> None:
    # With queueing hints (GA, locked on), an unscheduled-pod update is the event
    # Pod/UpdatePodLabel here; TaintToleration did not register it, so the pod stays.
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p", labels={"v": "1"})
    await rejected_pod(queue, clock, info, TAINT)
    clock.advance(30)
    queue.update(relabelled(info, {"v": "2"}))
    assert queue.where(info.uid) == "unschedulable"


# --- leftover flush ----------------------------------------------------------------------


@pytest.mark.parametrize(("elapsed", "moved"), [
    pytest.param(299.0, False, id="under 5 minutes: stays"),
    pytest.param(300.0, False, id="exactly 5 minutes: stays (upstream compares with >)"),
    pytest.param(300.5, True, id="over 5 minutes: moved"),
])
async def test_flush_unschedulable_leftover(elapsed: float, moved: bool) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, TAINT)
    clock.advance(elapsed)
    assert queue.flush_unschedulable_leftover() == int(moved)
    assert queue.where(info.uid) == ("active" if moved else "unschedulable")


async def test_flush_unschedulable_leftover_after_a_configured_duration() -> None:
    """--pod-max-in-unschedulable-pods-duration replaces the 5 minutes."""
    clock = FakeClock()
    queue = SchedulingQueue(priority_sort.PrioritySort().less,
                            scheduling_gates.SchedulingGates().pre_enqueue, hints(),
                            max_unschedulable_seconds=60.0, clock=clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, TAINT)
    clock.advance(59)
    assert queue.flush_unschedulable_leftover() == 0
    clock.advance(2)
    assert queue.flush_unschedulable_leftover() == 1


async def test_flush_unschedulable_leftover_respects_a_longer_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock, initial=400.0, maximum=600.0)
    info = pod("p")
    await rejected_pod(queue, clock, info, TAINT)
    clock.advance(301)
    assert queue.flush_unschedulable_leftover() == 1
    assert queue.where(info.uid) == "backoff"


# --- bookkeeping -------------------------------------------------------------------------


async def test_pending_counts_and_where() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    unschedulable = pod("unschedulable")
    await rejected_pod(queue, clock, unschedulable, TAINT)
    errored = pod("errored")
    queue.add(errored)
    fail_with_error(queue, await pop_now(queue))
    in_flight = pod("in-flight")
    queue.add(in_flight)
    await pop_now(queue)
    active, gated = pod("active"), pod("gated", gates=["g"])
    queue.add(active)
    queue.add(gated)
    assert queue.pending_counts() == {"active": 1, "backoff": 1, "unschedulable": 1,
                                      "gated": 1}
    assert [queue.where(p.uid) for p in (active, errored, unschedulable, gated, in_flight)] == [
        "active", "backoff", "unschedulable", "gated", "in_flight"]


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "gated"])
async def test_delete_removes_the_pod_wherever_it_is(where: str) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p", gates=["g"] if where == "gated" else ())
    if where == "unschedulable":
        await rejected_pod(queue, clock, info, TAINT)
    else:
        queue.add(info)
        if where == "backoff":
            fail_with_error(queue, await pop_now(queue))
    assert queue.where(info.uid) == where
    queue.delete(info.uid)
    assert queue.where(info.uid) is None
    assert sum(queue.pending_counts().values()) == 0
    clock.advance(600)
    queue.flush_backoff_completed()
    queue.flush_unschedulable_leftover()
    assert await still_waiting(queue)


async def test_adding_a_known_pod_updates_it_without_duplicating() -> None:
    queue = make_queue(FakeClock())
    info = pod("p", labels={"v": "1"})
    queue.add(info)
    queue.add(relabelled(info, {"v": "2"}))
    assert queue.pending_counts()["active"] == 1
    assert (await pop_now(queue)).pod_info.pod.metadata.labels == {"v": "2"}
    assert await still_waiting(queue)


# --- upstream details beyond the basics ----------------------------------------------


async def test_pop_prefers_the_active_queue_over_backing_off_pods() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    backing_off = pod("backing-off", 100)
    queue.add(backing_off)
    queued = await pop_now(queue)
    queue.move_on_event(NODE_ADD)
    reject(queue, queued, FIT)
    queue.add(pod("active", 0))
    assert (await pop_now(queue)).pod_info.name == "active"
    assert (await pop_now(queue)).pod_info.name == "backing-off"
    assert queue.incoming[("active", "PopFromBackoffQ")] == 1
    assert queue.incoming[("active", "UnschedulablePodAdd")] == 2


async def test_backing_off_pods_with_the_same_expiry_pop_in_queue_order() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("low", 0))
    queue.add(pod("high", 10))
    popped = [await pop_now(queue), await pop_now(queue)]
    queue.move_on_event(NODE_ADD)
    for queued in popped:
        reject(queue, queued, FIT)
    assert [(await pop_now(queue)).pod_info.name for _ in range(2)] == ["high", "low"]


async def test_an_error_forgets_the_plugins_that_rejected_an_earlier_attempt() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, FIT)
    clock.advance(60)
    queue.move_on_event(NODE_ADD)
    queued = await pop_now(queue)
    assert queued.unschedulable_plugins == {FIT}
    queue.add_unschedulable(queued, error=True)
    assert queue.where(info.uid) == "backoff"
    assert queued.unschedulable_plugins == set()
    assert await still_waiting(queue)  # podErrorBackoffQ: pop does not take it


async def test_a_pending_plugin_interested_in_the_event_skips_the_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    queue.add(info)
    queued = await pop_now(queue)
    queued.pending_plugins = {FIT}
    queue.add_unschedulable(queued)
    assert queue.where(info.uid) == "unschedulable"
    queue.move_on_event(NODE_ADD)  # still within the 1s backoff
    assert queue.where(info.uid) == "active"


@pytest.mark.parametrize(("plugin", "where"), [
    pytest.param(LABELS, "backoff", id="rejecting plugin registered the update: retried"),
    pytest.param(TAINT, "unschedulable", id="rejecting plugin did not: waits"),
])
async def test_an_update_while_in_flight_counts_when_the_pod_comes_back(plugin: str,
                                                                       where: str) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p", labels={"v": "1"})
    queue.add(info)
    queued = await pop_now(queue)
    queue.update(relabelled(info, {"v": "2"}))
    reject(queue, queued, plugin)
    assert queue.where(info.uid) == where


@pytest.mark.parametrize(("plugin", "moved"), [
    pytest.param(LABELS, False, id="specific registration does not hear a generic update"),
    pytest.param(POD_UPDATES, True, id="generic Pod/Update registration hears it"),
])
async def test_an_update_with_no_specific_change_is_a_generic_update(plugin: str,
                                                                     moved: bool) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, plugin)
    clock.advance(30)
    queue.update(changed(info, node_selector={"zone": "a"}))
    assert (queue.where(info.uid) == "active") is moved


async def test_move_on_event_only_moves_pods_passing_the_pre_check() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    low, high = pod("low", 0), pod("high", 10)
    await rejected_pod(queue, clock, low, FIT)
    await rejected_pod(queue, clock, high, FIT)
    clock.advance(30)
    moved = queue.move_on_event(ASSIGNED_POD_DELETE, pre_check=lambda p: p.priority <= 5)
    assert moved == 1
    assert [queue.where(p.uid) for p in (low, high)] == ["active", "unschedulable"]


def waiter_queue(clock: FakeClock, admitted: set[str],
                 calls: list[str]) -> SchedulingQueue:
    """Pods are gated by TaintToleration (registered for node taint updates) until
    their name is admitted."""
    def pre_enqueue(info: PodInfo) -> Status:
        calls.append(info.name)
        if info.name in admitted:
            return Status()
        return Status.unresolvable("not yet", plugin=TAINT)

    return make_queue(clock, pre_enqueue=pre_enqueue)


async def test_gated_pod_is_reconsidered_on_its_gating_plugins_events() -> None:
    clock = FakeClock()
    admitted: set[str] = set()
    calls: list[str] = []
    queue = waiter_queue(clock, admitted, calls)
    info = pod("p")
    queue.add(info)
    admitted.add("p")
    assert queue.move_on_event(NODE_LABEL_UPDATE) == 0
    assert queue.where(info.uid) == "gated"
    assert queue.move_on_event(NODE_TAINT_UPDATE) == 1
    assert queue.where(info.uid) == "active"
    assert calls == ["p", "p"]


async def test_gated_pod_is_reconsidered_by_the_leftover_flush_every_5_minutes() -> None:
    clock = FakeClock()
    calls: list[str] = []
    queue = waiter_queue(clock, set(), calls)
    queue.add(pod("p"))
    clock.advance(301)
    assert queue.flush_unschedulable_leftover() == 0
    assert len(calls) == 2
    clock.advance(30)
    queue.flush_unschedulable_leftover()
    assert len(calls) == 2  # flushed 30s ago: not yet again
    clock.advance(300)
    queue.flush_unschedulable_leftover()
    assert len(calls) == 3


# --- pod groups: Activate, PopSpecificPod, retry after backoff -----------------------------

async def test_pop_specific_takes_a_pod_from_unschedulable_or_backoff_but_not_twice() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    waiting = await rejected_pod(queue, clock, pod("waiting"), FIT)
    assert queue.where(waiting.pod_info.uid) == "unschedulable"
    taken = queue.pop_specific(waiting.pod_info.uid)
    assert taken is not None and taken.attempts == 2
    assert queue.where(waiting.pod_info.uid) == "in_flight"
    assert queue.pop_specific(waiting.pod_info.uid) is None  # already in flight
    reject(queue, taken, FIT)
    queue.move_on_event(NODE_ADD)  # to backoff: it was rejected a moment ago
    assert queue.where(waiting.pod_info.uid) == "backoff"
    assert queue.pop_specific(waiting.pod_info.uid) is not None
    assert await still_waiting(queue)  # nothing was left behind in the active queue


async def test_pop_specific_leaves_a_pod_its_pre_enqueue_still_holds() -> None:
    queue = make_queue(FakeClock())
    gated = pod("gated", gates=["later"])
    queue.add(gated)
    assert queue.pop_specific(gated.uid) is None
    assert queue.where(gated.uid) == "gated"


async def test_a_rejected_group_member_retries_after_backoff_whatever_happened() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(priority_sort.PrioritySort().less,
                            scheduling_gates.SchedulingGates().pre_enqueue, hints(None, None),
                            clock=clock, pod_groups=True)
    member = make_pod("member").group("g").info()
    queue.add(member)
    queued = await pop_now(queue)
    reject(queue, queued, FIT)  # no event came: a plain pod would wait as unschedulable
    assert queue.where(member.uid) == "backoff"


# --- assigned-pod events: only pods a placed pod may help (upstream's AssignedPodAdded) ---

AFFINITY = "InterPodAffinity"
SPREAD = "PodTopologySpread"
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
SCALE_DOWN = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN,
                          "AssignedPodUpdate")
# Pretend plugins listening to every pod event, so that only the queue's pre-filter
# decides who is asked.
POD_WATCHERS: dict[str, tuple[Registration, ...]] = {
    name: (ClusterEvent(Resource.POD, ActionType.ALL),) for name in (FIT, AFFINITY, SPREAD)}


def wants_pods_labelled(name: str, app: str, namespace_selector: str = "") -> PodInfo:
    """A pod whose required pod affinity selects pods labelled app=`app` (in its own
    namespace, or in namespaces labelled team=`namespace_selector`)."""
    built = make_pod(name).obj()
    selector = api.LabelSelector(match_labels={"team": namespace_selector}) \
        if namespace_selector else None
    built.spec.affinity = api.Affinity(pod_affinity=api.PodAffinity(
        required_during_scheduling_ignored_during_execution=[api.PodAffinityTerm(
            label_selector=api.LabelSelector(match_labels={"app": app}),
            topology_key="zone", namespace_selector=selector)]))
    return PodInfo.of(built)


def placed(name: str, namespace: str = "default", **labels: str) -> PodInfo:
    builder = make_pod(name, namespace).node("n1")
    for key, value in labels.items():
        builder.label(key, value)
    return builder.info()


async def test_a_placed_pod_wakes_only_pods_whose_affinity_or_spread_it_may_satisfy() -> None:
    clock = FakeClock()
    namespaces = {"default": {}, "other": {"team": "blue"}}
    queue = SchedulingQueue(priority_sort.PrioritySort().less,
                            scheduling_gates.SchedulingGates().pre_enqueue,
                            hints(POD_WATCHERS), clock=clock,
                            namespace_labels=namespaces.get)
    too_big = pod("too-big")
    wants_web, wants_db = wants_pods_labelled("wants-web", "web"), \
        wants_pods_labelled("wants-db", "db")
    wants_blue_web = wants_pods_labelled("wants-blue-web", "web", namespace_selector="blue")
    spread = pod("spread")
    await rejected_pod(queue, clock, too_big, FIT)
    for info in (wants_web, wants_db, wants_blue_web):
        await rejected_pod(queue, clock, info, AFFINITY)
    await rejected_pod(queue, clock, spread, SPREAD)
    clock.advance(30)

    # A web pod in another namespace: only the term selecting the blue team's
    # namespaces matches it; a spread constraint counts its own namespace only.
    assert queue.move_on_assigned_pod(ASSIGNED_POD_ADD, None,
                                      placed("w1", "other", app="web")) == 1
    assert queue.where(wants_blue_web.uid) == "active"
    # In the pods' own namespace: the web affinity and the spread constraint.
    assert queue.move_on_assigned_pod(ASSIGNED_POD_ADD, None, placed("w2", app="web")) == 2
    assert [queue.where(p.uid) for p in (wants_web, spread, wants_db, too_big)] == \
        ["active", "active", "unschedulable", "unschedulable"]
    # The same event by the general path would have asked every plugin (FIT says yes).
    assert queue.move_on_event(ASSIGNED_POD_ADD, None, placed("w3", app="web")) == 2


async def test_a_scale_down_of_a_placed_pod_asks_every_waiting_pod() -> None:
    clock = FakeClock()
    queue = make_queue(clock, registered=POD_WATCHERS)
    too_big = pod("too-big")
    await rejected_pod(queue, clock, too_big, FIT)
    clock.advance(30)
    before = placed("shrinking")
    assert queue.move_on_assigned_pod(SCALE_DOWN, before, before) == 1
    assert queue.where(too_big.uid) == "active"


# --- a QueueSort that reads changing state (Coscheduling: the PodGroup's creation time) -

def _keyed_queue(keys: dict[str, int]) -> SchedulingQueue:
    """A queue ordered by `keys[name]`, which the test changes under it."""
    def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return keys[a.pod_info.name] < keys[b.pod_info.name]

    return SchedulingQueue(less, scheduling_gates.SchedulingGates().pre_enqueue, hints(),
                           clock=FakeClock())


async def test_an_update_puts_an_active_pod_where_the_new_version_sorts() -> None:
    keys = {"a": 1, "b": 2, "c": 3}
    queue = _keyed_queue(keys)
    pods = {name: pod(name) for name in keys}
    for info in pods.values():
        queue.add(info)
    keys["c"] = 0  # e.g. its group label changed to an older group
    queue.update(changed(pods["c"], priority=0))
    assert [(await pop_now(queue)).pod_info.name for _ in range(3)] == ["c", "a", "b"]


async def test_a_pod_group_added_or_deleted_reorders_the_queued_pods() -> None:
    keys = {"a": 1, "b": 2, "c": 3, "d": 4}
    queue = _keyed_queue(keys)
    for name in keys:
        queue.add(pod(name))
    keys.update({"a": 9, "d": 0})  # the order Coscheduling gives changed with the group
    queue.move_on_event(ClusterEvent(Resource.COSCHEDULING_POD_GROUP, ActionType.DELETE),
                        None, None)
    assert [(await pop_now(queue)).pod_info.name for _ in range(4)] == ["d", "b", "c", "a"]


def _pod_group(name: str, namespace: str = "default") -> cs.PodGroup:
    return cs.PodGroup(metadata=api.ObjectMeta(name=name, namespace=namespace,
                                               uid=f"uid-pg-{namespace}-{name}"),
                       spec=cs.PodGroupSpec(min_member=2))


async def test_a_pod_group_reorders_the_heaps_when_a_queued_pod_is_its_member() -> None:
    """Only a PodGroup whose members are queued changes a key in the heaps: its add
    rebuilds them (active members, or members in backoff), another group's does not
    need to (each PodGroup of the initial LIST asked for a rebuild over every pod)."""
    keys = {"a": 1, "b": 2, "c": 3, "d": 4}
    queue = _keyed_queue(keys)
    group = {cs.POD_GROUP_LABEL: "g1"}
    for name in keys:
        queue.add(pod(name, labels=group if name in ("a", "d") else None))
    add = ClusterEvent(Resource.COSCHEDULING_POD_GROUP, ActionType.ADD)
    assert not queue._orders_members_of(_pod_group("g2"))
    assert not queue._orders_members_of(_pod_group("g1", namespace="other"))
    assert queue._orders_members_of(_pod_group("g1"))
    assert queue._orders_members_of(object())  # nothing to tell by: rebuilt
    keys.update({"a": 9, "d": 0})  # g1 appeared: its members' order changed
    queue.move_on_event(add, None, _pod_group("g1"))
    assert [(await pop_now(queue)).pod_info.name for _ in range(4)] == ["d", "b", "c", "a"]
    member = await rejected_pod(queue, FakeClock(), pod("m", labels=group), FIT)
    queue.move_on_event(NODE_ADD, None, object())  # to backoff (its rejected heap)
    assert queue.where(member.pod_info.uid) == "backoff"
    assert queue._orders_members_of(_pod_group("g1"))
    assert not queue._orders_members_of(_pod_group("g2"))


# --- moves with nothing waiting (an informer's initial LIST) ---------------------------


@pytest.mark.parametrize("assigned", [False, True], ids=["node add", "assigned pod add"])
async def test_a_move_with_nothing_waiting_still_logs_the_event_for_pods_in_flight(
        assigned: bool) -> None:
    """With no pod unschedulable or gated, a move returns at once (as every node and
    bound pod of the initial LIST asks it), yet the event is kept for the pods in
    flight: one that comes back rejected by a plugin the event may help is requeued."""
    queue = make_queue(FakeClock(), registered={SPREAD: (ClusterEvent(
        Resource.POD, ActionType.ADD),)})
    info = pod("p")
    queue.add(info)
    queued = await pop_now(queue)
    if assigned:
        placed = make_pod("placed").node("n1").info()
        assert queue.move_on_assigned_pod(ASSIGNED_POD_ADD, None, placed) == 0
    else:
        assert queue.move_on_event(NODE_ADD, None, object()) == 0
    reject(queue, queued, SPREAD if assigned else FIT)
    assert queue.where(info.uid) == "backoff"


async def test_many_events_with_nothing_waiting_leave_pending_pods_where_they_are() -> None:
    """The initial LIST's events over pods only added (active) and pods being gated
    (their gates' plugin hears none of them): each stays where it was, and a pod parked
    afterwards still hears the next event."""
    clock = FakeClock()
    queue = make_queue(clock)
    active = [pod(f"a{index}") for index in range(3)]
    gated = pod("g", gates=["example.com/hold"])
    for info in (*active, gated):
        queue.add(info)
    placed = make_pod("placed").node("n1").info()
    for _ in range(5):
        assert queue.move_on_event(NODE_ADD, None, object()) == 0
        assert queue.move_on_assigned_pod(ASSIGNED_POD_ADD, None, placed) == 0
    assert [queue.where(info.uid) for info in active] == ["active"] * 3
    assert queue.where(gated.uid) == "gated"
    queue.delete(active[1].uid)
    queue.delete(active[2].uid)
    waiting = await rejected_pod(queue, clock, active[0], FIT)
    clock.advance(100)  # its backoff is over
    assert queue.move_on_event(NODE_ADD, None, object()) == 1
    assert queue.where(waiting.pod_info.uid) == "active"


# --- gated pods asked again -------------------------------------------------------------


GATE_A, GATE_B = "GateA", "GateB"


def _switchable_gate() -> tuple[list[str], list[str], Callable[[PodInfo], Status]]:
    """A PreEnqueue held by the plugin named in holder[0] ('' lets pods through); asked
    lists the pods it was asked about."""
    holder, asked = [GATE_A], []

    def pre_enqueue(info: PodInfo) -> Status:
        asked.append(info.name)
        return Status.unresolvable("held", plugin=holder[0]) if holder[0] else Status()

    return holder, asked, pre_enqueue


async def test_a_gated_pod_held_again_by_another_plugin_waits_for_that_plugin_s_events(
        ) -> None:
    """Held again by the same plugin, a pod stays as it was; held by another, it waits
    for the events that one registered, not the first one's."""
    holder, asked, pre_enqueue = _switchable_gate()
    queue = make_queue(FakeClock(), pre_enqueue=pre_enqueue, registered={
        GATE_A: (NODE_ADD,), GATE_B: (NODE_LABEL_UPDATE,)})
    info = pod("p")
    queue.add(info)
    assert queue.move_on_event(NODE_ADD, None, object()) == 0
    assert queue.where(info.uid) == "gated" and len(asked) == 2
    holder[0] = GATE_B
    assert queue.move_on_event(NODE_ADD, None, object()) == 0  # GateA's event: asked again
    assert queue.state_of(info.uid) is not None
    assert queue.state_of(info.uid).gated_by == GATE_B  # type: ignore[union-attr]
    holder[0] = ""
    assert queue.move_on_event(NODE_ADD, None, object()) == 0  # GateB hears no node add
    assert queue.where(info.uid) == "gated" and len(asked) == 3
    assert queue.move_on_event(NODE_LABEL_UPDATE, None, object()) == 1
    assert queue.where(info.uid) == "active"


async def test_a_backing_off_pod_that_pre_enqueue_now_holds_is_gated_not_backed_off() -> None:
    holder, _, pre_enqueue = _switchable_gate()
    holder[0] = ""
    clock = FakeClock()
    queue = make_queue(clock, pre_enqueue=pre_enqueue, registered={GATE_A: (NODE_ADD,)})
    waiting = await rejected_pod(queue, clock, pod("p"), FIT)
    holder[0] = GATE_A
    assert queue.move_on_event(NODE_ADD, None, object()) == 0  # FIT's hint: after backoff
    assert queue.where(waiting.pod_info.uid) == "gated"
    holder[0] = ""
    clock.advance(100)
    assert queue.move_on_event(NODE_ADD, None, object()) == 1  # GateA's event releases it
    assert queue.where(waiting.pod_info.uid) == "active"
