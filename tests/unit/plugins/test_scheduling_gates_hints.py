"""SchedulingGates' queueing hint, with upstream's Test_isSchedulableAfterPodChange
(scheduling_gates_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins import scheduling_gates as sg
from tests.unit.builders import FakeHandle, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

HINT = hint_for(sg.new(None, FakeHandle()), ClusterEvent(
    Resource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))


def gated(name: str, uid: str, *gates: str) -> PodInfo:
    return make_pod(name).uid(uid).gates(*gates).info()


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(gated("p", "uid0"), "not-a-pod", None, ERROR, id="backoff-wrong-old-object"),
    pytest.param(gated("p", "uid0"), None, "not-a-pod", ERROR, id="backoff-wrong-new-object"),
    pytest.param(gated("p", "uid0", "foo", "bar"), gated("p1", "uid1", "foo", "bar"),
                 gated("p1", "uid1", "foo"), SKIP, id="skip-queue-on-other-pod-updated"),
    pytest.param(gated("p", "uid0", "foo"), gated("p", "uid0", "foo"), gated("p", "uid0"),
                 QUEUE, id="queue-on-the-unsched-pod-updated"),
])
def test_schedulable_after_gates_eliminated(target: PodInfo, old: object, new: object,
                                            expected: Expected) -> None:
    check(HINT, target, old, new, expected)
