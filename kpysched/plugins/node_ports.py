"""NodePorts: a node fits only if the host ports the pod asks for are free there.

PreFilter collects the pod's host ports (regular containers and sidecars) and
skips the plugin when there are none. A wanted port conflicts with a used one
of the same protocol and number when either IP is the wildcard 0.0.0.0 or the
IPs are equal.

Queueing hint: a deleted pod helps only if it was scheduled (or nominated) and held a
host port the pod wants; a new node always may (no hint: container ports are
immutable, so no pod update can help).
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
from kpysched.framework.interfaces import FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import HostPort, PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod

NAME = "NodePorts"

REASON = "node(s) didn't have free ports for the requested pod ports"

_PRE_FILTER_KEY = "PreFilter" + NAME


def schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Did the deleted pod hold a host port that `pod` wants?"""
    deleted, _ = objects_as(PodInfo, old, new)
    if deleted is None:
        raise ValueError("a pod deletion without the deleted pod")
    if not deleted.node_name and not deleted.pod.status.nominated_node_name:
        return QueueingHint.QUEUE_SKIP  # it held no port anywhere
    if not deleted.host_ports:
        return QueueingHint.QUEUE_SKIP
    freed = NodeInfo(deleted.node_name, used_ports=dict.fromkeys(deleted.host_ports, 1))
    if not freed.port_conflicts(pod.host_ports):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE),
                         schedulable_after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
)


class NodePorts(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, *, deferred_resize: bool = False) -> None:
        self._deferred_resize = deferred_resize  # InPlacePodVerticalScalingSchedulerPreemption

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        if not pod.host_ports:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, pod.host_ports)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        wanted: tuple[HostPort, ...] | None = state.get(_PRE_FILTER_KEY)
        if wanted is None:
            return Status.error(f"reading {_PRE_FILTER_KEY!r} from cycleState: not found",
                                plugin=NAME)
        if not node.used_ports or not node.port_conflicts(wanted):
            return SUCCESS
        return Status.unschedulable(REASON, plugin=NAME)


def new(args: None, handle: Handle) -> NodePorts:
    return NodePorts(deferred_resize=handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, NodePorts, new, None)
