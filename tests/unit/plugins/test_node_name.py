"""NodeName, with cases from upstream's node_name_test.go."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.status import Code
from kpysched.plugins import node_name as nn
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.runner import run_filter


@pytest.mark.parametrize(("pod", "fits"), [
    pytest.param(make_pod(), True, id="no host specified"),
    pytest.param(make_pod().node("foo"), True, id="host matches"),
    pytest.param(make_pod().node("bar"), False, id="host doesn't match"),
])
def test_filter(pod: PodBuilder, fits: bool) -> None:
    status = run_filter(nn.new(None, FakeHandle()), pod.info(), make_node("foo").info())
    if fits:
        assert status.ok
    else:
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) didn't match the requested node name"],
            nn.NAME)


def test_spec_and_events() -> None:
    # PreFilter from v1.37 (it narrows a bound pod to its node; v1.36's lets all through).
    assert nn.SPEC.extension_points() == ["preFilter", "filter"]
    assert nn.new(None, FakeHandle()).events_to_register() == (
        ClusterEvent(Resource.NODE, ActionType.ADD),)
