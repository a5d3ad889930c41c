"""kpysched/metrics_text.py writes what prometheus_client's generate_latest writes, byte
for byte, for any registry: first read (nothing kept yet) and later reads (labels, names
and values looked up), after the series changed in between."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info, Summary
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily

from kpysched.metrics import SchedulerMetrics, _WithoutCreated
from kpysched.metrics_text import TextFormat

LABEL_NAMES = st.lists(st.sampled_from(["profile", "plugin", "result", "le_x", "quantity"]),
                       max_size=3, unique=True)
LABEL_VALUES = st.text(alphabet=st.sampled_from('ab0."\\\n é{}=,'), max_size=6)
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 64.0, 1e-9, 1234567.0, 12345678.9, -3.5]),
    st.integers(min_value=-10**12, max_value=10**12).map(float))


@st.composite
def registries(draw: st.DrawFn) -> tuple[CollectorRegistry, list[object]]:
    """A registry of several kinds of families, and the updates to make to it later."""
    registry = CollectorRegistry()
    updates: list[object] = []
    for index in range(draw(st.integers(min_value=1, max_value=5))):
        kind = draw(st.sampled_from(["counter", "gauge", "histogram", "summary", "info",
                                     "enum", "custom"]))
        name = f"family_{index}"
        documentation = draw(st.text(alphabet=st.sampled_from("ab \\\n\""), max_size=8))
        labels = draw(LABEL_NAMES)
        if kind == "custom":
            family = GaugeMetricFamily(name, documentation or "x", labels=labels)
            for values in draw(st.lists(st.tuples(*[LABEL_VALUES] * len(labels)), max_size=3)):
                family.add_metric(list(values), draw(VALUES),
                                  timestamp=draw(st.none() | st.floats(0, 2e9)))
            registry.register(_Fixed(family))
            continue
        if kind == "counter":
            metric: object = Counter(name, documentation, labels, registry=registry)
        elif kind == "gauge":
            metric = Gauge(name, documentation, labels, registry=registry)
        elif kind == "histogram":
            buckets = sorted(set(draw(st.lists(
                st.sampled_from([0.001, 0.5, 1.0, 2.0, 64.0, 1e7]), min_size=1, max_size=4))))
            metric = Histogram(name, documentation, labels, registry=registry, buckets=buckets)
        elif kind == "summary":
            metric = Summary(name, documentation, labels, registry=registry)
        elif kind == "info":
            metric = Info(name, documentation, labels, registry=registry)
        else:
            metric = Enum(name, documentation, labels, registry=registry,
                          states=["a", "b\"c"])
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            values = draw(st.tuples(*[LABEL_VALUES] * len(labels)))
            updates.append((kind, metric, values, draw(VALUES), draw(LABEL_VALUES)))
    return registry, updates


class _Fixed:
    def __init__(self, family: GaugeMetricFamily) -> None:
        self._family = family

    def collect(self) -> list[GaugeMetricFamily]:
        return [self._family]


def _apply(update: object) -> None:
    kind, metric, values, value, text = update  # type: ignore[misc]
    child = metric.labels(*values) if values else metric
    finite = value if math.isfinite(value) else 1.0
    if kind == "counter":
        child.inc(abs(finite))
    elif kind == "gauge":
        child.set(value)
    elif kind in ("histogram", "summary"):
        child.observe(finite)
    elif kind == "info":
        child.info({"version": text})
    else:
        child.state("b\"c" if finite > 0 else "a")


@settings(max_examples=300, deadline=None)
@given(registries(), st.data())
def test_the_text_is_generate_latest_s_before_and_after_updates(
        drawn: tuple[CollectorRegistry, list[object]], data: st.DataObject) -> None:
    registry, updates = drawn
    text = TextFormat()
    split = data.draw(st.integers(min_value=0, max_value=len(updates)))
    for update in updates[:split]:
        _apply(update)
    assert text.render(registry.collect()) == generate_latest(registry)
    for update in updates[split:]:
        _apply(update)
    assert text.render(registry.collect()) == generate_latest(registry)
    assert text.render(registry.collect()) == generate_latest(registry)


def test_the_scheduler_s_metrics_read_as_generate_latest_wrote_them() -> None:
    """SchedulerMetrics.render over a registry with series of each kind it keeps: what
    generate_latest gave (without _created, Go's le) before this module. (No process
    metrics: their CPU seconds move between the two reads.)"""
    metrics = SchedulerMetrics(release=37, process_metrics=False)
    for _ in range(2):
        metrics.schedule_attempt("scheduled", "default-scheduler", 0.004)
        metrics.plugin_duration("NodeResourcesFit", "Filter", "Success", 0.0001)
        metrics.extension_point_duration("Filter", "Success", "default-scheduler", 0.002)
        metrics.pod_scheduled(1, 0.5)
        expected = re.sub(rb'le="(\d+)\.0"', rb'le="\1"', generate_latest(
            _WithoutCreated(metrics.registry, metrics.disabled)))
        assert metrics.render() == expected
