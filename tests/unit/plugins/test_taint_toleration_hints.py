"""TaintToleration's queueing hints, with upstream's TestIsSchedulableAfterNodeChange and
Test_isSchedulableAfterPodTolerationChange (taint_toleration_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import NODE_ADD, ActionType, ClusterEvent, Resource
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import taint_toleration as tt
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

PLUGIN = tt.new(None, FakeHandle())
NODE_HINT = hint_for(PLUGIN, NODE_ADD)
POD_HINT = hint_for(PLUGIN, ClusterEvent(Resource.UNSCHEDULED_POD,
                                         ActionType.UPDATE_POD_TOLERATIONS))


def tolerating(value: str) -> PodInfo:
    return make_pod("pod1").toleration("dedicated", value, "NoSchedule", "Equal").info()


def tainted(*values: str) -> api.Node:
    node = make_node("nodeA")
    for value in values:
        node.taint("dedicated", value, "NoSchedule")
    return node.obj()


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(tolerating("user2"), None, "not-a-node", ERROR, id="backoff-wrong-new-object"),
    pytest.param(tolerating("user2"), "not-a-node", tainted("user1"), ERROR,
                 id="backoff-wrong-old-object"),
    pytest.param(tolerating("user2"), None, tainted("user1"), SKIP,
                 id="skip-queue-on-untoleratedtaint-node-added"),
    pytest.param(tolerating("user2"), None, tainted("user2"), QUEUE,
                 id="queue-on-toleratedtaint-node-added"),
    pytest.param(tolerating("user2"), tainted("user1"), tainted("user1", "user3"), SKIP,
                 id="skip-unrelated-change"),
    pytest.param(tolerating("user2"), tainted("user1"), tainted("user2"), QUEUE,
                 id="queue-on-taint-change"),
    # Beyond upstream's table: a PreferNoSchedule taint never rejected anyone.
    pytest.param(tolerating("user2"), tainted(),
                 make_node("nodeA").taint("dedicated", "user1", "PreferNoSchedule").obj(),
                 SKIP, id="skip-prefer-no-schedule-taint-only-before-and-after"),
])
def test_schedulable_after_node_change(target: PodInfo, old: object, new: object,
                                       expected: Expected) -> None:
    check(NODE_HINT, target, old, new, expected)


def pod(uid: str, *tolerations: str) -> PodInfo:
    builder = make_pod("pod-2" if uid == "uid1" else "pod-1", "ns-1").uid(uid)
    for key in tolerations:
        builder.toleration(key, effect="NoSchedule")
    return builder.info()


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(pod("uid0"), None, "not-a-pod", ERROR, id="backoff-wrong-new-object"),
    pytest.param(pod("uid0"), "not-a-pod", pod("uid0"), ERROR, id="backoff-wrong-old-object"),
    pytest.param(pod("uid0"), pod("uid1"), pod("uid1", "foo"), SKIP,
                 id="skip-updates-other-pod"),
    pytest.param(pod("uid0"), pod("uid0"), pod("uid0", "foo"), QUEUE,
                 id="queue-on-toleration-added"),
])
def test_schedulable_after_pod_toleration_change(target: PodInfo, old: object, new: object,
                                                 expected: Expected) -> None:
    check(POD_HINT, target, old, new, expected)
