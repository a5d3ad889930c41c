"""Percentiles, throughput samples and the spread of repeated runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

SAMPLE_SECONDS = 1.0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); q in [0, 100]."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def throughput_samples(start: float, bound_times: Sequence[float]) -> list[float]:
    """Pods bound per second, sampled on 1 s ticks from `start`, the way
    scheduler_perf's throughputCollector samples its informer.

    Ticks before the first bound pod are ignored and the first tick that sees one
    only starts the clock (its partial interval is dropped); a tick with nothing new
    is folded into the next one that has something, and that interval's rate is
    recorded once per tick it spans. The partial interval after the last tick is
    not sampled (upstream stops the collector when the last pod is scheduled).
    """
    if not bound_times:
        return []
    ordered = sorted(bound_times)
    samples: list[float] = []
    seen = 0  # bound pods at or before the current tick
    last_count = 0
    last_tick = start
    started = False
    skipped = 0
    tick = start
    while tick + SAMPLE_SECONDS <= ordered[-1]:
        tick += SAMPLE_SECONDS
        while seen < len(ordered) and ordered[seen] <= tick:
            seen += 1
        if seen == 0:
            continue
        if not started:
            started, last_count, last_tick = True, seen, tick
            continue
        if seen == last_count:
            skipped += 1
            continue
        rate = (seen - last_count) / (tick - last_tick)
        samples.extend([rate] * (skipped + 1))
        last_count, last_tick, skipped = seen, tick, 0
    return samples


def sampled_share(samples: Sequence[float], bound: int, active_seconds: float) -> float:
    """How much of a run its 1 s samples saw: the lesser of the share of its pods and
    the share of its time (ready to last bind) they cover. Low for short runs and for
    runs whose binds come in bursts the sampling drops, or only at the end (preemption
    binds nothing until the victims are gone): then the samples say little."""
    if not bound or not active_seconds > 0:
        return math.nan
    pods = sum(samples) * SAMPLE_SECONDS / bound
    return min(pods, len(samples) * SAMPLE_SECONDS / active_seconds)


def per_second(start: float, moments: Sequence[float]) -> list[int]:
    """How many of `moments` fall in each 1 s window from `start`."""
    if not moments:
        return []
    counts = [0] * (int((max(moments) - start) / SAMPLE_SECONDS) + 1)
    for moment in moments:
        counts[max(0, int((moment - start) / SAMPLE_SECONDS))] += 1
    return counts


def drain_rate(bound_times: Sequence[float]) -> float:
    """Pods per second between the first and the last binding: free of start-up
    time and of sampling edges, so it still means something for runs too short for
    many 1 s samples."""
    if len(bound_times) < 2:
        return math.nan
    span = max(bound_times) - min(bound_times)
    return (len(bound_times) - 1) / span if span > 0 else math.nan


@dataclass(frozen=True, slots=True)
class Spread:
    median: float
    low: float
    high: float
    values: tuple[float, ...]


def spread(values: Sequence[float]) -> Spread:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return Spread(math.nan, math.nan, math.nan, tuple(values))
    return Spread(statistics.median(finite), min(finite), max(finite), tuple(values))
