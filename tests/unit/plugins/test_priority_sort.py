"""PrioritySort, with upstream's priority_sort_test.go table."""

from __future__ import annotations

import pytest

from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.plugins import priority_sort as ps
from tests.unit.builders import FakeHandle, make_pod

HIGH, LOW = 1000, 0


def queued(priority: int | None, timestamp: float) -> QueuedPodInfo:
    pod = make_pod()
    if priority is not None:
        pod.priority(priority)
    return QueuedPodInfo(pod.info(), timestamp)


@pytest.mark.parametrize(("a", "b", "expected"), [
    pytest.param(queued(LOW, 1.0), queued(HIGH, 2.0), False,
                 id="p1.priority less than p2.priority"),
    pytest.param(queued(HIGH, 2.0), queued(LOW, 1.0), True,
                 id="p1.priority greater than p2.priority"),
    pytest.param(queued(HIGH, 1.0), queued(HIGH, 2.0), True,
                 id="equal priority, p1 is added to schedulingQ earlier than p2"),
    pytest.param(queued(HIGH, 2.0), queued(HIGH, 1.0), False,
                 id="equal priority, p2 is added to schedulingQ earlier than p1"),
    pytest.param(queued(None, 2.0), queued(-1, 1.0), True, id="missing priority counts as 0"),
])
def test_less(a: QueuedPodInfo, b: QueuedPodInfo, expected: bool) -> None:
    assert ps.new(None, FakeHandle()).less(a, b) is expected


def test_spec() -> None:
    assert ps.SPEC.extension_points() == ["queueSort"]
    assert ps.new(None, FakeHandle()).events_to_register() == ()
