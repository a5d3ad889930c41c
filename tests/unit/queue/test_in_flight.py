"""InFlightEvents: the shared log of events seen while pods are in flight (upstream's
inFlightPods/inFlightEvents list in active_queue.go)."""

from __future__ import annotations

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_ADD,
    NODE_ADD,
    NODE_DELETE,
    UNSCHEDULABLE_TIMEOUT,
)
from kpysched.queue.in_flight import InFlightEvents, LoggedEvent


def events(log: InFlightEvents, uid: str) -> list[str] | None:
    logged = log.since_start(uid)
    return None if logged is None else [entry.event.queue_label() for entry in logged]


def test_nothing_is_kept_while_no_pod_is_in_flight() -> None:
    log = InFlightEvents()
    assert not log.record(NODE_ADD, None, "n1")
    assert len(log) == 0


def test_each_pod_sees_the_events_after_its_start() -> None:
    log = InFlightEvents()
    log.start("a")
    log.record(NODE_ADD, None, "n1")
    log.start("b")
    log.record(ASSIGNED_POD_ADD, None, "p1")
    assert events(log, "a") == ["NodeAdd", "AssignedPodAdd"]
    assert events(log, "b") == ["AssignedPodAdd"]
    assert events(log, "c") is None


def test_done_drops_the_events_no_in_flight_pod_needs() -> None:
    """Test_InFlightPods "One intermediate Pod ... is enqueued back": the oldest pod
    keeps every event; once it is done, only what the younger pods need remains."""
    log = InFlightEvents()
    log.start("pod1")
    log.record(NODE_ADD, None, "n1")
    log.start("pod2")
    log.record(NODE_DELETE, "n1", None)
    log.start("pod3")
    log.record(ASSIGNED_POD_ADD, None, "p")
    log.done("pod2")
    assert len(log) == 3  # pod1 still needs them all
    log.done("pod1")
    assert len(log) == 1
    assert events(log, "pod3") == ["AssignedPodAdd"]
    log.done("pod3")
    assert len(log) == 0
    log.done("pod3")  # a second done is harmless


def test_a_pods_own_update_is_kept_only_while_it_is_in_flight() -> None:
    log = InFlightEvents()
    assert not log.record_for("a", [ASSIGNED_POD_ADD], None, "a")
    log.start("a")
    assert log.record_for("a", [UNSCHEDULABLE_TIMEOUT], "old", "new")
    assert log.since_start("a") == [LoggedEvent(UNSCHEDULABLE_TIMEOUT, "old", "new")]
