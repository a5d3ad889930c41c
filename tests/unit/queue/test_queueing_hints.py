"""Queueing hints in the scheduling queue: upstream's isPodWorthRequeuing (which plugins
are asked, what their answers mean), determineSchedulingHintForInFlightPod (events that
arrived during a pod's attempt), and scheduler_queueing_hint_execution_duration_seconds.

Cases follow Test_isPodWorthRequeuing and Test_InFlightPods in upstream's
pkg/scheduler/backend/queue/scheduling_queue_test.go.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from structlog.testing import capture_logs

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_ADD,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.queue.hints import QueueingHints, Strategy
from tests.unit.builders import make_node, make_pod
from tests.unit.queue.test_scheduling_queue import (
    FakeClock,
    hints,
    make_queue,
    pod,
    pop_now,
    reject,
    rejected_pod,
    relabelled,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
PICKY = "Picky"  # queues only for nodes labelled good=true
NEVER = "Never"  # hears node adds, never helps
BROKEN = "Broken"  # its hint raises
POD_WATCHER = "PodWatcher"  # queues only for assigned pods labelled app=match


def picky(pod: PodInfo, old: object, new: object) -> QueueingHint:
    assert isinstance(new, api.Node)
    return QUEUE if new.metadata.labels.get("good") == "true" else SKIP


def never(pod: PodInfo, old: object, new: object) -> QueueingHint:
    return SKIP


def broken(pod: PodInfo, old: object, new: object) -> QueueingHint:
    raise KeyError("no such thing")


def pod_watcher(pod: PodInfo, old: object, new: object) -> QueueingHint:
    assert isinstance(new, PodInfo)
    return QUEUE if new.pod.metadata.labels.get("app") == "match" else SKIP


REGISTERED = {
    PICKY: (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), picky),),
    NEVER: (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), never),),
    BROKEN: (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), broken),),
    POD_WATCHER: (ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD),
                                       pod_watcher),),
}

GOOD = make_node("good").label("good", "true").obj()
BAD = make_node("bad").obj()
MATCHING = make_pod("m").node("n1").label("app", "match").info()
OTHER = make_pod("o").node("n1").label("app", "other").info()


def queued(*, unschedulable: Iterable[str] = (), pending: Iterable[str] = (),
           info: PodInfo | None = None) -> QueuedPodInfo:
    return QueuedPodInfo(info or make_pod("p").info(), timestamp=0.0,
                         unschedulable_plugins=set(unschedulable), pending_plugins=set(pending))


def registry() -> QueueingHints:
    return hints(REGISTERED)


# --- isPodWorthRequeuing ---------------------------------------------------------------


@pytest.mark.parametrize(("info", "event", "new", "expected"), [
    pytest.param(queued(), NODE_ADD, GOOD, Strategy.AFTER_BACKOFF,
                 id="no rejecting plugin: after backoff"),
    pytest.param(queued(unschedulable={PICKY}), NODE_ADD, GOOD, Strategy.AFTER_BACKOFF,
                 id="unschedulable plugin says Queue: after backoff"),
    pytest.param(queued(unschedulable={PICKY}), NODE_ADD, BAD, Strategy.SKIP,
                 id="unschedulable plugin says QueueSkip: skip"),
    pytest.param(queued(pending={PICKY}), NODE_ADD, GOOD, Strategy.IMMEDIATELY,
                 id="pending plugin says Queue: immediately"),
    pytest.param(queued(unschedulable={PICKY}, pending={NEVER}), NODE_ADD, GOOD,
                 Strategy.AFTER_BACKOFF,
                 id="pending plugin says QueueSkip, unschedulable Queue: after backoff"),
    pytest.param(queued(unschedulable={NEVER}, pending={PICKY}), NODE_ADD, GOOD,
                 Strategy.IMMEDIATELY,
                 id="pending plugin says Queue, unschedulable QueueSkip: immediately"),
    pytest.param(queued(unschedulable={NEVER}), NODE_ADD, GOOD, Strategy.SKIP,
                 id="every rejecting plugin says QueueSkip: skip"),
    pytest.param(queued(unschedulable={BROKEN}), NODE_ADD, BAD, Strategy.AFTER_BACKOFF,
                 id="a hint's error counts as Queue"),
    pytest.param(queued(unschedulable={"FakeFilter"}), NODE_ADD, GOOD, Strategy.AFTER_BACKOFF,
                 id="a plugin with no registration wakes on anything (no hint)"),
    pytest.param(queued(unschedulable={"NodeResourcesFit"}),
                 ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL), GOOD, Strategy.SKIP,
                 id="rejecting plugin registered no matching event: skip"),
    pytest.param(queued(unschedulable={NEVER}), UNSCHEDULABLE_TIMEOUT, None,
                 Strategy.AFTER_BACKOFF, id="wildcard event: after backoff, no hint asked"),
    pytest.param(queued(unschedulable={NEVER}, info=make_pod("target").info()), FORCE_ACTIVATE,
                 make_pod("someone-else").info(), Strategy.SKIP,
                 id="wildcard event for another pod: skip"),
    pytest.param(queued(unschedulable={NEVER}, info=make_pod("target").info()), FORCE_ACTIVATE,
                 make_pod("target").info(), Strategy.AFTER_BACKOFF,
                 id="wildcard event for this pod: after backoff"),
])
def test_strategy(info: QueuedPodInfo, event: ClusterEvent, new: object,
                  expected: Strategy) -> None:
    assert registry().strategy(info, event, None, new) is expected


def test_a_pod_of_an_unknown_profile_goes_back_after_backoff() -> None:
    info = queued(unschedulable={NEVER})
    info.pod_info.pod.spec.scheduler_name = "not-a-profile"
    assert registry().strategy(info, NODE_ADD, None, GOOD) is Strategy.AFTER_BACKOFF


def test_the_gating_plugin_speaks_for_a_gated_pod() -> None:
    info = queued()
    info.gated, info.gating_plugin = True, NEVER
    assert registry().strategy(info, NODE_ADD, None, GOOD) is Strategy.SKIP
    info.gating_plugin = PICKY
    assert registry().strategy(info, NODE_ADD, None, GOOD) is Strategy.AFTER_BACKOFF


@pytest.mark.parametrize(("event", "interested"), [
    pytest.param(NODE_ADD, True, id="registered"),
    pytest.param(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_CONDITION), False,
                 id="registered by no one"),
    pytest.param(UNSCHEDULABLE_TIMEOUT, True, id="wildcard"),
])
def test_interested(event: ClusterEvent, interested: bool) -> None:
    assert registry().interested(event) is interested


def test_every_hint_call_is_observed_with_upstreams_labels() -> None:
    observed: list[tuple[str, str, str]] = []
    queue_hints = QueueingHints(
        {"default-scheduler": REGISTERED | {"Plain": (ClusterEventWithHint(NODE_ADD),)}},
        observe=lambda plugin, event, hint, seconds: observed.append((plugin, event, hint)))
    for plugin in (PICKY, BROKEN, "Plain"):
        queue_hints.strategy(queued(unschedulable={plugin}), NODE_ADD, None, BAD)
    assert observed == [(PICKY, "NodeAdd", "QueueSkip"), (BROKEN, "NodeAdd", "Error"),
                        ("Plain", "NodeAdd", "Queue")]


# --- moves on cluster events -------------------------------------------------------------


async def test_hints_get_the_events_objects_and_decide_pod_by_pod() -> None:
    clock = FakeClock()
    queue = make_queue(clock, registered=REGISTERED)
    picky_pod, never_pod = pod("picky"), pod("never")
    await rejected_pod(queue, clock, picky_pod, PICKY)
    await rejected_pod(queue, clock, never_pod, NEVER)
    clock.advance(30)
    assert queue.move_on_event(NODE_ADD, None, BAD) == 0
    assert queue.move_on_event(NODE_ADD, None, GOOD) == 1
    assert [queue.where(p.uid) for p in (picky_pod, never_pod)] == ["active", "unschedulable"]
    assert queue.incoming[("active", "NodeAdd")] == 1


async def test_a_hint_that_raises_moves_the_pod() -> None:
    clock = FakeClock()
    queue = make_queue(clock, registered=REGISTERED)
    info = pod("p")
    await rejected_pod(queue, clock, info, BROKEN)
    clock.advance(30)
    with capture_logs() as logs:
        assert queue.move_on_event(NODE_ADD, None, BAD) == 1
    assert [(e["event"], e["plugin"], e["cluster_event"], e["error"]) for e in logs] == [
        ("queueing_hint.failed", BROKEN, "NodeAdd", "KeyError: 'no such thing'")]


async def test_an_assigned_pod_event_reaches_the_pod_hint() -> None:
    clock = FakeClock()
    queue = make_queue(clock, registered=REGISTERED)
    info = pod("p")
    await rejected_pod(queue, clock, info, POD_WATCHER)
    clock.advance(30)
    assert queue.move_on_event(ASSIGNED_POD_ADD, None, OTHER) == 0
    assert queue.move_on_event(ASSIGNED_POD_ADD, None, MATCHING) == 1


async def test_an_update_of_an_unschedulable_pod_asks_the_hints_with_old_and_new() -> None:
    seen: list[tuple[object, object]] = []

    def label_hint(pod: PodInfo, old: object, new: object) -> QueueingHint:
        seen.append((old, new))
        assert isinstance(new, PodInfo)
        return QUEUE if new.pod.metadata.labels.get("ready") == "yes" else SKIP

    label_event = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)
    clock = FakeClock()
    queue = make_queue(clock, registered={"Labels": (ClusterEventWithHint(label_event,
                                                                          label_hint),)})
    info = pod("p", labels={"ready": "no"})
    await rejected_pod(queue, clock, info, "Labels")
    clock.advance(30)
    still_not = relabelled(info, {"ready": "not yet"})
    queue.update(still_not)
    assert queue.where(info.uid) == "unschedulable"
    ready = relabelled(info, {"ready": "yes"})
    queue.update(ready)
    assert queue.where(info.uid) == "active"
    assert seen == [(info, still_not), (still_not, ready)]


# --- events during an attempt (in-flight) -------------------------------------------------


@pytest.mark.parametrize(("plugins", "pending", "node", "where"), [
    pytest.param({PICKY}, False, GOOD, "backoff", id="hint says Queue: backoff"),
    pytest.param({PICKY}, False, BAD, "unschedulable", id="hint says QueueSkip: unschedulable"),
    pytest.param({PICKY}, True, GOOD, "active", id="pending plugin says Queue: active"),
    pytest.param({BROKEN}, False, BAD, "backoff", id="hint error: backoff"),
    pytest.param(set(), False, BAD, "backoff", id="no rejecting plugin: backoff"),
])
async def test_a_rejected_pod_is_judged_by_the_events_of_its_attempt(
        plugins: set[str], pending: bool, node: api.Node, where: str) -> None:
    queue = make_queue(FakeClock(), registered=REGISTERED)
    info = pod("p")
    queue.add(info)
    attempt = await pop_now(queue)
    queue.move_on_event(NODE_ADD, None, node)
    if pending:
        attempt.pending_plugins = set(plugins)
        queue.add_unschedulable(attempt)
    else:
        reject(queue, attempt, *plugins)
    assert queue.where(info.uid) == where


async def test_a_pod_sees_only_the_events_since_it_was_popped() -> None:
    """Test_InFlightPods: each in-flight pod is judged by the events after its own pop,
    the earlier pod by all of them."""
    queue = make_queue(FakeClock(), registered=REGISTERED)
    first, second = pod("first", 10), pod("second", 0)
    queue.add(first)
    queue.add(second)
    first_attempt = await pop_now(queue)
    queue.move_on_event(NODE_ADD, None, GOOD)  # only the first pod is in flight
    second_attempt = await pop_now(queue)
    queue.move_on_event(NODE_ADD, None, BAD)
    reject(queue, second_attempt, PICKY)
    reject(queue, first_attempt, PICKY)
    assert [queue.where(p.uid) for p in (first, second)] == ["backoff", "unschedulable"]


async def test_events_no_plugin_hears_are_not_kept_for_in_flight_pods() -> None:
    heard: list[object] = []

    def any_node(pod: PodInfo, old: object, new: object) -> QueueingHint:
        heard.append(new)
        return SKIP

    queue = make_queue(FakeClock(), registered={
        "AnyNode": (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD),
                                         any_node),)})
    info = pod("p")
    queue.add(info)
    attempt = await pop_now(queue)
    queue.move_on_event(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_CONDITION), BAD, BAD)
    queue.move_on_event(NODE_ADD, None, GOOD)
    reject(queue, attempt, "AnyNode")
    assert heard == [GOOD]


async def test_the_pods_own_update_during_its_attempt_counts() -> None:
    label_event = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_LABEL)

    def itself(pod: PodInfo, old: object, new: object) -> QueueingHint:
        return QUEUE if isinstance(new, PodInfo) and new.uid == pod.uid else SKIP

    queue = make_queue(FakeClock(), registered={"Self": (ClusterEventWithHint(label_event,
                                                                              itself),)})
    info = pod("p", labels={"v": "1"})
    queue.add(info)
    attempt = await pop_now(queue)
    queue.update(relabelled(info, {"v": "2"}))
    reject(queue, attempt, "Self")
    assert queue.where(info.uid) == "backoff"


async def test_after_permit_the_pod_is_no_longer_judged_by_events() -> None:
    """Upstream calls Done once Permit allows the pod: should its binding then fail with
    a rejection, it retries after backoff whatever happened."""
    queue = make_queue(FakeClock(), registered=REGISTERED)
    info = pod("p")
    queue.add(info)
    attempt = await pop_now(queue)
    queue.release_events(info.uid)
    queue.move_on_event(NODE_ADD, None, BAD)
    reject(queue, attempt, PICKY)
    assert queue.where(info.uid) == "backoff"


async def test_a_flush_during_the_attempt_sends_the_pod_back_after_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock, registered=REGISTERED)
    stale = pod("stale")
    await rejected_pod(queue, clock, stale, NEVER)
    info = pod("p")
    queue.add(info)
    clock.advance(301)
    attempt = await pop_now(queue)
    assert queue.flush_unschedulable_leftover() == 1  # UnschedulableTimeout, a wildcard
    reject(queue, attempt, NEVER)
    assert queue.where(info.uid) == "backoff"
