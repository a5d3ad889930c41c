"""Arithmetic and normalisation shared by plugins, with Go's integer semantics.

Upstream scores are int64 arithmetic: division truncates toward zero, and the
few float results are converted with math.Round (half away from zero) or a
plain int64 conversion (truncation). Python's `//` floors and `round` rounds
half to even, so plugins use these helpers wherever the sign or a half can
make a difference.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kpysched.framework.interfaces import MAX_NODE_SCORE, NodeScore


def go_div(numerator: int, denominator: int) -> int:
    """Integer division truncating toward zero, as Go's `/` on int64."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def round_ratio(numerator: int, denominator: int) -> int:
    """math.Round(float64(n) / float64(d)) for n >= 0, d > 0, computed exactly."""
    return (2 * numerator + denominator) // (2 * denominator)


def default_normalize_score(
    scores: list[NodeScore], *, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> None:
    """Scale scores from [0, max] to [0, max_priority] in place (upstream's helper).

    With `reverse`, a node with the highest raw score gets 0 and one with none
    gets max_priority; when every raw score is 0, reversed scores all become
    max_priority and plain ones stay 0.
    """
    highest = max((entry.score for entry in scores), default=0)
    if highest == 0:
        if reverse:
            for entry in scores:
                entry.score = max_priority
        return
    for entry in scores:
        scaled = go_div(max_priority * entry.score, highest)
        entry.score = max_priority - scaled if reverse else scaled


def default_normalize_vector(scores: npt.NDArray[np.int64], *, reverse: bool,
                             max_priority: int = MAX_NODE_SCORE) -> npt.NDArray[np.int64]:
    """default_normalize_score over a vector of non-negative raw scores."""
    highest = int(scores.max()) if scores.size else 0
    if highest == 0:
        return np.full_like(scores, max_priority) if reverse else scores.copy()
    scaled: npt.NDArray[np.int64] = (max_priority * scores) // highest
    return max_priority - scaled if reverse else scaled
