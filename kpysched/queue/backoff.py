"""Per-pod exponential backoff, as upstream's calculateBackoffDuration."""

from __future__ import annotations


def backoff_seconds(attempts: int, initial: float, maximum: float) -> float:
    """initial * 2^(attempts-1), capped at maximum; attempts counts failed tries (>= 1)."""
    if attempts <= 1:
        return min(initial, maximum)
    duration = initial
    for _ in range(attempts - 1):
        duration *= 2
        if duration > maximum:
            return maximum
    return duration
