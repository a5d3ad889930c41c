"""Cache: what every node holds, from the informers plus pods we have assumed.

Assumed pods are placed here the moment the scheduling cycle picks their node,
so the next cycle already sees them; the binding task later confirms (the
informer reports the pod bound) or forgets them (bind failed). Every mutation
bumps a global generation stamped on the touched NodeInfo, which is how
`update_snapshot` finds what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_tree import NodeTree
from kpysched.cache.pod_groups import GroupNameOf, PodGroupStates
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.pod import PodInfo

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class _PodState:
    pod: PodInfo
    node_name: str
    assumed: bool


class Cache:
    def __init__(self, *, group_of: GroupNameOf | None = None) -> None:
        # Assumed pods stay until the informer confirms or deletes them, as upstream's
        # since v1.26 (no TTL).
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}  # by uid
        self._generation = 0
        # Names of nodes touched since the last update_snapshot: the snapshot refresh
        # then costs O(changes), not O(nodes). There is one snapshot consumer.
        self._dirty: set[str] = set()
        # The order cycles walk nodes in: zones round-robin, as upstream's nodeTree.
        self._tree = NodeTree()
        # Members of pod groups and where each stands (only with GenericWorkload on or
        # Coscheduling enabled; `group_of` says how a pod names its group).
        self.pod_groups: PodGroupStates | None = (
            PodGroupStates(group_of) if group_of is not None else None)

    # --- generation bookkeeping -------------------------------------------------

    def _touch(self, info: NodeInfo) -> None:
        self._generation += 1
        info.generation = self._generation
        self._dirty.add(info.name)

    def _node_info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            # Pods may arrive before their node; keep them on a placeholder.
            info = NodeInfo(name)
            self._nodes[name] = info
        return info

    # --- nodes ------------------------------------------------------------------

    def add_or_update_node(self, node: api.Node) -> None:
        info = self._node_info(node.metadata.name)
        info.set_node(node)
        self._tree.add_or_update(node)
        self._touch(info)

    def remove_node(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is None:
            return
        self._tree.remove(name)
        if info.pods:
            # Pods still point at it; keep their usage until they go too.
            info.node = None
            self._touch(info)
        else:
            del self._nodes[name]
        self._generation += 1
        self._dirty.add(name)

    def node_count(self) -> int:
        return sum(1 for info in self._nodes.values() if info.node is not None)

    # --- pods -------------------------------------------------------------------

    def _place(self, pod: PodInfo, node_name: str) -> None:
        info = self._node_info(node_name)
        info.add_pod(pod)
        self._touch(info)

    def _unplace(self, uid: str, node_name: str) -> None:
        info = self._nodes.get(node_name)
        if info is None:
            return
        info.remove_pod(uid)
        self._touch(info)
        if info.node is None and not info.pods:
            del self._nodes[node_name]

    def assume_pod(self, pod: PodInfo, node_name: str) -> None:
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.key} is already in the cache")
        self._place(pod, node_name)
        self._pods[pod.uid] = _PodState(pod, node_name, assumed=True)
        if self.pod_groups is not None:
            self.pod_groups.assume(pod)

    def forget_pod(self, uid: str) -> None:
        """Drop an assumed pod whose binding failed."""
        state = self._pods.get(uid)
        if state is None or not state.assumed:
            return
        del self._pods[uid]
        self._unplace(uid, state.node_name)
        if self.pod_groups is not None:
            self.pod_groups.forget(state.pod)

    def is_assumed(self, uid: str) -> bool:
        state = self._pods.get(uid)
        return state is not None and state.assumed

    def assumed_pod(self, uid: str) -> PodInfo | None:
        """The assumed copy (on its node), or None when the pod is not assumed."""
        state = self._pods.get(uid)
        return state.pod if state is not None and state.assumed else None

    def add_or_update_pod(self, pod: PodInfo) -> None:
        """An assigned pod reported by the informer (ours or anyone's)."""
        state = self._pods.get(pod.uid)
        if state is not None:
            self._unplace(pod.uid, state.node_name)
        self._place(pod, pod.node_name)
        self._pods[pod.uid] = _PodState(pod, pod.node_name, assumed=False)
        if self.pod_groups is not None:
            self.pod_groups.add_or_update(pod)

    def remove_pod(self, uid: str) -> None:
        state = self._pods.pop(uid, None)
        if state is not None:
            self._unplace(uid, state.node_name)
            if self.pod_groups is not None:
                self.pod_groups.delete(state.pod.pod)

    def has_pod(self, uid: str) -> bool:
        return uid in self._pods

    def pod_count(self) -> int:
        return len(self._pods)

    def assumed_count(self) -> int:
        return sum(1 for s in self._pods.values() if s.assumed)

    def node_names(self) -> list[str]:
        """Nodes the informer reported (not placeholders holding early pods)."""
        return [name for name, info in self._nodes.items() if info.node is not None]

    def placements(self) -> list[tuple[str, str, bool]]:
        """(uid, node name, assumed) for every pod the cache places."""
        return [(uid, s.node_name, s.assumed) for uid, s in self._pods.items()]

    # --- snapshot ---------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date with the nodes touched since the last call."""
        if snapshot.generation == self._generation:
            return
        if snapshot.generation == 0:
            self._dirty = set(self._nodes)  # a fresh snapshot: everything is new to it
        structure_changed = False
        changed: list[NodeInfo] = []
        for name in self._dirty:
            info = self._nodes.get(name)
            present = name in snapshot.by_name
            if info is None or info.node is None:
                if present:
                    del snapshot.by_name[name]
                    structure_changed = True
                continue
            copy = info.clone()
            if not present:
                structure_changed = True
                snapshot.by_name[name] = copy
            else:
                changed.append(copy)
        self._dirty.clear()
        if structure_changed:
            for copy in changed:
                snapshot.by_name[copy.name] = copy
            snapshot.rebuild_order(self._tree.ordered())
        else:
            for copy in changed:
                snapshot.replace(copy)
        snapshot.generation = self._generation
