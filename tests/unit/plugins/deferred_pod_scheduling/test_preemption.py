"""DefaultPreemption for a deferred in-place resize: the deferred cases of upstream
v1.37.2's TestPostFilter (default_preemption_test.go): the pod's own cached size is not
counted twice, a Filter plugin that skips the pod at PreFilter stays skipped in the
victims' dry runs, and victims are only sought on the pod's own node."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    FilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.metrics import NoMetrics
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from kpysched.plugins._shared.resize import is_pod_resize_deferred
from kpysched.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from kpysched.plugins.default_preemption import plugin as dp
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod, make_snapshot
from tests.unit.plugins.resize_gate import GATE_ON

HIGH, LOW = 1000, 0
NODE = {"cpu": "200m", "memory": "200", "pods": "32"}


class SkipOnDeferred(PreFilterPlugin, FilterPlugin):
    """Upstream's SkipOnDeferredFilterPlugin: fails every pod it is asked about, and
    skips a deferred resize at PreFilter (so it must never be asked about one)."""

    NAME: ClassVar[str] = "skip-on-deferred"

    def events_to_register(self) -> tuple[()]:
        return ()

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        if is_pod_resize_deferred(pod.pod):
            return None, Status.skip()
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.unschedulable(f"{self.NAME}: always fail for non-deferred pods")


def pod(name: str, priority: int, node: str, cpu: str, memory: str, *,
        deferred: bool = False) -> PodBuilder:
    built = make_pod(name).uid(name).priority(priority).node(node).req(cpu=cpu, memory=memory)
    if deferred:
        built.obj().status.conditions.append(api.PodCondition(
            type="PodResizePending", status="True", reason="Deferred"))
    return built


def framework(nodes: list[NodeInfo], extra: Sequence[str] = ()) -> tuple[Framework, Any]:
    registry = {**IN_TREE, SkipOnDeferred.NAME: PluginSpec(
        SkipOnDeferred.NAME, SkipOnDeferred, lambda args, handle: SkipOnDeferred(), None)}
    registry[dp.NAME] = PluginSpec(
        dp.NAME, DefaultPreemption,
        lambda a, h: DefaultPreemption(a or DefaultPreemptionArgs(), h, rng=random.Random(4)),
        DefaultPreemptionArgs)
    handle = FakeHandle(snapshot_value=make_snapshot(*nodes), features_value=GATE_ON)
    filters = ["NodeName", "NodeResourcesFit", *extra]
    profile = ProfileSpec(
        scheduler_name="test",
        plugins={"queueSort": ["PrioritySort"], "preFilter": filters, "filter": filters,
                 "postFilter": [dp.NAME], "bind": ["DefaultBinder"]})
    built = Framework(profile, registry, handle, NoMetrics())
    return built, handle


PREEMPTOR = pod("p", HIGH, "node1", "200m", "200", deferred=True)
ITSELF = pod("p", HIGH, "node1", "100m", "100")  # as the cache holds it, before the resize
FOUND = "preemption: found a potential placement for pod on node node1, preempting 1 victims"


def node(name: str, *pods: PodBuilder) -> NodeInfo:
    return make_node(name).capacity(NODE).info(*pods)


@pytest.mark.parametrize(("nodes", "extra", "statuses", "want"), [
    pytest.param([node("node1", ITSELF, pod("p1", LOW, "node1", "100m", "100"))], (),
                 {"node1": Status(Code.UNSCHEDULABLE)},
                 (PostFilterResult("node1"), Code.SUCCESS, FOUND),
                 id="deferred-pod-resize-preemption-success-mitigates-double-counting"),
    pytest.param([node("node1", ITSELF, pod("p1", LOW, "node1", "100m", "100"))],
                 (SkipOnDeferred.NAME,), {"node1": Status(Code.UNSCHEDULABLE)},
                 (PostFilterResult("node1"), Code.SUCCESS, FOUND),
                 id="deferred-pod-resize-preemption-success-bypasses-skipped-filter-plugins"),
    pytest.param([node("node1", ITSELF), node("node2", pod("p2", LOW, "node2", "100m", "100"))],
                 (), {"node1": Status(Code.UNSCHEDULABLE)},
                 (PostFilterResult(""), Code.UNSCHEDULABLE,
                  "preemption: 0/2 nodes are available: 1 No preemption victims found for "
                  "incoming pod, 1 Preemption is not helpful for scheduling."),
                 id="deferred-pod-resize-preemption-fails-victim-search-isolated-to-host-node"),
])
def test_post_filter_for_a_deferred_resize(nodes: list[NodeInfo], extra: Sequence[str],
                                           statuses: dict[str, Status],
                                           want: tuple[PostFilterResult, Code, str]) -> None:
    built, handle = framework(nodes, extra)
    info = PREEMPTOR.info()
    state = CycleState()
    _, status, _ = built.run_pre_filter(state, info, handle.snapshot.node_infos)
    assert status.ok, status
    result, got, _ = built.run_post_filter(state, info, statuses)
    assert (result, got.code, got.message()) == want
