"""NodeUnschedulable's queueing hints, with upstream's TestIsSchedulableAfterNodeChange
and TestIsSchedulableAfterPodTolerationChange (node_unschedulable_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import NODE_ADD, ActionType, ClusterEvent, Resource
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import node_unschedulable as nu
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

PLUGIN = nu.new(None, FakeHandle())
NODE_HINT = hint_for(PLUGIN, NODE_ADD)
POD_HINT = hint_for(PLUGIN, ClusterEvent(Resource.UNSCHEDULED_POD,
                                         ActionType.UPDATE_POD_TOLERATIONS))
ANY_POD = make_pod("p").info()


def node(unschedulable: bool, *, not_ready: bool = False) -> api.Node:
    builder = make_node("n")
    if unschedulable:
        builder.unschedulable()
    if not_ready:
        builder.taint("node.kubernetes.io/not-ready", effect="NoExecute")
    return builder.obj()


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(None, "not-a-node", ERROR, id="error-wrong-new-object"),
    pytest.param("not-a-node", node(True), ERROR, id="error-wrong-old-object"),
    pytest.param(None, node(True), SKIP, id="skip-queue-on-unschedulable-node-added"),
    pytest.param(None, node(False), QUEUE, id="queue-on-schedulable-node-added"),
    pytest.param(node(True), node(True, not_ready=True), SKIP,
                 id="skip-unrelated-change-unschedulable-true"),
    pytest.param(node(False), node(False, not_ready=True), SKIP,
                 id="skip-unrelated-change-unschedulable-false"),
    pytest.param(node(True), node(False), QUEUE, id="queue-on-unschedulable-field-change"),
])
def test_schedulable_after_node_change(old: object, new: object, expected: Expected) -> None:
    check(NODE_HINT, ANY_POD, old, new, expected)


def pod(uid: str, toleration: str = "") -> PodInfo:
    builder = make_pod("p").uid(uid)
    if toleration:
        builder.toleration(toleration, operator="Exists")
    return builder.info()


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(None, "not-a-pod", ERROR, id="error-wrong-new-object"),
    pytest.param("not-a-pod", pod("uid"), ERROR, id="error-wrong-old-object"),
    pytest.param(pod("different-uid"), pod("different-uid", nu.TAINT_NODE_UNSCHEDULABLE), SKIP,
                 id="skip-different-pod-update"),
    pytest.param(pod("uid"), pod("uid", nu.TAINT_NODE_UNSCHEDULABLE), QUEUE,
                 id="queue-when-the-unsched-pod-gets-toleration"),
    pytest.param(pod("uid"), pod("uid", "unrelated-key"), SKIP,
                 id="skip-when-the-unsched-pod-gets-unrelated-toleration"),
])
def test_schedulable_after_pod_toleration_change(old: object, new: object,
                                                 expected: Expected) -> None:
    check(POD_HINT, pod("uid"), old, new, expected)
