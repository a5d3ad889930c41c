"""DeferredPodScheduling (v1.37, behind InPlacePodVerticalScalingSchedulerPreemption,
alpha and off): a pod already running whose in-place resize the kubelet deferred is
scheduled again, to its own node only, so that preemption can make room for the
larger size.

Every other pod passes untouched (PreFilter skips it). For a deferred pod Filter keeps
only the node it runs on, and refuses it when the node opts out of resize preemption
(spec.podPreemptionPolicy.disableResizePreemption). When the resize fits, Permit stops
the cycle: there is nothing to bind, the kubelet will carry the resize out. The
config layer places the plugin just before NodeResourcesFit when the gate is on, so a
node that opted out is what the pod is rejected for (and this plugin's hints requeue
it when the node opts back in).

Upstream's Permit is never reached in practice: the cycle assumes the chosen node
first, and the cache refuses to assume a pod it already holds, so a resize that fits
ends that cycle as an error (kpysched.scheduling.binding_cycle does the same). The
event handlers queue and unqueue deferred pods (kpysched.scheduling.deferred_handlers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    FilterPlugin,
    Handle,
    PermitPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import (
    IN_PLACE_RESIZE_PREEMPTION_GATE,
    is_pod_resize_deferred,
    resize_preemption_disabled,
)

NAME = "DeferredPodScheduling"

REASON_NODE_DISABLES_RESIZE_PREEMPTION = "node had resize preemption disabled"
REASON_ASSIGNED_ELSEWHERE = "pod assigned to different node"
REASON_NODE_NOT_FOUND = "node not found"
REASON_WAITING_FOR_KUBELET = "pod resize fits, waiting for Kubelet actuation"


class DeferredPodScheduling(PreFilterPlugin, FilterPlugin, PermitPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled

    def _concerns(self, pod: api.Pod) -> bool:
        return self._enabled and is_pod_resize_deferred(pod)

    # ---- queueing hints ----------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_PREEMPTION_POLICY),
                self.schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD),
                                 self.schedulable_after_node_add),
        )

    def schedulable_after_node_change(self, pod: PodInfo, old: object,
                                      new: object) -> QueueingHint:
        """The pod's own node turned resize preemption back on."""
        if not self._concerns(pod.pod):
            return QueueingHint.QUEUE_SKIP
        before, after = objects_as(api.Node, old, new)
        if before is None or after is None:
            raise ValueError("a node update without both objects")
        if after.metadata.name != pod.node_name:
            return QueueingHint.QUEUE_SKIP
        if resize_preemption_disabled(before) and not resize_preemption_disabled(after):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def schedulable_after_node_add(self, pod: PodInfo, old: object,
                                   new: object) -> QueueingHint:
        """The pod's own node (re)appeared allowing resize preemption."""
        if not self._concerns(pod.pod):
            return QueueingHint.QUEUE_SKIP
        _, added = objects_as(api.Node, old, new)
        if added is None:
            raise ValueError("a node add without the node")
        if added.metadata.name != pod.node_name or resize_preemption_disabled(added):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ---- PreFilter / Filter / Permit ---------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self._concerns(pod.pod):
            return None, Status.skip()
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not self._concerns(pod.pod):
            return SUCCESS
        if node.node is None:
            return Status.error(REASON_NODE_NOT_FOUND, NAME)
        if pod.node_name and pod.node_name != node.name:
            return Status.unresolvable(REASON_ASSIGNED_ELSEWHERE, plugin=NAME)
        if resize_preemption_disabled(node.node):
            return Status.unresolvable(REASON_NODE_DISABLES_RESIZE_PREEMPTION, plugin=NAME)
        return SUCCESS

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if not self._concerns(pod.pod):
            return SUCCESS, 0.0
        return Status.unresolvable(REASON_WAITING_FOR_KUBELET, plugin=NAME), 0.0


def new(args: None, handle: Handle) -> DeferredPodScheduling:
    return DeferredPodScheduling(handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, DeferredPodScheduling, new, None)
