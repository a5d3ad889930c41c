"""NodeResourcesFit: does the node have room for the pod's requests, and how full is it.

Filter compares the pod's requests (PreFilter computes them once) with each
node's allocatable minus what its pods request, and counts pods against the
node's pod capacity. A request larger than the node's whole allocatable makes
the rejection UnschedulableAndUnresolvable, since preemption cannot help there
(as upstream v1.36 does). Score applies the configured strategy: LeastAllocated
(default), MostAllocated or RequestedToCapacityRatio.

Not carried over: DRA-backed extended resources (upstream lets the
DynamicResources plugin check an extended resource that a DeviceClass maps
when the node does not offer it), since kpysched has no DRA.

Vectorised forms: `filter_vector` and `score_vector` return a value for every
node of the snapshot (row order), or None when the per-node form must be used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.objects.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from kpysched.plugins._args import invalid, qualified_name_errors
from kpysched.plugins._resource_allocation import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ResourceAllocationScorer,
    ResourceSpec,
    default_resource_specs,
    least_allocated,
    least_allocated_vector,
    most_allocated,
    most_allocated_vector,
    requested_to_capacity_ratio,
    requested_to_capacity_ratio_vector,
    scaled_shape,
)

NAME = "NodeResourcesFit"

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"
REASON_INSUFFICIENT_PREFIX = "Insufficient "

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class UtilizationShapePoint(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    shape: list[UtilizationShapePoint] = Field(default_factory=list)


class ScoringStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, alias="requestedToCapacityRatio")


def _shape_errors(shape: Sequence[UtilizationShapePoint], path: str) -> list[str]:
    if not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errors: list[str] = []
    for index in range(1, len(shape)):
        if shape[index - 1].utilization >= shape[index].utilization:
            errors.append(f"{path}[{index}].utilization: Invalid value: "
                          f"{shape[index].utilization}: values must be sorted in increasing order")
            break
    for index, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(f"{path}[{index}].utilization: Invalid value: {point.utilization}: "
                          f"not in valid range [0, {MAX_UTILIZATION}]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(f"{path}[{index}].score: Invalid value: {point.score}: "
                          f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return errors


class NodeResourcesFitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    ignored_resource_groups: list[str] = Field(default_factory=list,
                                               alias="ignoredResourceGroups")
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: ScoringStrategy(type=LEAST_ALLOCATED), alias="scoringStrategy")

    @field_validator("scoring_strategy", mode="before")
    @classmethod
    def _default_strategy(cls, value: Any) -> Any:
        return ScoringStrategy(type=LEAST_ALLOCATED) if value is None else value

    @model_validator(mode="after")
    def _default_and_validate(self) -> Self:
        strategy = self.scoring_strategy
        strategy.resources = default_resource_specs(strategy.resources)
        errors: list[str] = []
        for index, name in enumerate(self.ignored_resources):
            errors += [f"ignoredResources[{index}]: {e}" for e in qualified_name_errors(name)]
        for index, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{index}]"
            if "/" in group:
                errors.append(f"{path}: Invalid value: {group!r}: "
                              "resource group name can't contain '/'")
            errors += [f"{path}: {e}" for e in qualified_name_errors(group)]
        if strategy.type not in _STRATEGIES:
            errors.append(f"scoringStrategy.type: Unsupported value: {strategy.type!r}: "
                          f"supported values: {', '.join(repr(s) for s in sorted(_STRATEGIES))}")
        for index, spec in enumerate(strategy.resources):
            if not 0 < spec.weight <= 100:
                errors.append(f"scoringStrategy.resources[{index}].weight: Invalid value: "
                              f"{spec.weight}: resource weight of {spec.name} not in valid "
                              "range (0, 100]")
        ratio = strategy.requested_to_capacity_ratio
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if ratio is None:
                errors.append("scoringStrategy.requestedToCapacityRatio: Required value: "
                              "must be specified when type is RequestedToCapacityRatio")
            else:
                errors += _shape_errors(ratio.shape,
                                        "scoringStrategy.requestedToCapacityRatio.shape")
        elif ratio is not None:
            errors.append("scoringStrategy.requestedToCapacityRatio: Forbidden: "
                          "must be nil when type is not RequestedToCapacityRatio")
        if errors:
            raise invalid(errors)
        return self


def is_extended_resource_name(name: str) -> bool:
    """Upstream's IsExtendedResourceName: domain-qualified, outside *kubernetes.io/."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # Larger than the node's whole allocatable: preemption cannot make room.
    unresolvable: bool = False


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    milli_cpu: int
    memory: int
    ephemeral_storage: int
    # Non-zero scalar requests that are checked (ignored extended resources left out).
    scalars: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]


def fits_request(request: _PreFilterState, node: NodeInfo) -> list[InsufficientResource]:
    """Every resource the node is short of for the pod, in upstream's order."""
    insufficient: list[InsufficientResource] = []
    allocatable, used = node.allocatable, node.requested
    pod_count = len(node.pods)
    if pod_count + 1 > allocatable.allowed_pod_number:
        insufficient.append(InsufficientResource(
            "pods", REASON_TOO_MANY_PODS, 1, pod_count, allocatable.allowed_pod_number))
    want = request.milli_cpu
    if want > 0 and want > allocatable.milli_cpu - used.milli_cpu:
        insufficient.append(InsufficientResource(
            CPU, REASON_INSUFFICIENT_CPU, want, used.milli_cpu, allocatable.milli_cpu,
            want > allocatable.milli_cpu))
    want = request.memory
    if want > 0 and want > allocatable.memory - used.memory:
        insufficient.append(InsufficientResource(
            MEMORY, REASON_INSUFFICIENT_MEMORY, want, used.memory, allocatable.memory,
            want > allocatable.memory))
    want = request.ephemeral_storage
    if want > 0 and want > allocatable.ephemeral_storage - used.ephemeral_storage:
        insufficient.append(InsufficientResource(
            EPHEMERAL_STORAGE, REASON_INSUFFICIENT_EPHEMERAL_STORAGE, want,
            used.ephemeral_storage, allocatable.ephemeral_storage,
            want > allocatable.ephemeral_storage))
    for name, want in request.scalars:
        capacity = allocatable.scalar.get(name, 0)
        in_use = used.scalar.get(name, 0)
        if want > capacity - in_use:
            insufficient.append(InsufficientResource(
                name, REASON_INSUFFICIENT_PREFIX + name, want, in_use, capacity, want > capacity))
    return insufficient


def _build_scorer(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    names = tuple(spec.name for spec in strategy.resources)
    weights = tuple(spec.weight for spec in strategy.resources)
    if strategy.type == MOST_ALLOCATED:
        return ResourceAllocationScorer(names, False, most_allocated(weights),
                                        most_allocated_vector(weights))
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        ratio = strategy.requested_to_capacity_ratio
        points = ratio.shape if ratio is not None else []
        shape = scaled_shape([(point.utilization, point.score) for point in points])
        return ResourceAllocationScorer(names, False, requested_to_capacity_ratio(weights, shape),
                                        requested_to_capacity_ratio_vector(weights, shape))
    return ResourceAllocationScorer(names, False, least_allocated(weights),
                                    least_allocated_vector(weights))


_EVENTS = (
    ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
)


class NodeResourcesFit(PreFilterPlugin, VectorFilterPlugin, PreScorePlugin, VectorScorePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: NodeResourcesFitArgs) -> None:
        self._ignored_resources = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        self._scorer = _build_scorer(args.scoring_strategy)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return _EVENTS

    def _ignored(self, name: str) -> bool:
        if not is_extended_resource_name(name):
            return False
        return name in self._ignored_resources or name.split("/", 1)[0] in self._ignored_groups

    def _compute_request(self, pod: PodInfo) -> _PreFilterState:
        requests = pod.requests
        scalars = tuple((name, amount) for name, amount in requests.scalar.items()
                        if amount != 0 and not self._ignored(name))
        return _PreFilterState(requests.milli_cpu, requests.memory, requests.ephemeral_storage,
                               scalars)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(_PRE_FILTER_KEY, self._compute_request(pod))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        request: _PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if request is None:
            return Status.error(f"error reading {_PRE_FILTER_KEY!r} from cycleState: not found",
                                plugin=NAME)
        insufficient = fits_request(request, node)
        if not insufficient:
            return SUCCESS
        code = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                if any(item.unresolvable for item in insufficient) else Code.UNSCHEDULABLE)
        return Status(code, [item.reason for item in insufficient], NAME)

    def filter_vector(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> BoolArray | None:
        """Which snapshot rows pass Filter; None when the pod requests scalar resources."""
        request: _PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if request is None or request.scalars:
            return None
        columns = snapshot.columns
        fits: BoolArray = columns.pod_count + 1 <= columns.allowed_pods
        if request.milli_cpu > 0:
            fits &= request.milli_cpu <= columns.allocatable_cpu - columns.requested_cpu
        if request.memory > 0:
            fits &= request.memory <= columns.allocatable_memory - columns.requested_memory
        if request.ephemeral_storage > 0:
            fits &= (request.ephemeral_storage
                     <= columns.allocatable_ephemeral - columns.requested_ephemeral)
        return fits

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        state.write(_PRE_SCORE_KEY, _PreScoreState(self._scorer.pod_requests(pod)))
        return SUCCESS

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> tuple[int, ...]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        return cached.pod_requests if cached is not None else self._scorer.pod_requests(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return self._scorer.score(node, self._pod_requests(state, pod)), SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> IntArray | None:
        """Scores for every snapshot row; None when a scored resource has no column."""
        return self._scorer.score_vector(snapshot, self._pod_requests(state, pod))


def new(args: NodeResourcesFitArgs | None, handle: Handle) -> NodeResourcesFit:
    return NodeResourcesFit(args if args is not None else NodeResourcesFitArgs())


SPEC = PluginSpec(NAME, NodeResourcesFit, new, NodeResourcesFitArgs)
