"""Storage capacity scoring (upstream's scorer.go): how full a node's chosen volumes
would be, per storage class, mapped through the configured shape and averaged.

Only used with the StorageCapacityScoring gate on (alpha and off in v1.36, beta and on
in v1.37).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kpysched.plugins._shared.go_math import round_ratio
from kpysched.plugins._shared.shape_score import MAX_UTILIZATION, ShapePoint, broken_linear


@dataclass(slots=True)
class StorageResource:
    requested: int = 0
    capacity: int = 0


VolumeCapacityScorer = Callable[[Mapping[str, StorageResource]], int]


def build_scorer(shape: Sequence[ShapePoint]) -> VolumeCapacityScorer:
    """Scores by class; every class weighs the same. `shape` scores run 0..100."""

    def class_score(resource: StorageResource) -> int:
        if resource.capacity == 0 or resource.requested > resource.capacity:
            return broken_linear(shape, MAX_UTILIZATION)
        return broken_linear(shape, resource.requested * MAX_UTILIZATION // resource.capacity)

    def score(by_class: Mapping[str, StorageResource]) -> int:
        if not by_class:
            return 0
        total = sum(class_score(resource) for resource in by_class.values())
        return round_ratio(total, len(by_class))

    return score
