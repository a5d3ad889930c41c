"""Snapshot: the consistent view one scheduling cycle decides against.

Taken from the cache at the start of each cycle; only nodes whose generation
moved since the previous snapshot are copied, so a cycle over 5000 quiet nodes
costs a dictionary walk, not 5000 clones. Resource columns are numpy arrays in
node-list order for vectorised filters and scores.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelIndex
from kpysched.cache.node_info import NodeInfo
from kpysched.objects.pod import PodInfo

IntArray = npt.NDArray[np.int64]

# Column versions, unique across every ResourceColumns (see ResourceColumns.version).
_COLUMN_VERSIONS = itertools.count(1)


@dataclass(slots=True)
class ResourceColumns:
    """Per-node resource figures, row i belonging to Snapshot.node_infos[i]."""

    allocatable_cpu: IntArray
    allocatable_memory: IntArray
    allocatable_ephemeral: IntArray
    allowed_pods: IntArray
    requested_cpu: IntArray
    requested_memory: IntArray
    requested_ephemeral: IntArray
    pod_count: IntArray
    non_zero_cpu: IntArray
    non_zero_memory: IntArray
    # Node properties cheap Filter/Score plugins can judge in bulk: most nodes have no
    # taints and are schedulable, and only the rest need the per-node form.
    taint_count: IntArray
    unschedulable: npt.NDArray[np.bool_]
    # A new number each time fill_row writes a row (the only writer of these columns):
    # a figure computed from a row's columns stays good while its version is the same
    # (plugins/_row_scores.py keeps scores so).
    version: IntArray

    @classmethod
    def empty(cls, size: int) -> ResourceColumns:
        def ints() -> IntArray:
            return np.zeros(size, dtype=np.int64)

        return cls(ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(),
                   ints(), ints(), np.zeros(size, dtype=np.bool_), ints())

    def fill_row(self, row: int, info: NodeInfo) -> None:
        self.allocatable_cpu[row] = info.allocatable.milli_cpu
        self.allocatable_memory[row] = info.allocatable.memory
        self.allocatable_ephemeral[row] = info.allocatable.ephemeral_storage
        self.allowed_pods[row] = info.allocatable.allowed_pod_number
        self.requested_cpu[row] = info.requested.milli_cpu
        self.requested_memory[row] = info.requested.memory
        self.requested_ephemeral[row] = info.requested.ephemeral_storage
        self.pod_count[row] = len(info.pods)
        self.non_zero_cpu[row] = info.non_zero_requested.milli_cpu
        self.non_zero_memory[row] = info.non_zero_requested.memory
        node = info.node
        self.taint_count[row] = len(node.spec.taints) if node is not None else 0
        self.unschedulable[row] = node.spec.unschedulable if node is not None else False
        self.version[row] = next(_COLUMN_VERSIONS)


@dataclass(slots=True)
class Snapshot:
    node_infos: list[NodeInfo] = field(default_factory=list)
    by_name: dict[str, NodeInfo] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)
    # Node names row for row; a new tuple with every new node order, never changed in
    # place (recorded decisions keep it to name their rows).
    names: tuple[str, ...] = ()
    columns: ResourceColumns = field(default_factory=lambda: ResourceColumns.empty(0))
    # Label columns, built lazily per key, for plugins that judge node labels in bulk.
    labels: LabelIndex = field(default_factory=lambda: LabelIndex(()))
    generation: int = 0
    # How many nodes hold each image (ImageLocality scales scores by this spread).
    image_nodes: dict[str, int] = field(default_factory=dict)
    # Nodes hosting pods with pod (anti-)affinity / with required anti-affinity, by name
    # (upstream's HavePodsWithAffinityList / HavePodsWithRequiredAntiAffinityList).
    have_pods_with_affinity: dict[str, NodeInfo] = field(default_factory=dict)
    have_pods_with_required_anti_affinity: dict[str, NodeInfo] = field(default_factory=dict)

    def get(self, name: str) -> NodeInfo | None:
        return self.by_name.get(name)

    def __len__(self) -> int:
        return len(self.node_infos)

    def _count_images(self, info: NodeInfo, delta: int) -> None:
        counts = self.image_nodes
        for image in info.images:
            left = counts.get(image, 0) + delta
            if left > 0:
                counts[image] = left
            else:
                counts.pop(image, None)

    def rebuild_order(self, order: list[str] | None = None) -> None:
        """Recompute list order, index and columns after nodes came or went. `order` is
        the cache's node order (zones round-robin); by name when not given."""
        if order is None:
            order = sorted(self.by_name)
        self.node_infos = [info for name in order if (info := self.by_name.get(name))]
        self.image_nodes = {}
        for info in self.node_infos:
            self._count_images(info, 1)
        self.index = {info.name: row for row, info in enumerate(self.node_infos)}
        self.names = tuple(info.name for info in self.node_infos)
        self.columns = ResourceColumns.empty(len(self.node_infos))
        for row, info in enumerate(self.node_infos):
            self.columns.fill_row(row, info)
        self.labels = LabelIndex(self.node_infos)
        self.have_pods_with_affinity = {
            info.name: info for info in self.node_infos if info.pods_with_affinity}
        self.have_pods_with_required_anti_affinity = {
            info.name: info for info in self.node_infos if info.pods_with_required_anti_affinity}

    def replace(self, info: NodeInfo) -> None:
        """Swap in a fresh copy of a known node (same row)."""
        row = self.index[info.name]
        old = self.node_infos[row]
        if old.images is not info.images:
            self._count_images(old, -1)
            self._count_images(info, 1)
        self.node_infos[row] = info
        self.by_name[info.name] = info
        self.columns.fill_row(row, info)
        if old.node is not info.node:
            self.labels.relabel(row, old.labels, info.labels)
        for having, present in ((self.have_pods_with_affinity, info.pods_with_affinity),
                                (self.have_pods_with_required_anti_affinity,
                                 info.pods_with_required_anti_affinity)):
            if present:
                having[info.name] = info
            else:
                having.pop(info.name, None)

    def assume_pod(self, pod: PodInfo, node_name: str) -> Callable[[], None]:
        """Place `pod` on a node of this snapshot only, as a pod-group scheduling cycle
        does for each member it tries, so the members after it see it there. Returns the
        undo, which must run in the reverse order of the assumptions (the cycle undoes
        them all before the snapshot is refreshed from the cache again)."""
        before = self.by_name[node_name]
        placed = before.clone()
        placed.add_pod(pod)
        self.replace(placed)
        return lambda: self.replace(before)

    def remove_pods(self, node_name: str, uids: set[str]) -> Callable[[], None]:
        """Take pods off a node of this snapshot only, as preemption victims a group's
        cycle has chosen; the undo follows assume_pod's rules."""
        before = self.by_name[node_name]
        emptied = before.clone()
        for uid in uids:
            emptied.remove_pod(uid)
        self.replace(emptied)
        return lambda: self.replace(before)
