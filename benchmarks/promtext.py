"""Just enough of the Prometheus text format: samples, counter deltas and
histogram quantiles computed from bucket deltas the way PromQL's
histogram_quantile does (linear interpolation inside the bucket)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

Samples = dict[str, list[tuple[dict[str, str], float]]]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> Samples:
    """name -> [(labels, value)] for every sample line."""
    samples: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        name, _, labels_text, value = match.groups()
        labels = dict(_LABEL.findall(labels_text)) if labels_text else {}
        samples.setdefault(name, []).append((labels, float(value)))
    return samples


def total(samples: Samples, name: str, **match: str) -> float:
    """Sum of every sample of `name` whose labels include `match`."""
    return sum(value for labels, value in samples.get(name, [])
               if all(labels.get(k) == v for k, v in match.items()))


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for labels, value in samples.get(name, []):
        key = labels.get(label, "")
        found[key] = found.get(key, 0.0) + value
    return found


def delta_by(before: Samples, after: Samples, name: str,
             key: Callable[[dict[str, str]], str | None]) -> dict[str, float]:
    """A counter's growth between two scrapes, summed by key(labels); samples whose key
    is None and zero growth are left out."""

    def sums(samples: Samples) -> dict[str, float]:
        found: dict[str, float] = {}
        for labels, value in samples.get(name, []):
            k = key(labels)
            if k is not None:
                found[k] = found.get(k, 0.0) + value
        return found

    start, end = sums(before), sums(after)
    return {k: end[k] - start.get(k, 0.0) for k in sorted(end)
            if end[k] - start.get(k, 0.0) > 0}


def request_kind(labels: dict[str, str]) -> str:
    """An apiserver_request_total sample's verb and resource: "PATCH pods/status"."""
    sub = labels.get("subresource", "")
    return f"{labels.get('verb', '')} {labels.get('resource', '')}{'/' + sub if sub else ''}"


def buckets(samples: Samples, histogram: str) -> dict[float, float]:
    """Cumulative bucket counts by upper bound, summed over all label sets."""
    found: dict[float, float] = {}
    for labels, value in samples.get(f"{histogram}_bucket", []):
        bound = math.inf if labels["le"] == "+Inf" else float(labels["le"])
        found[bound] = found.get(bound, 0.0) + value
    return found


def bucket_delta(before: Samples, after: Samples, histogram: str) -> dict[float, float]:
    start = buckets(before, histogram)
    return {bound: count - start.get(bound, 0.0)
            for bound, count in buckets(after, histogram).items()}


def quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """histogram_quantile(q) over cumulative bucket counts; None when empty.

    As in PromQL: the first bucket interpolates from 0, and a rank that falls in
    the +Inf bucket returns the highest finite bound.
    """
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return None
    count = cumulative[bounds[-1]]
    rank = q * count
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        current = cumulative[bound]
        if current >= rank:
            if math.isinf(bound):
                return lower_bound
            if current == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                current - lower_count)
        lower_bound, lower_count = bound, current
    return bounds[-1]
