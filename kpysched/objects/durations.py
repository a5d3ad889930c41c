"""Go's time.Duration text, both ways: "15s", "1m30s", "1.5h", "500ms".

KubeSchedulerConfiguration and kube-scheduler's flags write durations this way, and
upstream's messages print them so (e.g. a Permit timeout "after waiting 20ms").
"""

from __future__ import annotations

import re

_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
}
_DURATION_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
# time.Duration is an int64 of nanoseconds: Go refuses anything longer (about 292 years).
_MAX_SECONDS = (1 << 63) / 1e9


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string ("15s", "1m30s", "1.5h", "-2s"); ValueError if invalid."""
    sign, body = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text.removeprefix("+"))
    if body == "0":
        return 0.0
    seconds, position = 0.0, 0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            break
        seconds += float(match[1]) * _DURATION_UNITS[match[2]]
        position = match.end()
    if not body or position != len(body) or seconds > _MAX_SECONDS:
        raise ValueError(f'invalid duration "{text}"')
    return sign * seconds


def go_duration(seconds: float) -> str:
    """Seconds as Go's time.Duration prints them: "15s", "1m30s", "1h0m0s", "500ms"."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{_trim(nanos / size)}{unit}"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_trim(rest / 1e9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _trim(number: float) -> str:
    return f"{number:.9f}".rstrip("0").rstrip(".")
