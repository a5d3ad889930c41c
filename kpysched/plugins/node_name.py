"""NodeName: a pod that names its node (spec.nodeName) fits only that node.

From v1.37 PreFilter already narrows such a pod to that node, so every other node is
left out as UnschedulableAndUnresolvable and preemption never looks at it. Only a bound
pod sent back to the scheduler (a deferred in-place resize) has a node name there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    NodeOnlyFilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    VectorFilterPlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "NodeName"

REASON = "node(s) didn't match the requested node name"

_EVENTS = (ClusterEvent(Resource.NODE, ActionType.ADD),)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node.name


class NodeName(PreFilterPlugin, VectorFilterPlugin, NodeOnlyFilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, *, narrows_at_pre_filter: bool = True) -> None:
        # v1.36 had no PreFilter here: there it lets every pod through untouched (no
        # pod with a node name reaches a v1.36 cycle anyway).
        self._narrows = narrows_at_pre_filter

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        if self._narrows and pod.node_name:
            return PreFilterResult({pod.node_name}), SUCCESS
        return None, SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return _EVENTS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        verdict = np.ones(len(snapshot.node_infos), dtype=np.bool_)
        if pod.node_name:
            verdict[:] = False
            row = snapshot.index.get(pod.node_name)
            if row is not None:
                verdict[row] = True
        return verdict

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if fits(pod, node):
            return SUCCESS
        return Status.unresolvable(REASON, plugin=NAME)


PRE_FILTER_RELEASE = 37


def new(args: None, handle: Handle) -> NodeName:
    return NodeName(narrows_at_pre_filter=handle.features.release >= PRE_FILTER_RELEASE)


SPEC = PluginSpec(NAME, NodeName, new, None)
