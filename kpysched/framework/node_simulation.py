"""A node with some of its pods taken off or given back, as preemption's dry run needs.

Upstream clones the NodeInfo, removes and re-adds pods on the clone, tells the
PreFilter extensions (AddPod/RemovePod) each time, and runs the Filter chain on the
clone. `ClonedNode` does exactly that and always works.

When, for this pod, every Filter plugin that still runs either looks at the Node
object alone (NodeOnlyFilterPlugin) or can judge a node from a PodDelta
(PodDeltaFilterPlugin), and no PreFilter extension is active, nothing needs the
clone: `DeltaNode` keeps only the net change (pod count and summed requests) and
asks those plugins about the unchanged node plus the delta. Same verdicts, without
copying the node's pods and resources for every node tried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo
from kpysched.objects.resources import Resource

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo
    from kpysched.framework.scheduling_points import SchedulingPoints


class PodDelta:
    """Pods taken off a node (negative) and added to it (positive), as net sums."""

    __slots__ = ("pod_count", "requested")

    def __init__(self, pod_count: int = 0, requested: Resource | None = None) -> None:
        self.pod_count = pod_count
        self.requested = requested if requested is not None else Resource()

    def remove(self, pod: PodInfo) -> None:
        self.pod_count -= 1
        self.requested.subtract(pod.requests)

    def add(self, pod: PodInfo) -> None:
        self.pod_count += 1
        self.requested.add(pod.requests)

    def copy(self) -> PodDelta:
        return PodDelta(self.pod_count, self.requested.clone())


class ClonedNode:
    """Upstream's way: a clone of the node and its own copy of the cycle state, with
    the PreFilter extensions told of every pod taken off or given back."""

    __slots__ = ("_node", "_pod", "_points", "_state")

    def __init__(self, points: SchedulingPoints, state: CycleState, pod: PodInfo,
                 node: NodeInfo) -> None:
        self._points = points
        self._state = state.clone()
        self._pod = pod
        self._node = node.clone()

    def remove_pod(self, victim: PodInfo) -> Status:
        self._node.remove_pod(victim.uid)
        return self._points.run_pre_filter_extension_remove_pod(
            self._state, self._pod, victim, self._node)

    def add_pod(self, victim: PodInfo) -> Status:
        self._node.add_pod(victim)
        return self._points.run_pre_filter_extension_add_pod(
            self._state, self._pod, victim, self._node)

    def filter(self, node_only_passed: bool = False) -> Status:
        points = self._points
        return points.run_filter_with_nominated(
            self._state, self._pod, self._node,
            points.node_only_filter_names if node_only_passed else frozenset())


class DeltaNode:
    """The node left as it is, with the pods taken off or given back kept as a
    PodDelta; only for cycles where `can_use_delta` holds."""

    __slots__ = ("_delta", "_node", "_pod", "_points", "_state")

    def __init__(self, points: SchedulingPoints, state: CycleState, pod: PodInfo,
                 node: NodeInfo) -> None:
        self._points = points
        self._state = state
        self._pod = pod
        self._node = node
        self._delta = PodDelta()

    def remove_pod(self, victim: PodInfo) -> Status:
        self._delta.remove(victim)
        return SUCCESS

    def add_pod(self, victim: PodInfo) -> Status:
        self._delta.add(victim)
        return SUCCESS

    def filter(self, node_only_passed: bool = False) -> Status:
        return self._points.run_filter_with_pod_delta(
            self._state, self._pod, self._node, self._delta, node_only_passed)


def can_use_delta(points: SchedulingPoints, state: CycleState) -> bool:
    """Whether every Filter this pod meets is node-only or PodDelta-capable, and no
    PreFilter extension would have to be told of the changes."""
    skipped = state.skip_filter_plugins
    if any(plugin.NAME not in skipped for plugin in points.pre_filter_extension_plugins):
        return False
    judged_without_clone = points.node_only_filter_names | points.pod_delta_filter_names
    return all(plugin.NAME in skipped or plugin.NAME in judged_without_clone
               for plugin in points.filter_plugins)
