"""The other plugins' deferred-resize branches (v1.37, InPlacePodVerticalScalingScheduler-
Preemption): upstream's <Plugin>_DeferredResizeSkipped tests (PreFilter Skip, Filter
Success; DynamicResources' PostFilter Unschedulable with no message) for every plugin
that judges where a pod may go, each also with the gate off, where the same pod is
judged as any other; NodeName's v1.37 PreFilter (TestNodeName_PreFilter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import PreFilterPlugin, PreFilterResult
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from kpysched.plugins import node_name as nn
from tests.unit.builders import FakeHandle, make_node, make_pod, make_snapshot
from tests.unit.plugins.resize_gate import GATE_OFF, GATE_ON


def deferred(builder: Any) -> PodInfo:
    built: api.Pod = builder.obj()
    built.status.conditions.append(api.PodCondition(
        type="PodResizePending", status="True", reason="Deferred"))
    return PodInfo.of(built)


def build(name: str, features: Features) -> Any:
    return IN_TREE[name].factory(None, FakeHandle(features_value=features))


# Each plugin with a pod and a node it would reject if the pod were judged: with the
# gate on a deferred resize passes it all the same.
def _untolerated_node() -> api.Node:
    node = make_node("node1").obj()
    node.spec.taints.append(api.Taint(key="dedicated", value="x", effect="NoSchedule"))
    return node


def _cordoned_node() -> api.Node:
    node = make_node("node1").obj()
    node.spec.unschedulable = True
    return node


REJECTING: list[tuple[str, Callable[[], Any], Callable[[], api.Node]]] = [
    ("NodeAffinity", lambda: make_pod("p").node_selector(zone="a"),
     lambda: make_node("node1").obj()),
    ("TaintToleration", lambda: make_pod("p"), _untolerated_node),
    ("NodeUnschedulable", lambda: make_pod("p"), _cordoned_node),
]

# Plugins whose PreFilter upstream makes skip a deferred resize.
SKIPPING = ["NodeAffinity", "NodePorts", "PodTopologySpread", "InterPodAffinity", "VolumeZone",
            "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
            "NodeDeclaredFeatures", "DynamicResources"]


@pytest.mark.parametrize("name", SKIPPING)
def test_pre_filter_skips_a_deferred_resize_with_the_gate_on(name: str) -> None:
    pod = deferred(make_pod("p").node("node1"))
    plugin = build(name, GATE_ON)
    assert PreFilterPlugin in type(plugin).__mro__
    result, status = plugin.pre_filter(CycleState(), pod, [])
    assert (result, status.code) == (None, Code.SKIP)
    node = make_node("node1").info()
    assert plugin.filter(CycleState(), pod, node).code == Code.SUCCESS


@pytest.mark.parametrize("name", SKIPPING)
def test_with_the_gate_off_a_deferred_resize_is_judged_as_a_plain_pod(name: str) -> None:
    plain = make_pod("p").node("node1").node_selector(zone="a").req(cpu="1")
    pod = deferred(make_pod("p").node("node1").node_selector(zone="a").req(cpu="1"))
    plugin = build(name, GATE_OFF)
    _, want = plugin.pre_filter(CycleState(), plain.info(), [])
    _, got = plugin.pre_filter(CycleState(), pod, [])
    assert (got.code, got.reasons) == (want.code, want.reasons)


@pytest.mark.parametrize(("name", "pod", "node"), REJECTING, ids=[r[0] for r in REJECTING])
def test_filter_passes_a_deferred_resize_only_with_the_gate_on(
        name: str, pod: Callable[[], Any], node: Callable[[], api.Node]) -> None:
    node_info = make_node("node1").info()
    node_info.set_node(node())
    for features, want in ((GATE_ON, Code.SUCCESS),
                           (GATE_OFF, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)):
        plugin = build(name, features)
        state = CycleState()
        target = deferred(pod().node("node1"))
        if PreFilterPlugin in type(plugin).__mro__:
            _, status = plugin.pre_filter(state, target, [node_info])
            if status.code == Code.SKIP:
                assert want == Code.SUCCESS
                continue
        assert plugin.filter(state, target, node_info).code == want, features


@pytest.mark.parametrize("name", ["NodeUnschedulable", "TaintToleration"])
def test_vector_filter_passes_a_deferred_resize_with_the_gate_on(name: str) -> None:
    node_info = make_node("node1").info()
    node_info.set_node(_cordoned_node() if name == "NodeUnschedulable" else _untolerated_node())
    snapshot = make_snapshot(node_info)
    pod = deferred(make_pod("p").node("node1"))
    assert build(name, GATE_ON).filter_vector(CycleState(), pod, snapshot).tolist() == [True]
    assert build(name, GATE_OFF).filter_vector(CycleState(), pod, snapshot).tolist() == [False]


def test_dynamic_resources_post_filter_frees_nothing_for_a_deferred_resize() -> None:
    """Its PreFilter skipped the pod, so there is no state: no error, no message."""
    pod = deferred(make_pod("p").node("node1"))
    result, status = build("DynamicResources", GATE_ON).post_filter(CycleState(), pod, {})
    assert (result, status.code, status.reasons) == (None, Code.UNSCHEDULABLE, [])
    _, off = build("DynamicResources", GATE_OFF).post_filter(CycleState(), pod, {})
    assert off.code == Code.ERROR  # as upstream with the gate off: its state is missing


@pytest.mark.parametrize(("pod", "release", "want"), [
    pytest.param(make_pod("p").node("foo"), 37, PreFilterResult({"foo"}),
                 id="assigned-pod-restricted-to-its-node"),
    pytest.param(make_pod("p"), 37, None, id="unassigned-pod-not-restricted"),
    pytest.param(make_pod("p").node("foo"), 36, None, id="v1.36-has-no-such-prefilter"),
])
def test_node_name_pre_filter(pod: Any, release: int, want: PreFilterResult | None) -> None:
    plugin = nn.new(None, FakeHandle(features_value=Features(release=release)))
    result, status = plugin.pre_filter(CycleState(), pod.info(), [])
    assert (result, status.code) == (want, Code.SUCCESS)
