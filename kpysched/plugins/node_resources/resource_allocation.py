"""The resource-allocation scorer shared by NodeResourcesFit and BalancedAllocation.

Mirrors upstream's resourceAllocationScorer: for each configured resource it
pairs the node's allocatable with what is already allocated there and what it
would be with the pod, then hands the three lists to a strategy. Fit scores on
non-zero requests (containers without cpu/memory requests count 100m/200Mi);
BalancedAllocation on real requests. A scalar resource the pod does not
request, or one the node does not offer, is left out, unless DRA devices back it
on the node (DeviceTotals: upstream's DRAExtendedResource scoring).

Each strategy also has a vectorised form over Snapshot.columns, used when every
resource in play has a column; the per-node form is the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.interfaces import MAX_NODE_SCORE
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Resource,
    is_scalar_resource,
)
from kpysched.plugins._shared.go_math import go_div, round_ratio
from kpysched.plugins._shared.shape_score import MAX_UTILIZATION, ShapePoint, broken_linear
from kpysched.plugins.node_resources.row_scores import RowScores

IntArray = npt.NDArray[np.int64]
Scorer = Callable[[Sequence[int], Sequence[int], Sequence[int]], int]
VectorScorer = Callable[[IntArray, IntArray, IntArray], IntArray]

class ResourceSpec(BaseModel):
    """A resource to score and its weight (v1 ResourceSpec); weight 0 means the default 1."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    name: str
    weight: int = 0


def default_resource_specs(specs: Sequence[ResourceSpec]) -> list[ResourceSpec]:
    """Upstream's v1 defaulting: no resources means cpu and memory; weight 0 means 1."""
    if not specs:
        return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]
    return [spec if spec.weight != 0 else ResourceSpec(name=spec.name, weight=1)
            for spec in specs]


def _amount(resource: Resource, name: str) -> int:
    """A resource list entry by name; names with no place in Resource (e.g. pods) are 0."""
    if name == CPU:
        return resource.milli_cpu
    if name == MEMORY:
        return resource.memory
    if name == EPHEMERAL_STORAGE:
        return resource.ephemeral_storage
    return resource.scalar.get(name, 0)


# ---- strategies (per node) -------------------------------------------------------------------


def least_allocated(weights: Sequence[int]) -> Scorer:
    def score(requested: Sequence[int], _: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for want, capacity, weight in zip(requested, allocatable, weights, strict=True):
            if capacity == 0:
                continue
            if want <= capacity:
                total += (capacity - want) * MAX_NODE_SCORE // capacity * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0
    return score


def most_allocated(weights: Sequence[int]) -> Scorer:
    def score(requested: Sequence[int], _: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for want, capacity, weight in zip(requested, allocatable, weights, strict=True):
            if capacity == 0:
                continue
            total += min(want, capacity) * MAX_NODE_SCORE // capacity * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0
    return score


def requested_to_capacity_ratio(weights: Sequence[int], shape: Sequence[ShapePoint]) -> Scorer:
    def resource_score(want: int, capacity: int) -> int:
        if capacity == 0 or want > capacity:
            return broken_linear(shape, MAX_UTILIZATION)
        return broken_linear(shape, want * MAX_UTILIZATION // capacity)

    def score(requested: Sequence[int], _: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for want, capacity, weight in zip(requested, allocatable, weights, strict=True):
            if capacity == 0:
                continue
            value = resource_score(want, capacity)
            # Upstream counts a resource's weight only when it scores above zero.
            if value > 0:
                total += value * weight
                weight_sum += weight
        return round_ratio(total, weight_sum) if weight_sum else 0
    return score


def _balance(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions = [min(float(want) / float(capacity), 1.0)
                 for want, capacity in zip(requested, allocatable, strict=True) if capacity != 0]
    count = len(fractions)
    if count == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif count > 2:
        # Plain left-to-right sums as upstream (Python 3.12's sum() compensates).
        total = 0.0
        for fraction in fractions:
            total += fraction
        mean = total / count
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / count)
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balanced(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """Rewards nodes whose balance the pod improves: 50 (worse) .. 75 (same) .. 100 (better)."""
    with_pod = _balance(requested, allocatable)
    without_pod = _balance(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


# ---- strategies (vectorised; rows are resources, columns nodes) ------------------------------


def _trunc_div(numerator: IntArray, denominator: int) -> IntArray:
    result: IntArray = np.sign(numerator) * (np.abs(numerator) // denominator)
    return result


def least_allocated_vector(weights: Sequence[int]) -> VectorScorer:
    def score(requested: IntArray, _: IntArray, allocatable: IntArray) -> IntArray:
        total = np.zeros(requested.shape[1], dtype=np.int64)
        weight_sum = np.zeros_like(total)
        for row, weight in enumerate(weights):
            capacity, want = allocatable[row], requested[row]
            offered = capacity != 0
            free = (capacity - want) * MAX_NODE_SCORE // np.where(offered, capacity, 1)
            resource_score = np.where(want > capacity, 0, free)
            total += np.where(offered, resource_score * weight, 0)
            weight_sum += np.where(offered, weight, 0)
        result: IntArray = np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)
        return result
    return score


def most_allocated_vector(weights: Sequence[int]) -> VectorScorer:
    def score(requested: IntArray, _: IntArray, allocatable: IntArray) -> IntArray:
        total = np.zeros(requested.shape[1], dtype=np.int64)
        weight_sum = np.zeros_like(total)
        for row, weight in enumerate(weights):
            capacity = allocatable[row]
            offered = capacity != 0
            used = np.minimum(requested[row], capacity) * MAX_NODE_SCORE
            resource_score = used // np.where(offered, capacity, 1)
            total += np.where(offered, resource_score * weight, 0)
            weight_sum += np.where(offered, weight, 0)
        result: IntArray = np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)
        return result
    return score


def _broken_linear_vector(shape: Sequence[ShapePoint], utilization: IntArray) -> IntArray:
    result = np.full(utilization.shape, shape[-1].score, dtype=np.int64)
    # Walk segments from the last so that the first point with p <= utilization wins.
    for index in range(len(shape) - 1, -1, -1):
        point = shape[index]
        if index == 0:
            value = np.full(utilization.shape, point.score, dtype=np.int64)
        else:
            previous = shape[index - 1]
            value = previous.score + _trunc_div(
                (point.score - previous.score) * (utilization - previous.utilization),
                point.utilization - previous.utilization,
            )
        result = np.where(utilization <= point.utilization, value, result)
    return result


def requested_to_capacity_ratio_vector(
    weights: Sequence[int], shape: Sequence[ShapePoint]
) -> VectorScorer:
    def score(requested: IntArray, _: IntArray, allocatable: IntArray) -> IntArray:
        total = np.zeros(requested.shape[1], dtype=np.int64)
        weight_sum = np.zeros_like(total)
        for row, weight in enumerate(weights):
            capacity, want = allocatable[row], requested[row]
            offered = capacity != 0
            ratio = want * MAX_UTILIZATION // np.where(offered, capacity, 1)
            utilization = np.where(offered & (want <= capacity), ratio, MAX_UTILIZATION)
            resource_score = _broken_linear_vector(shape, utilization)
            counted = offered & (resource_score > 0)
            total += np.where(counted, resource_score * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        safe = np.maximum(weight_sum, 1)
        result: IntArray = np.where(weight_sum > 0, (2 * total + safe) // (2 * safe), 0)
        return result
    return score


def _balance_vector(requested: IntArray, allocatable: IntArray) -> IntArray:
    offered = allocatable != 0
    fractions = np.minimum(
        requested.astype(np.float64) / np.where(offered, allocatable, 1).astype(np.float64), 1.0)
    if requested.shape[0] == 2:
        both = offered[0] & offered[1]
        std = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
    else:
        std = np.zeros(requested.shape[1], dtype=np.float64)
    result: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return result


def balanced_vector(requested: IntArray, allocated: IntArray, allocatable: IntArray) -> IntArray:
    half = MAX_NODE_SCORE // 2
    difference = _balance_vector(requested, allocatable) - _balance_vector(allocated, allocatable)
    result: IntArray = half + (half + difference) // 2
    return result


# ---- the scorer ------------------------------------------------------------------------------


class DeviceTotals(Protocol):
    """Devices backing extended resources (node_resources.dra_scoring.DraCounts)."""

    def totals(self, node: api.Node, resource_name: str) -> tuple[int, int]:
        """(capacity, allocated) on the node; (0, 0) when nothing backs the name."""
        ...



@dataclass(frozen=True, slots=True)
class ResourceAllocationScorer:
    names: tuple[str, ...]
    use_requested: bool
    scorer: Scorer
    vector_scorer: VectorScorer | None = None
    # The vectorised balance formula is exact only for up to two resources.
    max_vector_resources: int | None = None
    # Row scores kept between cycles: a score here depends on the row's columns and
    # the pod's requests alone.
    kept: RowScores = field(default_factory=RowScores, compare=False, repr=False)

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        source = pod.requests if self.use_requested else pod.non_zero_requests
        return tuple(_amount(source, name) for name in self.names)

    def score(self, node: NodeInfo, pod_requests: Sequence[int],
              devices: DeviceTotals | None = None) -> int:
        """`devices`: DRA-backed extended resources the node does not advertise are
        counted on devices (upstream's DRAExtendedResource path)."""
        node_allocatable = node.allocatable
        node_used = node.requested if self.use_requested else node.non_zero_requested
        requested: list[int] = []
        allocated: list[int] = []
        allocatable: list[int] = []
        for name, want in zip(self.names, pod_requests, strict=True):
            if name == CPU:
                capacity, used = node_allocatable.milli_cpu, node_used.milli_cpu
            elif name == MEMORY:
                capacity, used = node_allocatable.memory, node_used.memory
            elif name == EPHEMERAL_STORAGE:
                capacity = node_allocatable.ephemeral_storage
                used = node.requested.ephemeral_storage
            elif want == 0 and is_scalar_resource(name):
                capacity = used = 0
            else:
                # Names with no place on the node (e.g. pods) find no capacity and drop out.
                capacity = node_allocatable.scalar.get(name, 0)
                used = node.requested.scalar.get(name, 0)
                if capacity == 0 and devices is not None and node.node is not None:
                    capacity, used = devices.totals(node.node, name)
            if capacity == 0:
                requested.append(0)
                allocated.append(0)
                allocatable.append(0)
            else:
                requested.append(used + want)
                allocated.append(used)
                allocatable.append(capacity)
        return self.scorer(requested, allocated, allocatable)

    def score_vector(self, snapshot: Snapshot, pod_requests: Sequence[int],
                     rows: IntArray | None = None) -> IntArray | None:
        """Scores for all snapshot rows, or for `rows` in that order; None when a
        resource has no column."""
        if self.vector_scorer is None:
            return None
        if self.max_vector_resources is not None and len(self.names) > self.max_vector_resources:
            return None
        if any(is_scalar_resource(name) and want != 0
               for name, want in zip(self.names, pod_requests, strict=True)):
            return None  # no column for it
        if rows is not None:
            return self.kept.scores(tuple(pod_requests), snapshot.columns.version, rows,
                                    lambda changed: self._columns_score(snapshot, pod_requests,
                                                                        changed))
        return self._columns_score(snapshot, pod_requests, None)

    def _columns_score(self, snapshot: Snapshot, pod_requests: Sequence[int],
                       rows: IntArray | None) -> IntArray:
        """score_vector's arithmetic, over every row or over `rows`."""
        assert self.vector_scorer is not None
        columns = snapshot.columns
        size = len(snapshot.node_infos) if rows is None else len(rows)
        zeros = np.zeros(size, dtype=np.int64)
        rows_allocatable: list[IntArray] = []
        rows_allocated: list[IntArray] = []
        for name in self.names:
            if name == CPU:
                capacity = columns.allocatable_cpu
                used = columns.requested_cpu if self.use_requested else columns.non_zero_cpu
            elif name == MEMORY:
                capacity = columns.allocatable_memory
                used = columns.requested_memory if self.use_requested else columns.non_zero_memory
            elif name == EPHEMERAL_STORAGE:
                capacity, used = columns.allocatable_ephemeral, columns.requested_ephemeral
            else:
                capacity, used = zeros, zeros
            if rows is not None and capacity is not zeros:
                capacity, used = capacity[rows], used[rows]
            rows_allocatable.append(capacity)
            rows_allocated.append(np.where(capacity != 0, used, 0))
        allocatable = np.array(rows_allocatable, dtype=np.int64).reshape(len(self.names), size)
        allocated = np.array(rows_allocated, dtype=np.int64).reshape(len(self.names), size)
        wants = np.array(pod_requests, dtype=np.int64).reshape(-1, 1)
        requested = np.where(allocatable != 0, allocated + wants, 0)
        return self.vector_scorer(requested, allocated, allocatable)
