"""DeferredPodScheduling, with upstream's deferred_pod_scheduling_test.go tables
(PreFilter, Filter, the two node hints, Permit), each case with the gate on and off
as upstream's gateOn column says, and the registry/resize helper around it."""

from __future__ import annotations

import pytest

from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource, with_hints
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from kpysched.plugins import deferred_pod_scheduling as dps
from kpysched.plugins._shared.resize import (
    is_pod_resize_deferred,
    resize_preemption_disabled,
)
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.hints import QUEUE, SKIP
from tests.unit.plugins.resize_gate import GATE_OFF, GATE_ON


def plugin(gate_on: bool) -> dps.DeferredPodScheduling:
    return dps.new(None, FakeHandle(features_value=GATE_ON if gate_on else GATE_OFF))


def pod_on(node: str, *, deferred: bool, reason: str = "Deferred") -> PodInfo:
    built = make_pod("pod1").node(node).obj()
    if deferred:
        built.status.conditions.append(api.PodCondition(
            type="PodResizePending", status="True", reason=reason))
    return PodInfo.of(built)


DEFERRED = pod_on("node1", deferred=True)
NOT_DEFERRED = pod_on("node1", deferred=False)


def node(name: str = "node1", *, disabled_by: list[str] | None = None) -> api.Node:
    built = make_node(name).obj()
    if disabled_by is not None:
        built.spec.pod_preemption_policy = api.NodePodPreemptionPolicy(
            disable_resize_preemption=disabled_by)
    return built


ENABLED = node()
DISABLED = node(disabled_by=["cluster-autoscaler"])
OTHER = node("node2")


def outcome(status: Status) -> tuple[Code, list[str]]:
    return status.code, status.reasons


OK = (Code.SUCCESS, [])


@pytest.mark.parametrize(("pod", "gate_on", "want"), [
    pytest.param(DEFERRED, False, Code.SKIP, id="feature gate off, deferred pod -> skip"),
    pytest.param(NOT_DEFERRED, True, Code.SKIP, id="feature gate on, non-deferred pod -> skip"),
    pytest.param(DEFERRED, True, Code.SUCCESS, id="feature gate on, deferred pod -> success/nil"),
])
def test_pre_filter(pod: PodInfo, gate_on: bool, want: Code) -> None:
    result, status = plugin(gate_on).pre_filter(CycleState(), pod, [])
    assert result is None
    assert status.code == want


@pytest.mark.parametrize(("pod", "target", "gate_on", "want"), [
    pytest.param(DEFERRED, DISABLED, False, OK,
                 id="feature gate off -> success (ignore disabled policy)"),
    pytest.param(NOT_DEFERRED, DISABLED, True, OK,
                 id="feature gate on, non-deferred pod -> success (ignore disabled policy)"),
    pytest.param(DEFERRED, ENABLED, True, OK, id="node has nil preemption policy -> success"),
    pytest.param(DEFERRED, node(disabled_by=[]), True, OK,
                 id="node has empty disable preemption policy -> success"),
    pytest.param(DEFERRED, DISABLED, True,
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                  [dps.REASON_NODE_DISABLES_RESIZE_PREEMPTION]),
                 id="node has disabled preemption policy -> unschedulable"),
    pytest.param(DEFERRED, OTHER, True,
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["pod assigned to different node"]),
                 id="node name does not match pod assigned node -> unschedulable"),
])
def test_filter(pod: PodInfo, target: api.Node, gate_on: bool,
                want: tuple[Code, list[str]]) -> None:
    info = make_node(target.metadata.name).info()
    info.node = target
    assert outcome(plugin(gate_on).filter(CycleState(), pod, info)) == want


def test_filter_without_the_node_object_is_an_error() -> None:
    info = make_node("node1").info()
    info.node = None
    assert outcome(plugin(True).filter(CycleState(), DEFERRED, info)) == (
        Code.ERROR, ["node not found"])


@pytest.mark.parametrize(("pod", "old", "new", "gate_on", "want"), [
    pytest.param(DEFERRED, DISABLED, ENABLED, False, SKIP,
                 id="gate off, deferred pod, transition to enabled -> skip"),
    pytest.param(NOT_DEFERRED, DISABLED, ENABLED, True, SKIP,
                 id="gate on, non-deferred pod, transition to enabled -> skip"),
    pytest.param(DEFERRED, node("node2", disabled_by=["a"]), OTHER, True, SKIP,
                 id="gate on, deferred pod, node is not pod's assigned node -> skip"),
    pytest.param(DEFERRED, DISABLED, ENABLED, True, QUEUE,
                 id="gate on, deferred pod, policy transition disabled -> enabled -> queue"),
    pytest.param(DEFERRED, ENABLED, DISABLED, True, SKIP,
                 id="gate on, deferred pod, policy transition enabled -> disabled -> skip"),
    pytest.param(DEFERRED, ENABLED, ENABLED, True, SKIP,
                 id="gate on, deferred pod, other node field updated -> skip"),
])
def test_schedulable_after_node_change(pod: PodInfo, old: api.Node, new: api.Node,
                                       gate_on: bool, want: object) -> None:
    assert plugin(gate_on).schedulable_after_node_change(pod, old, new) == want


@pytest.mark.parametrize(("pod", "added", "gate_on", "want"), [
    pytest.param(DEFERRED, ENABLED, False, SKIP,
                 id="gate off, deferred pod, add enabled node -> skip"),
    pytest.param(NOT_DEFERRED, ENABLED, True, SKIP,
                 id="gate on, non-deferred pod, add enabled node -> skip"),
    pytest.param(DEFERRED, OTHER, True, SKIP,
                 id="gate on, deferred pod, node is not pod's assigned node -> skip"),
    pytest.param(DEFERRED, ENABLED, True, QUEUE,
                 id="gate on, deferred pod, add enabled node -> queue"),
    pytest.param(DEFERRED, DISABLED, True, SKIP,
                 id="gate on, deferred pod, add disabled node -> skip"),
])
def test_schedulable_after_node_add(pod: PodInfo, added: api.Node, gate_on: bool,
                                    want: object) -> None:
    assert plugin(gate_on).schedulable_after_node_add(pod, None, added) == want


@pytest.mark.parametrize(("pod", "gate_on", "want"), [
    pytest.param(DEFERRED, False, OK, id="feature gate off, deferred pod -> success/nil"),
    pytest.param(NOT_DEFERRED, True, OK, id="feature gate on, non-deferred pod -> success/nil"),
    pytest.param(DEFERRED, True,
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                  ["pod resize fits, waiting for Kubelet actuation"]),
                 id="feature gate on, deferred pod -> reject with UnschedulableAndUnresolvable"),
])
def test_permit(pod: PodInfo, gate_on: bool, want: tuple[Code, list[str]]) -> None:
    status, timeout = plugin(gate_on).permit(CycleState(), pod, "node1")
    assert (outcome(status), timeout) == (want, 0.0)


def test_events_hear_node_adds_and_preemption_policy_updates() -> None:
    """As upstream's EventsToRegister: a node's preemption policy changing, or a node added."""
    registrations = with_hints(plugin(True).events_to_register())
    assert [r.event for r in registrations] == [
        ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_PREEMPTION_POLICY),
        ClusterEvent(Resource.NODE, ActionType.ADD)]
    assert all(r.hint is not None for r in registrations)


def test_off_by_default_in_both_releases() -> None:
    for release in (36, 37):
        instance = dps.new(None, FakeHandle(features_value=Features(release=release)))
        assert instance.pre_filter(CycleState(), DEFERRED, [])[1].code == Code.SKIP


def test_registered_in_tree() -> None:
    assert IN_TREE[dps.NAME].extension_points() == ["preFilter", "filter", "permit"]


@pytest.mark.parametrize(("pod", "deferred"), [
    pytest.param(DEFERRED, True, id="PodResizePending Deferred"),
    pytest.param(pod_on("node1", deferred=True, reason="Infeasible"), False,
                 id="PodResizePending Infeasible"),
    pytest.param(NOT_DEFERRED, False, id="no condition"),
])
def test_is_pod_resize_deferred(pod: PodInfo, deferred: bool) -> None:
    assert is_pod_resize_deferred(pod.pod) is deferred


def test_resize_preemption_disabled() -> None:
    assert resize_preemption_disabled(DISABLED)
    assert not resize_preemption_disabled(ENABLED)
    assert not resize_preemption_disabled(node(disabled_by=[]))
