"""NodeResourcesBalancedAllocation: favour nodes whose resource use the pod evens out.

For each node the plugin measures how unevenly the configured resources are
used (the standard deviation of requested/allocatable fractions, capped at 1)
with and without the pod, and scores the change as upstream v1.36 does:
50 + (50 + balance_with - balance_without) / 2, so 75 means "no change".
It uses the pods' real requests, not the non-zero defaults Fit scores with,
and skips pods that request nothing (they would all pile onto one node).

`score_vector` returns scores for every snapshot row when at most two
column-backed resources are configured, else None (use the per-node form).
A DRA-backed extended resource named in `resources` is counted on devices where the
node does not advertise it, as NodeResourcesFit scores it (dra_scoring.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Self

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, PreScorePlugin, RowsScorePlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.args import invalid
from kpysched.plugins.node_resources.dra_scoring import (
    DraCounts,
    DraExtendedResources,
    dra_extended_resources,
)
from kpysched.plugins.node_resources.resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    balanced,
    balanced_vector,
    default_resource_specs,
)

NAME = "NodeResourcesBalancedAllocation"

_PRE_SCORE_KEY = "PreScore" + NAME

IntArray = npt.NDArray[np.int64]


class NodeResourcesBalancedAllocationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    resources: list[ResourceSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _default_and_validate(self) -> Self:
        self.resources = default_resource_specs(self.resources)
        errors: list[str] = []
        seen: set[str] = set()
        for index, spec in enumerate(self.resources):
            if spec.name in seen:
                errors.append(f"resources[{index}].name: Duplicate value: {spec.name!r}")
            seen.add(spec.name)
            if spec.weight != 1:
                errors.append(f"resources[{index}].weight: Invalid value: {spec.weight}: "
                              "must be 1")
        if errors:
            raise invalid(errors)
        return self


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    devices: DraCounts | None = None


class NodeResourcesBalancedAllocation(PreScorePlugin, RowsScorePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs,
                 dra: DraExtendedResources | None = None) -> None:
        names = tuple(spec.name for spec in args.resources)
        self._scorer = ResourceAllocationScorer(names, True, balanced, balanced_vector,
                                                max_vector_resources=2)
        self._dra = dra

    def _devices(self) -> DraCounts | None:
        return self._dra.prepare(self._scorer.names) if self._dra is not None else None

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        requests = self._scorer.pod_requests(pod)
        if not any(requests):
            return Status.skip()
        state.write(_PRE_SCORE_KEY, _PreScoreState(requests, self._devices()))
        return SUCCESS

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> tuple[int, ...]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        return cached.pod_requests if cached is not None else self._scorer.pod_requests(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if cached is None:
            requests = self._scorer.pod_requests(pod)
            if not any(requests):
                return 0, SUCCESS
            cached = _PreScoreState(requests, self._devices())
        return self._scorer.score(node, cached.pod_requests, cached.devices), SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> IntArray | None:
        requests = self._pod_requests(state, pod)
        if not any(requests):
            return np.zeros(len(snapshot.node_infos), dtype=np.int64)
        return self._scorer.score_vector(snapshot, requests)

    def score_rows(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   rows: IntArray) -> IntArray | None:
        requests = self._pod_requests(state, pod)
        if not any(requests):
            return np.zeros(len(rows), dtype=np.int64)
        return self._scorer.score_vector(snapshot, requests, rows)


def new(args: NodeResourcesBalancedAllocationArgs | None,
        handle: Handle) -> NodeResourcesBalancedAllocation:
    args = args if args is not None else NodeResourcesBalancedAllocationArgs()
    return NodeResourcesBalancedAllocation(
        args, dra_extended_resources(handle, [spec.name for spec in args.resources]))


SPEC = PluginSpec(NAME, NodeResourcesBalancedAllocation, new, NodeResourcesBalancedAllocationArgs)
