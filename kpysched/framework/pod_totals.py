"""A node's pods summed up, as PodTotalsFilterPlugins judge a node in preemption's
dry run: the pod count and the summed requests, for one node (PodTotals) or many
snapshot rows at once (TotalsColumns).

These are part of the plugin contract (interfaces.py's PodTotalsFilterPlugin and
PodTotalsVectorFilterPlugin take them); runtime/node_simulation.py keeps them up to
date as pods are taken off and given back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import Resource

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo

IntArray = npt.NDArray[np.int64]


class PodTotals:
    """A node's pod count and summed pod requests after pods are taken off or added."""

    __slots__ = ("pod_count", "requested")

    def __init__(self, pod_count: int, requested: Resource) -> None:
        self.pod_count = pod_count
        self.requested = requested

    @classmethod
    def of(cls, node: NodeInfo) -> PodTotals:
        return cls(len(node.pods), node.requested.clone())

    def remove(self, pod: PodInfo) -> None:
        self.pod_count -= 1
        self.requested.subtract(pod.requests)

    def add(self, pod: PodInfo) -> None:
        self.pod_count += 1
        self.requested.add(pod.requests)

    def copy(self) -> PodTotals:
        return PodTotals(self.pod_count, self.requested.clone())


@dataclass(slots=True)
class TotalsColumns:
    """PodTotals of many snapshot rows at once: row i of each column is rows[i]'s."""

    rows: IntArray
    pod_count: IntArray
    milli_cpu: IntArray
    memory: IntArray
    ephemeral_storage: IntArray

    def take(self, positions: IntArray) -> TotalsColumns:
        return TotalsColumns(self.rows[positions], self.pod_count[positions],
                             self.milli_cpu[positions], self.memory[positions],
                             self.ephemeral_storage[positions])
