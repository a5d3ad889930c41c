"""NodeUnschedulable: keep pods off cordoned nodes (spec.unschedulable) unless they
tolerate the node.kubernetes.io/unschedulable:NoSchedule taint.

Queueing hints: a node helps when it is added schedulable or uncordoned; a toleration
added helps only the pod that got it, and only if it tolerates that taint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, NodeOnlyFilterPlugin, VectorFilterPlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.taints import NO_SCHEDULE, tolerates
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod

NAME = "NodeUnschedulable"

REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = api.Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A node added schedulable, or uncordoned."""
    original, modified = objects_as(api.Node, old, new)
    if modified is None:
        raise ValueError("a node event without the node")
    if modified.spec.unschedulable:
        return QueueingHint.QUEUE_SKIP
    if original is None or original.spec.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def schedulable_after_pod_toleration_change(pod: PodInfo, old: object,
                                            new: object) -> QueueingHint:
    """The rejected pod itself now tolerates the unschedulable taint (tolerations can only
    be added, and it did not tolerate it when it was rejected)."""
    _, modified = objects_as(PodInfo, old, new)
    if modified is None or modified.uid != pod.uid:
        return QueueingHint.QUEUE_SKIP
    if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in modified.pod.spec.tolerations):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                         schedulable_after_node_change),
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                         schedulable_after_pod_toleration_change),
)


class NodeUnschedulable(VectorFilterPlugin, NodeOnlyFilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, *, deferred_resize: bool = False) -> None:
        # InPlacePodVerticalScalingSchedulerPreemption: upstream's PreFilter skips a
        # deferred resize; passing it at Filter has the same outcome.
        self._deferred_resize = deferred_resize

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return np.ones(len(snapshot.node_infos), dtype=np.bool_)
        if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations):
            return np.ones(len(snapshot.node_infos), dtype=np.bool_)
        passed: npt.NDArray[np.bool_] = ~snapshot.columns.unschedulable
        return passed

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS  # a deferred resize stays where it runs
        if node.node is None or not node.node.spec.unschedulable:
            return SUCCESS
        if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations):
            return SUCCESS
        return Status.unresolvable(REASON_UNSCHEDULABLE, plugin=NAME)


def new(args: None, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable(
        deferred_resize=handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, NodeUnschedulable, new, None)
