"""The registry's families in Prometheus text format 0.0.4, byte for byte as
prometheus_client's generate_latest writes them, at a fraction of its CPU.

/metrics is read every few seconds by Prometheus (every second by the benchmark
runner) and the scheduler pays for each read: generate_latest validates and escapes
every label name and value of every sample, bucket after bucket, though a
scheduler's series keep the same labels for its whole life. Measured (issue 38),
~1100 lines took 5-13 ms of CPU per read on a loaded machine, most of it in that
per-sample formatting. Here each label set, metric name and value is formatted once
and then looked up; everything else (what is collected, the order, the HELP and TYPE
lines, the OpenMetrics-only samples moved to the end of their family) is
generate_latest's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Final, TypeVar

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import (
    UNDERSCORES,
    escape_label_name,
    escape_metric_name,
)
from prometheus_client.samples import Timestamp
from prometheus_client.utils import floatToGoString

# Samples generate_latest writes after the family's own, each kind as a gauge family.
_OPENMETRICS_SUFFIXES: Final = ("_created", "_gsum", "_gcount")
# Past this many entries a cache starts over (series come and go with plugins and
# label values; a scheduler's stay far below it).
_CACHE_LIMIT: Final = 50_000
# Family types as the 0.0.4 format names them (the rest keep their own name).
_TYPE_NAMES: Final = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram",
                      "unknown": "untyped"}
_NAME_SUFFIXES: Final = {"counter": "_total", "info": "_info"}

Key = TypeVar("Key")
# prometheus_client's own formatting of a sample value (Go's spelling: +Inf, 1e+06).
_go_float: Final[Callable[[float], str]] = floatToGoString


class TextFormat:
    """Formats families; keeps what it formatted for the next read."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._labels: dict[tuple[tuple[str, str], ...], str] = {}
        self._values: dict[float, str] = {}

    def render(self, families: Iterable[Metric]) -> bytes:
        output: list[str] = []
        for family in families:
            name = family.name + _NAME_SUFFIXES.get(family.type, "")
            kind = _TYPE_NAMES.get(family.type, family.type)
            documentation = _help(family.documentation)
            output.append(f"# HELP {self._name(name)} {documentation}\n")
            output.append(f"# TYPE {self._name(name)} {kind}\n")
            moved: dict[str, list[str]] = {}
            for sample in family.samples:
                line = self._line(sample.name, sample.labels, sample.value, sample.timestamp)
                for suffix in _OPENMETRICS_SUFFIXES:
                    if sample.name == family.name + suffix:
                        moved.setdefault(suffix, []).append(line)
                        break
                else:
                    output.append(line)
            for suffix, lines in sorted(moved.items()):
                moved_name = self._name(family.name + suffix)
                output.append(f"# HELP {moved_name} {documentation}\n")
                output.append(f"# TYPE {moved_name} gauge\n")
                output.extend(lines)
        return "".join(output).encode("utf-8")

    def _line(self, name: str, labels: Mapping[str, str], value: float,
              timestamp: float | Timestamp | None) -> str:
        key = tuple(labels.items())
        text = self._labels.get(key)
        if text is None:
            text = _label_text(labels)
            _keep(self._labels, key, text)
        stamp = "" if timestamp is None else f" {int(float(timestamp) * 1000):d}"
        return f"{self._name(name)}{text} {self._value(value)}{stamp}\n"

    def _name(self, name: str) -> str:
        escaped = self._names.get(name)
        if escaped is None:
            escaped = escape_metric_name(name, UNDERSCORES)
            _keep(self._names, name, escaped)
        return escaped

    def _value(self, value: float) -> str:
        if value == 0:
            # 0.0 and -0.0 are one key of a dict but print differently.
            return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
        text = self._values.get(value)
        if text is None:
            text = _go_float(value)
            # NaN is never equal to itself: formatted each time, never kept.
            if not math.isnan(value):
                _keep(self._values, value, text)
        return text


def _label_text(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    pairs = ",".join(f'{escape_label_name(name, UNDERSCORES)}="{_label_value(value)}"'
                     for name, value in sorted(labels.items()))
    return f"{{{pairs}}}"


def _label_value(value: str) -> str:
    """The format's escapes in a label value: backslash, newline, double quote."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def _help(documentation: str) -> str:
    return documentation.replace("\\", r"\\").replace("\n", r"\n")


def _keep(cache: dict[Key, str], key: Key, text: str) -> None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = text
