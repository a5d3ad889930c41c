"""The piecewise-linear utilization → score function (upstream's helper.FunctionShape
and BuildBrokenLinearFunction) that NodeResourcesFit's RequestedToCapacityRatio and
VolumeBinding's storage capacity scoring both configure with a shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kpysched.framework.interfaces import MAX_NODE_SCORE
from kpysched.plugins._shared.go_math import go_div

MAX_UTILIZATION = 100
# Scores in a configured shape run 0..10 and are scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


def broken_linear(shape: Sequence[ShapePoint], utilization: int) -> int:
    """Piecewise-linear function through the shape points, flat beyond both ends."""
    previous: ShapePoint | None = None
    for point in shape:
        if utilization <= point.utilization:
            if previous is None:
                return point.score
            return previous.score + go_div(
                (point.score - previous.score) * (utilization - previous.utilization),
                point.utilization - previous.utilization,
            )
        previous = point
    return shape[-1].score


def scaled_shape(shape: Sequence[tuple[int, int]]) -> tuple[ShapePoint, ...]:
    """(utilization, score 0..10) points with scores scaled to 0..MAX_NODE_SCORE."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple(ShapePoint(utilization, score * factor) for utilization, score in shape)
