"""NodeResourcesFit with InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha):
upstream's TestDeferredResizeFit (a bound pod checked against its own node needs room
only for its growth), the deferred cases of Test_isSchedulableAfterAssignedPodDelete
and ...AssignedPodScaleDown, Test_isSchedulableAfterTargetPodScaleUp and
Test_isSchedulableAfterAssignedPodScaleUp (fit_test.go), and the per-node forms the
vector paths fall back to (preemption's totals included)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    Resource,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.pod_totals import PodTotals
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_resources import fit
from tests.unit.builders import FakeHandle, make_node, make_pod, make_snapshot
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for
from tests.unit.plugins.resize_gate import GATE_OFF, GATE_ON


def plugin(gate_on: bool) -> fit.NodeResourcesFit:
    return fit.new(None, FakeHandle(features_value=GATE_ON if gate_on else GATE_OFF))


def pod(name: str, node: str = "", *, deferred: bool = False, uid: str | None = None,
        **requests: str) -> PodInfo:
    builder = make_pod(name).req(**requests) if requests else make_pod(name)
    builder.uid(uid or f"{name}-uid")
    if node:
        builder.node(node)
    built = builder.obj()
    if deferred:
        built.status.conditions.append(api.PodCondition(
            type="PodResizePending", status="True", reason="Deferred"))
    return PodInfo.of(built)


def node(cpu: str, memory: str = "0") -> api.Node:
    return make_node("test-node").capacity(cpu=cpu, memory=memory, pods="32").obj()


INSUFFICIENT_CPU = ["Insufficient cpu"]


@pytest.mark.parametrize(("target", "existing", "allocatable", "gate_on", "want"), [
    pytest.param(pod("pod1", "test-node", deferred=True, cpu="800m", memory="1600"),
                 [pod("pod1", "test-node", cpu="500m", memory="1000")], node("1", "2000"), True,
                 (Code.SUCCESS, []), id="deferred-pod-resize-fits-no-other-workloads"),
    pytest.param(pod("pod1", "test-node", deferred=True, cpu="800m", memory="1600"),
                 [pod("pod1", "test-node", cpu="500m", memory="1000")], node("1", "2000"), False,
                 (Code.UNSCHEDULABLE, ["Insufficient cpu", "Insufficient memory"]),
                 id="feature-gate-false-double-counting-causes-fit-failure"),
    pytest.param(pod("pod1", "test-node", deferred=True, cpu="800m"),
                 [pod("pod1", "test-node", cpu="500m"), pod("pod2", "test-node", cpu="400m")],
                 node("1"), True, (Code.UNSCHEDULABLE, INSUFFICIENT_CPU),
                 id="deferred-pod-resize-does-not-fit-resolvable-via-preemption"),
    pytest.param(pod("pod1", "test-node", deferred=True, cpu="1200m"),
                 [pod("pod1", "test-node", cpu="500m")], node("1"), True,
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, INSUFFICIENT_CPU),
                 id="deferred-pod-resize-does-not-fit-unresolvable-exceeds-node-capacity"),
    pytest.param(pod("pod1", "test-node", deferred=True, cpu="800m", memory="1600"), [],
                 node("1", "2000"), False, (Code.SUCCESS, []),
                 id="feature-gate-false-pod-not-in-cache-resize-fits"),
])
def test_deferred_resize_fit(target: PodInfo, existing: list[PodInfo], allocatable: api.Node,
                             gate_on: bool, want: tuple[Code, list[str]]) -> None:
    node_info = make_node("test-node").info(*existing)
    node_info.set_node(allocatable)
    fitting = plugin(gate_on)
    state = CycleState()
    _, status = fitting.pre_filter(state, target, [node_info])
    assert status.ok
    got = fitting.filter(state, target, node_info)
    assert (got.code, got.reasons) == want
    # The same answer where preemption asks with the node's totals.
    totals = PodTotals(len(node_info.pods), node_info.requested)
    by_totals = fitting.filter_with_pod_totals(state, target, node_info, totals)
    assert (by_totals.code, by_totals.reasons) == want


def test_an_overcommitted_node_stays_short_even_when_the_pod_does_not_grow() -> None:
    """The growth is never below nothing: a node already over its allocatable (the
    resize counted at its new size) has no room, as upstream's max(0, ...) keeps it."""
    target = pod("pod1", "test-node", deferred=True, cpu="3")
    node_info = make_node("test-node").info(pod("pod1", "test-node", cpu="3"),
                                            pod("low", "test-node", cpu="2"))
    node_info.set_node(node("4"))
    fitting = plugin(True)
    state = CycleState()
    fitting.pre_filter(state, target, [node_info])
    got = fitting.filter(state, target, node_info)
    assert (got.code, got.reasons) == (Code.UNSCHEDULABLE, INSUFFICIENT_CPU)


def test_the_vector_forms_leave_a_bound_pod_to_the_per_node_form() -> None:
    target = pod("pod1", "test-node", deferred=True, cpu="800m")
    node_info = make_node("test-node").info(pod("pod1", "test-node", cpu="500m"))
    node_info.set_node(node("1"))
    snapshot = make_snapshot(node_info)
    for gate_on, vector in ((True, None), (False, [False])):
        fitting = plugin(gate_on)
        state = CycleState()
        fitting.pre_filter(state, target, [node_info])
        got = fitting.filter_vector(state, target, snapshot)
        assert (None if got is None else got.tolist()) == vector


DEFERRED_ON_NODE1 = pod("pod1", "node1", deferred=True, cpu="1")
PLUGIN_ON = plugin(True)


@pytest.mark.parametrize(("target", "old", "expected"), [
    pytest.param(DEFERRED_ON_NODE1, pod("pod2", "node2", cpu="1"), SKIP,
                 id="skip-queue-on-other-pod-deleted-different-node-when-deferred"),
    pytest.param(DEFERRED_ON_NODE1, pod("pod2", "node1", cpu="1"), QUEUE,
                 id="queue-on-other-pod-deleted-same-node-when-deferred"),
])
def test_schedulable_after_assigned_pod_delete(target: PodInfo, old: PodInfo,
                                               expected: Expected) -> None:
    check(hint_for(PLUGIN_ON, ASSIGNED_POD_DELETE), target, old, None, expected)


SCALE_DOWN = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(DEFERRED_ON_NODE1, pod("pod2", "node2", cpu="2"), pod("pod2", "node2", cpu="1"),
                 SKIP, id="skip-queue-on-other-pod-scaled-down-different-node-when-deferred"),
    pytest.param(DEFERRED_ON_NODE1, pod("pod2", "node1", cpu="2"), pod("pod2", "node1", cpu="1"),
                 QUEUE, id="queue-on-other-pod-scaled-down-same-node-when-deferred"),
])
def test_schedulable_after_assigned_pod_scale_down(target: PodInfo, old: PodInfo, new: PodInfo,
                                                   expected: Expected) -> None:
    check(hint_for(PLUGIN_ON, SCALE_DOWN), target, old, new, expected)


TARGET_SCALE_UP = ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCALE_UP)
ASSIGNED_SCALE_UP = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_UP)


@pytest.mark.parametrize(("target", "expected"), [
    pytest.param(pod("pod1", "node1"), SKIP, id="skip-queue-on-pod-not-deferred"),
    pytest.param(pod("pod1", "node1", deferred=True), QUEUE,
                 id="queue-on-deferred-target-pod-scale-up"),
])
def test_schedulable_after_target_pod_scale_up(target: PodInfo, expected: Expected) -> None:
    check(hint_for(PLUGIN_ON, TARGET_SCALE_UP), target, None, None, expected)


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(pod("p"), "not-a-pod", None, ERROR, id="backoff-wrong-old-object"),
    pytest.param(pod("p"), None, "not-a-pod", ERROR, id="backoff-wrong-new-object"),
    pytest.param(pod("pod1", "node1"), pod("pod2", "node1"), pod("pod2", "node1"), SKIP,
                 id="skip-queue-on-pod-not-deferred"),
    pytest.param(pod("pod1", "node1", deferred=True), pod("pod2", "node2", cpu="1"),
                 pod("pod2", "node2", cpu="2"), SKIP, id="skip-queue-on-different-node-scale-up"),
    pytest.param(pod("pod1", "node1", deferred=True), pod("pod2", "node1", cpu="1"),
                 pod("pod2", "node1", cpu="2"), QUEUE, id="queue-on-same-node-scale-up"),
])
def test_schedulable_after_assigned_pod_scale_up(target: PodInfo, old: object, new: object,
                                                 expected: Expected) -> None:
    check(hint_for(PLUGIN_ON, ASSIGNED_SCALE_UP), target, old, new, expected)


def test_the_scale_up_registrations_come_with_the_gate_only() -> None:
    heard = [r.event for r in plugin(False).events_to_register()]
    assert ASSIGNED_SCALE_UP not in heard and TARGET_SCALE_UP not in heard
    assert hint_for(PLUGIN_ON, ASSIGNED_SCALE_UP) is not None


def test_a_node_event_on_another_node_is_no_news_for_a_deferred_resize() -> None:
    """Upstream's isSchedulableAfterNodeChange skips nodes other than the pod's own."""
    hint = hint_for(PLUGIN_ON, NODE_ADD)
    other = make_node("node2").capacity(cpu="8", pods="32").obj()
    own = make_node("node1").capacity(cpu="8", pods="32").obj()
    check(hint, DEFERRED_ON_NODE1, None, other, SKIP)
    check(hint, DEFERRED_ON_NODE1, None, own, QUEUE)
    check(hint_for(plugin(False), NODE_ADD), DEFERRED_ON_NODE1, None, other, QUEUE)
