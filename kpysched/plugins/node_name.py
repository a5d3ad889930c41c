"""NodeName: a pod that names its node (spec.nodeName) fits only that node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, NodeOnlyFilterPlugin, VectorFilterPlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "NodeName"

REASON = "node(s) didn't match the requested node name"

_EVENTS = (ClusterEvent(Resource.NODE, ActionType.ADD),)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node.name


class NodeName(VectorFilterPlugin, NodeOnlyFilterPlugin):
    NAME: ClassVar[str] = NAME

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


def new(args: None, handle: Handle) -> NodeName:
    return NodeName()


SPEC = PluginSpec(NAME, NodeName, new, None)
