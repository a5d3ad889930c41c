"""NodeUnschedulable, with cases from upstream's node_unschedulable_test.go."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.status import Code
from kpysched.plugins import node_unschedulable as nu
from tests.unit.builders import FakeHandle, NodeBuilder, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(("pod", "node", "fits"), [
    pytest.param(make_pod(), make_node(), True, id="schedulable node"),
    pytest.param(make_pod(), make_node().unschedulable(), False, id="cordoned node"),
    pytest.param(make_pod().toleration(key=UNSCHEDULABLE_KEY, effect="NoSchedule"),
                 make_node().unschedulable(), True, id="pod tolerates the unschedulable taint"),
    pytest.param(make_pod().toleration(key=UNSCHEDULABLE_KEY, operator="Exists"),
                 make_node().unschedulable(), True, id="Exists with any effect tolerates"),
    pytest.param(make_pod().toleration(operator="Exists"), make_node().unschedulable(), True,
                 id="tolerate everything"),
    pytest.param(make_pod().toleration(key=UNSCHEDULABLE_KEY, effect="NoExecute"),
                 make_node().unschedulable(), False, id="wrong effect"),
    pytest.param(make_pod().toleration(key=UNSCHEDULABLE_KEY, value="x", effect="NoSchedule"),
                 make_node().unschedulable(), False, id="Equal with a value does not match"),
])
def test_filter(pod: PodBuilder, node: NodeBuilder, fits: bool) -> None:
    status = run_filter(nu.new(None, FakeHandle()), pod.info(), node.info())
    if fits:
        assert status.ok
    else:
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) were unschedulable"], nu.NAME)


def test_spec_and_events() -> None:
    assert nu.SPEC.extension_points() == ["filter"]
    assert registered(nu.new(None, FakeHandle())) == [
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), True),
        (ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATIONS), True),
    ]
