"""SchedulingGates, with upstream's scheduling_gates_test.go table."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.status import Code
from kpysched.plugins import scheduling_gates as sg
from tests.unit.builders import FakeHandle, PodBuilder, make_pod
from tests.unit.plugins.hints import registered


@pytest.mark.parametrize(("pod", "reason"), [
    pytest.param(make_pod(), None, id="pod does not carry scheduling gates"),
    pytest.param(make_pod().gates("foo"), "waiting for scheduling gates: [foo]",
                 id="pod carries a scheduling gate"),
    pytest.param(make_pod().gates("foo", "bar"), "waiting for scheduling gates: [foo bar]",
                 id="pod carries scheduling gates"),
])
def test_pre_enqueue(pod: PodBuilder, reason: str | None) -> None:
    status = sg.new(None, FakeHandle()).pre_enqueue(pod.info())
    if reason is None:
        assert status.ok
    else:
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason], sg.NAME)


def test_spec_and_events() -> None:
    assert sg.SPEC.extension_points() == ["preEnqueue"]
    assert registered(sg.new(None, FakeHandle())) == [
        (ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), True)]
