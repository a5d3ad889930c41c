"""NodeUnschedulable: keep pods off cordoned nodes (spec.unschedulable) unless they
tolerate the node.kubernetes.io/unschedulable:NoSchedule taint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, VectorFilterPlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.taints import NO_SCHEDULE, tolerates

NAME = "NodeUnschedulable"

REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = api.Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)

_EVENTS = (
    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATIONS),
)


class NodeUnschedulable(VectorFilterPlugin):
    NAME: ClassVar[str] = NAME

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return _EVENTS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations):
            return np.ones(len(snapshot.node_infos), dtype=np.bool_)
        passed: npt.NDArray[np.bool_] = ~snapshot.columns.unschedulable
        return passed

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.node is None or not node.node.spec.unschedulable:
            return SUCCESS
        if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations):
            return SUCCESS
        return Status.unresolvable(REASON_UNSCHEDULABLE, plugin=NAME)


def new(args: None, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


SPEC = PluginSpec(NAME, NodeUnschedulable, new, None)
