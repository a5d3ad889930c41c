"""NodeResourcesFit's PlacementScore (v1.37, TopologyAwareWorkloadScheduling): how full
a placement would be with the group's pods in it, scored MostAllocated over the
placement's nodes taken together, whatever strategy the plugin scores nodes with.

Upstream (resourceAllocationScorer.scorePlacement) sums, per configured resource, the
allocatable and the allocated (non-zero requests for cpu and memory) of every node in
the placement, adds the non-zero requests of the members this cycle placed there, and
hands the three lists to the MostAllocated formula with the configured weights. A
scalar resource nobody asks for yet is left out for that node, as in node scoring.
The nodes are read as the snapshot holds them, without this cycle's members.
"""

from __future__ import annotations

from collections.abc import Sequence

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.placement import PodGroupAssignments
from kpysched.objects.resource_vectors import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from kpysched.plugins.node_resources.fit_args import ScoringStrategy
from kpysched.plugins.node_resources.resource_allocation import (
    ResourceAllocationScorer,
    most_allocated,
)


def placement_scorer(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    """MostAllocated over the strategy's resources and weights (non-zero requests)."""
    names = tuple(spec.name for spec in strategy.resources)
    weights = tuple(spec.weight for spec in strategy.resources)
    return ResourceAllocationScorer(names, False, most_allocated(weights))


def _capacity_and_used(node: NodeInfo, name: str) -> tuple[int, int]:
    if name == CPU:
        return node.allocatable.milli_cpu, node.non_zero_requested.milli_cpu
    if name == MEMORY:
        return node.allocatable.memory, node.non_zero_requested.memory
    if name == EPHEMERAL_STORAGE:
        return node.allocatable.ephemeral_storage, node.requested.ephemeral_storage
    return node.allocatable.scalar.get(name, 0), node.requested.scalar.get(name, 0)


def score_placement(scorer: ResourceAllocationScorer,
                    assignments: PodGroupAssignments) -> int:
    names: Sequence[str] = scorer.names
    requested = [0] * len(names)
    for proposed in assignments.proposed:
        for index, want in enumerate(scorer.pod_requests(proposed.pod)):
            requested[index] += want
    allocated = [0] * len(names)
    allocatable = [0] * len(names)
    for node in assignments.placement.nodes:
        for index, name in enumerate(names):
            if requested[index] == 0 and is_scalar_resource(name):
                continue
            capacity, used = _capacity_and_used(node, name)
            if capacity == 0:
                continue
            allocatable[index] += capacity
            allocated[index] += used
            requested[index] += used
    return scorer.scorer(requested, allocated, allocatable)
