"""NodeResourcesFit: does the node have room for the pod's requests, and how full is it.

Filter compares the pod's requests (PreFilter computes them once) with each
node's allocatable minus what its pods request, and counts pods against the
node's pod capacity. A request larger than the node's whole allocatable makes
the rejection UnschedulableAndUnresolvable, since preemption cannot help there
(as upstream v1.36 does). Score applies the configured strategy: LeastAllocated
(default), MostAllocated or RequestedToCapacityRatio.

Queueing hints: a deleted pod helps only if it was on a node (or nominated to
one); a pod scaled down only if it is the rejected pod itself or a scheduled pod
that now requests less of something the rejected pod asks for; a node only if the
pod fits its whole allocatable and, when updated, the node now offers more of
something the pod requests (or more pods).

DRA-backed extended resources (DRAExtendedResource, on by default in v1.36): an
extended resource the pod requests that some DeviceClass maps (its
extendedResourceName, or deviceclass.resource.kubernetes.io/<class>) is not checked
on a node that does not advertise it; DynamicResources allocates it there as devices.
The node hint counts it as available the same way, and a DeviceClass that starts
mapping a requested name requeues the pod. Named in scoringStrategy.resources, such a
resource is scored on a node without it in allocatable by the ResourceSlice devices
the class selects there and how many claims hold (dra_scoring.py).

With InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha, off) a bound pod
checked against its own node (a deferred resize) needs room there only for what it
asks beyond what the cache already counts for it; the hints then listen to its own
node only, and to pods there growing (fit_hints.py).

Vectorised forms: `filter_vector` and `score_vector` return a value for every
node of the snapshot (row order), or None when the per-node form must be used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ClusterEventWithHint
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    PodTotalsVectorFilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    RowsScorePlugin,
    VectorReasonsPlugin,
)
from kpysched.framework.placement import PlacementScorePlugin, PodGroupAssignments, PodGroupInfo
from kpysched.framework.pod_totals import PodTotals, TotalsColumns
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.dra import DeviceClass
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import Resource
from kpysched.plugins._shared.args import UtilizationShapePoint
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE
from kpysched.plugins._shared.resource_names import (
    is_extended_resource_name,
)
from kpysched.plugins._shared.shape_score import scaled_shape
from kpysched.plugins.node_resources.dra_scoring import (
    DraCounts,
    DraExtendedResources,
    dra_extended_resources,
)
from kpysched.plugins.node_resources.fit_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ScoringStrategy,
)
from kpysched.plugins.node_resources.fit_hints import events
from kpysched.plugins.node_resources.fits_request import (
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    REASON_INSUFFICIENT_MEMORY,
    REASON_INSUFFICIENT_PREFIX,
    REASON_TOO_MANY_PODS,
    InsufficientResource,
    PodRequest,
    fits_request,
    fits_usage,
)
from kpysched.plugins.node_resources.placement_score import placement_scorer, score_placement
from kpysched.plugins.node_resources.resource_allocation import (
    ResourceAllocationScorer,
    least_allocated,
    least_allocated_vector,
    most_allocated,
    most_allocated_vector,
    requested_to_capacity_ratio,
    requested_to_capacity_ratio_vector,
)

__all__ = [
    "LEAST_ALLOCATED", "MOST_ALLOCATED", "NAME", "REASON_INSUFFICIENT_CPU",
    "REASON_INSUFFICIENT_EPHEMERAL_STORAGE", "REASON_INSUFFICIENT_MEMORY",
    "REASON_INSUFFICIENT_PREFIX", "REASON_TOO_MANY_PODS", "REQUESTED_TO_CAPACITY_RATIO", "SPEC",
    "InsufficientResource", "NodeResourcesFit", "NodeResourcesFitArgs",
    "RequestedToCapacityRatioParam", "ScoringStrategy", "UtilizationShapePoint",
    "fits_request", "new",
]

NAME = "NodeResourcesFit"

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    devices: DraCounts | None = None


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


# Per row: pods, milli-CPU, memory and ephemeral storage, allocatable or in use.
_Columns = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                 npt.NDArray[np.int64]]


def _fit_mask(request: PodRequest, allocatable: _Columns, used: _Columns) -> BoolArray:
    """fits_usage's "nothing short" for many rows at once (no scalar requests)."""
    allowed_pods, allocatable_cpu, allocatable_memory, allocatable_ephemeral = allocatable
    pod_count, used_cpu, used_memory, used_ephemeral = used
    fits: BoolArray = pod_count + 1 <= allowed_pods
    if request.milli_cpu > 0:
        fits &= request.milli_cpu <= allocatable_cpu - used_cpu
    if request.memory > 0:
        fits &= request.memory <= allocatable_memory - used_memory
    if request.ephemeral_storage > 0:
        fits &= request.ephemeral_storage <= allocatable_ephemeral - used_ephemeral
    return fits


def _verdict(insufficient: list[InsufficientResource]) -> Status:
    """Filter's status from the resources a node is short of."""
    if not insufficient:
        return SUCCESS
    code = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(item.unresolvable for item in insufficient) else Code.UNSCHEDULABLE)
    return Status(code, [item.reason for item in insufficient], NAME)


class NodeResourcesFit(PreFilterPlugin, VectorReasonsPlugin, PodTotalsVectorFilterPlugin,
                       PreScorePlugin,
                       RowsScorePlugin, PlacementScorePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: NodeResourcesFitArgs,
                 device_class_for: Callable[[str], DeviceClass | None] | None = None,
                 dra: DraExtendedResources | None = None, *,
                 deferred_resize: bool = False) -> None:
        self._ignored_resources = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        self._scorer = _build_scorer(args.scoring_strategy)
        # A pod group's placements (TopologyAwareWorkloadScheduling): MostAllocated.
        self._placement_scorer = placement_scorer(args.scoring_strategy)
        # Counts DRA-backed extended resources for Score (None: no DRA at all).
        self._dra = dra
        # Extended resource name -> the DeviceClass backing it (None: no DRA at all).
        self._device_class_for = device_class_for
        # InPlacePodVerticalScalingSchedulerPreemption: a bound pod checked against its
        # own node needs room only for its growth (see _held).
        self._deferred_resize = deferred_resize
        self._events = (events(device_class_for, deferred_resize=deferred_resize)
                        if device_class_for is not None
                        else events(deferred_resize=deferred_resize))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return self._events

    def _ignored(self, name: str) -> bool:
        if not is_extended_resource_name(name):
            return False
        return name in self._ignored_resources or name.split("/", 1)[0] in self._ignored_groups

    def _compute_request(self, pod: PodInfo) -> PodRequest:
        requests = pod.requests
        scalars = tuple((name, amount) for name, amount in requests.scalar.items()
                        if amount != 0 and not self._ignored(name))
        resolve = self._device_class_for
        dra_backed = (frozenset(name for name, _ in scalars if resolve(name) is not None)
                      if resolve is not None and scalars else frozenset[str]())
        return PodRequest(requests.milli_cpu, requests.memory, requests.ephemeral_storage,
                          scalars, dra_backed)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(_PRE_FILTER_KEY, self._compute_request(pod))
        return None, SUCCESS

    def _held(self, pod: PodInfo, node: NodeInfo) -> Resource | None:
        """What `node` already counts for `pod` itself: with the gate on, a bound pod
        (a deferred resize) checked against its own node, where the cache holds it
        (upstream's adjustDeltasToAccomodateCacheDiscrepancy). None otherwise."""
        if not self._deferred_resize or not pod.node_name or pod.node_name != node.name:
            return None
        cached = node.pods.get(pod.uid)
        return cached.requests if cached is not None else None

    def _per_node_only(self, pod: PodInfo) -> bool:
        """The columns know nothing of a bound pod's own share of its node."""
        return self._deferred_resize and bool(pod.node_name)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        request: PodRequest | None = state.get(_PRE_FILTER_KEY)
        if request is None:
            return Status.error(f"error reading {_PRE_FILTER_KEY!r} from cycleState: not found",
                                plugin=NAME)
        return _verdict(fits_request(request, node, self._held(pod, node)))

    def filter_with_pod_totals(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                               totals: PodTotals) -> Status:
        """`filter` on the node with its pods adding up to `totals`."""
        request: PodRequest | None = state.get(_PRE_FILTER_KEY)
        if request is None:
            return Status.error(f"error reading {_PRE_FILTER_KEY!r} from cycleState: not found",
                                plugin=NAME)
        return _verdict(fits_usage(request, node.allocatable, totals.requested,
                                   totals.pod_count, self._held(pod, node)))

    def filter_with_pod_totals_vector(self, state: CycleState, pod: PodInfo,
                                      snapshot: Snapshot, totals: TotalsColumns
                                      ) -> BoolArray | None:
        """filter_with_pod_totals's pass or fail for many rows at once; None when the pod
        requests scalar resources, which have no columns."""
        request: PodRequest | None = state.get(_PRE_FILTER_KEY)
        if request is None or request.scalars or self._per_node_only(pod):
            return None
        columns, rows = snapshot.columns, totals.rows
        return _fit_mask(request, (columns.allowed_pods[rows], columns.allocatable_cpu[rows],
                                   columns.allocatable_memory[rows],
                                   columns.allocatable_ephemeral[rows]),
                         (totals.pod_count, totals.milli_cpu, totals.memory,
                          totals.ephemeral_storage))

    def filter_vector(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> BoolArray | None:
        """Which snapshot rows pass Filter; None when the pod requests scalar resources
        (or is bound: a deferred resize)."""
        request: PodRequest | None = state.get(_PRE_FILTER_KEY)
        if request is None or request.scalars or self._per_node_only(pod):
            return None
        columns = snapshot.columns
        return _fit_mask(request, (columns.allowed_pods, columns.allocatable_cpu,
                                   columns.allocatable_memory, columns.allocatable_ephemeral),
                         (columns.pod_count, columns.requested_cpu, columns.requested_memory,
                          columns.requested_ephemeral))

    def filter_statuses(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                        rows: npt.NDArray[np.int64]) -> list[Status] | None:
        """`filter`'s status for each of `rows` from the resource columns (rows short of
        the same resources share their reasons). None when the pod requests scalar
        resources, which have no columns, or is bound (a deferred resize)."""
        request: PodRequest | None = state.get(_PRE_FILTER_KEY)
        if request is None or request.scalars or self._per_node_only(pod):
            return None
        columns = snapshot.columns
        # Per resource, in upstream's order: its reason, the rows short of it, and the
        # rows short of it even when empty (unresolvable: preemption cannot help).
        checks = [(REASON_TOO_MANY_PODS,
                   columns.pod_count[rows] + 1 > columns.allowed_pods[rows],
                   np.zeros(len(rows), dtype=np.bool_))]
        for want, reason, allocatable, requested in (
                (request.milli_cpu, REASON_INSUFFICIENT_CPU, columns.allocatable_cpu,
                 columns.requested_cpu),
                (request.memory, REASON_INSUFFICIENT_MEMORY, columns.allocatable_memory,
                 columns.requested_memory),
                (request.ephemeral_storage, REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                 columns.allocatable_ephemeral, columns.requested_ephemeral)):
            if want > 0:
                checks.append((reason, want > allocatable[rows] - requested[rows],
                               want > allocatable[rows]))
        # Rows short of the same resources, equally fixable, share one Status (statuses
        # are never changed once made): bit i of a row's key is "short of checks[i]",
        # the bit above them all "unfixable".
        keys = np.zeros(len(rows), dtype=np.int64)
        unfixable = np.zeros(len(rows), dtype=np.bool_)
        for bit, (_, short, short_when_empty) in enumerate(checks):
            keys |= short.astype(np.int64) << bit
            unfixable |= short & short_when_empty
        keys |= unfixable.astype(np.int64) << len(checks)
        unique, status_of = np.unique(keys, return_inverse=True)
        made = [self._status_for(int(key), checks) for key in unique.tolist()]
        return list(map(made.__getitem__, status_of.tolist()))

    @staticmethod
    def _status_for(key: int, checks: list[tuple[str, npt.NDArray[np.bool_],
                                                 npt.NDArray[np.bool_]]]) -> Status:
        reasons = [reason for bit, (reason, _, _) in enumerate(checks) if key >> bit & 1]
        if not reasons:
            return SUCCESS
        unfixable = key >> len(checks) & 1
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unfixable else Code.UNSCHEDULABLE,
                      reasons, NAME)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        state.write(_PRE_SCORE_KEY, self._pre_score_state(pod))
        return SUCCESS

    def _pre_score_state(self, pod: PodInfo) -> _PreScoreState:
        devices = self._dra.prepare(self._scorer.names) if self._dra is not None else None
        return _PreScoreState(self._scorer.pod_requests(pod), devices)

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> tuple[int, ...]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        return cached.pod_requests if cached is not None else self._scorer.pod_requests(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if cached is None:
            cached = self._pre_score_state(pod)
        return self._scorer.score(node, cached.pod_requests, cached.devices), SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> IntArray | None:
        """Scores for every snapshot row; None when a scored resource has no column."""
        return self._scorer.score_vector(snapshot, self._pod_requests(state, pod))

    def score_rows(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   rows: IntArray) -> IntArray | None:
        return self._scorer.score_vector(snapshot, self._pod_requests(state, pod), rows)

    def score_placement(self, group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status]:
        return score_placement(self._placement_scorer, assignments), SUCCESS


def new(args: NodeResourcesFitArgs | None, handle: Handle) -> NodeResourcesFit:
    args = args if args is not None else NodeResourcesFitArgs()
    names = [spec.name for spec in args.scoring_strategy.resources]
    return NodeResourcesFit(args, handle.resources.device_class_for_extended_resource,
                            dra_extended_resources(handle, names),
                            deferred_resize=handle.features.enabled(
                                IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, NodeResourcesFit, new, NodeResourcesFitArgs)
