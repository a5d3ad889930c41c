"""The exposition matches kube-scheduler v1.36.4: names, types, labels, buckets, HELP level.

The table is written from pkg/scheduler/metrics/metrics.go and
component-base/metrics/prometheus/clientgo/leaderelection/metrics.go.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from kpysched.metrics import CONTENT_TYPE, NoMetrics, SchedulerMetrics


def go_exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus.ExponentialBuckets, written out again so the test does not trust the
    code under test."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return out


@dataclass(frozen=True)
class Upstream:
    name: str  # as exposed: counters end in _total
    type: str
    labels: tuple[str, ...]
    stability: str | None
    buckets: tuple[float, float, int] | None = None  # ExponentialBuckets(start, factor, n)


UPSTREAM = [
    Upstream("scheduler_schedule_attempts_total", "counter", ("result", "profile"), "STABLE"),
    Upstream("scheduler_scheduling_attempt_duration_seconds", "histogram",
             ("result", "profile"), "STABLE", (0.001, 2, 15)),
    Upstream("scheduler_scheduling_algorithm_duration_seconds", "histogram", (), "ALPHA",
             (0.001, 2, 15)),
    Upstream("scheduler_event_handling_duration_seconds", "histogram", ("event",), "ALPHA",
             (0.0001, 2, 12)),
    Upstream("scheduler_preemption_victims", "histogram", (), "STABLE", (1, 2, 7)),
    Upstream("scheduler_preemption_attempts_total", "counter", (), "STABLE"),
    Upstream("scheduler_pending_pods", "gauge", ("queue",), "STABLE"),
    Upstream("scheduler_goroutines", "gauge", ("operation",), "BETA"),
    Upstream("scheduler_pod_scheduling_sli_duration_seconds", "histogram", ("attempts",),
             "BETA", (0.01, 2, 20)),
    Upstream("scheduler_pod_scheduling_attempts", "histogram", (), "STABLE", (1, 2, 5)),
    Upstream("scheduler_pod_scheduled_after_flush_total", "counter", (), "ALPHA"),
    Upstream("scheduler_framework_extension_point_duration_seconds", "histogram",
             ("extension_point", "status", "profile"), "STABLE", (0.0001, 2, 12)),
    Upstream("scheduler_plugin_execution_duration_seconds", "histogram",
             ("plugin", "extension_point", "status"), "ALPHA", (0.00001, 1.5, 20)),
    Upstream("scheduler_queue_incoming_pods_total", "counter", ("queue", "event"), "STABLE"),
    Upstream("scheduler_queueing_hint_execution_duration_seconds", "histogram",
             ("plugin", "event", "hint"), "ALPHA", (0.00001, 1.5, 20)),
    Upstream("scheduler_permit_wait_duration_seconds", "histogram", ("result",), "BETA",
             (0.001, 2, 15)),
    Upstream("scheduler_cache_size", "gauge", ("type",), "ALPHA"),
    Upstream("scheduler_unschedulable_pods", "gauge", ("plugin", "profile"), "BETA"),
    Upstream("scheduler_plugin_evaluation_total", "counter",
             ("plugin", "extension_point", "profile"), "BETA"),
    # volumebinding/metrics, registered with the scheduler's.
    Upstream("scheduler_volume_scheduling_stage_error_total", "counter", ("operation",),
             "ALPHA"),
    Upstream("leader_election_master_status", "gauge", ("name",), "ALPHA"),
    Upstream("leader_election_slowpath_total", "counter", ("name",), "ALPHA"),
    # kpysched's own.
    Upstream("kpysched_informer_watch_restarts_total", "counter", ("resource",), None),
    Upstream("kpysched_informer_relists_total", "counter", ("resource",), None),
    Upstream("kpysched_informer_unavailable", "gauge", ("resource",), None),
    Upstream("kpysched_bind_duration_seconds", "histogram", ("result",), None,
             (0.001, 2, 15)),
    Upstream("kpysched_bind_failures_total", "counter", ("reason",), None),
    Upstream("kpysched_event_loop_lag_seconds", "histogram", (), None, (0.0005, 2, 14)),
]


def exercised() -> SchedulerMetrics:
    """Touch every metric once so each has a series (and so its labels show)."""
    m = SchedulerMetrics(rng=random.Random(1))
    m.schedule_attempt("scheduled", "kpysched", 0.01)
    m.pod_scheduled(3, 1.5, after_flush=True)
    m.algorithm_duration(0.002)
    m.event_handled("PodAdd", 0.0003)
    m.preemption_attempt()
    m.preemption_victims(2)
    m.set_pending({"active": 1, "backoff": 2, "unschedulable": 3, "gated": 4})
    m.incoming("active", "PodAdd")
    m.queueing_hint("NodeResourcesFit", "NodeAdd", "QueueSkip", 0.00002)
    m.unschedulable_changed(["NodeResourcesFit"], "kpysched", 1)
    m.extension_point_duration("Filter", "Success", "kpysched", 0.001)
    m.plugin_duration("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.plugin_evaluated("NodeResourcesFit", "Filter", "kpysched", 5)
    m.permit_wait("Success", 0.01)
    with m.in_flight("binding"):
        pass
    m.set_cache_size(nodes=5, pods=7, assumed_pods=1)
    m.set_leader("kpysched", True)
    m.leader_slowpath("kpysched")
    m.watch_restarted("pods")
    m.relisted("pods")
    m.set_informer_unavailable("devicetaintrules", True)
    m.bind_finished("success", 0.02)
    m.bind_failed("Conflict")
    m.volume_scheduling_stage_failed("bind")
    return m


@pytest.fixture(scope="module")
def families() -> dict[str, Metric]:
    text = exercised().render().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def family_of(families: dict[str, Metric], spec: Upstream) -> Metric:
    # The parser names a counter family without its _total suffix.
    key = spec.name.removesuffix("_total") if spec.type == "counter" else spec.name
    assert key in families, f"{spec.name} is not exposed"
    return families[key]


@pytest.mark.parametrize("spec", UPSTREAM, ids=lambda s: s.name)
def test_name_type_and_labels_match_upstream(families: dict[str, Metric],
                                             spec: Upstream) -> None:
    family = family_of(families, spec)
    assert family.type == spec.type
    expected_samples = ({f"{spec.name}_bucket", f"{spec.name}_sum", f"{spec.name}_count"}
                        if spec.type == "histogram" else {spec.name})
    assert {sample.name for sample in family.samples} == expected_samples
    for sample in family.samples:
        assert set(sample.labels) - {"le"} == set(spec.labels), sample
    if spec.stability is not None:
        assert family.documentation.startswith(f"[{spec.stability}] ")


@pytest.mark.parametrize("spec", [s for s in UPSTREAM if s.buckets], ids=lambda s: s.name)
def test_histogram_buckets_match_upstream(families: dict[str, Metric], spec: Upstream) -> None:
    assert spec.buckets is not None
    family = family_of(families, spec)
    bounds = [float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")]
    assert bounds == [*go_exponential_buckets(*spec.buckets), float("inf")]


def test_bucket_labels_print_as_go_prints_them() -> None:
    text = exercised().render().decode()
    assert 'le="1.5000000000000002e-05"' in text  # 0.00001 * 1.5, as Go's 'g' formatting
    assert 'le="0.00011390625000000003"' in text
    assert 'le="64"' in text and 'le="64.0"' not in text  # whole numbers without ".0"
    assert 'le="5242.88"' in text


def test_preemption_victims_buckets_are_powers_of_two_to_64() -> None:
    assert go_exponential_buckets(1, 2, 7) == [1, 2, 4, 8, 16, 32, 64]


def test_exposed_names_are_exact() -> None:
    text = exercised().render().decode()
    for line in ("# TYPE scheduler_schedule_attempts_total counter",
                 "# TYPE scheduler_pending_pods gauge",
                 "# TYPE scheduler_cache_size gauge",
                 "# TYPE scheduler_scheduling_attempt_duration_seconds histogram"):
        assert line in text
    assert "_created" not in text  # Go's client exposes no creation timestamps


def test_the_volume_binder_cache_family_is_registered_without_samples() -> None:
    """v1.36.4 registers scheduler_volume_binder_cache_requests_total and never counts."""
    text = exercised().render().decode()
    assert ("# HELP scheduler_volume_binder_cache_requests_total [ALPHA] Total number for "
            "request volume binding cache") in text
    assert "# TYPE scheduler_volume_binder_cache_requests_total counter" in text
    assert "scheduler_volume_binder_cache_requests_total{" not in text


def test_content_type_is_text_format_0_0_4() -> None:
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_pending_and_cache_series_exist_from_the_start() -> None:
    families = {f.name: f for f in
                text_string_to_metric_families(SchedulerMetrics().render().decode())}
    assert {s.labels["queue"] for s in families["scheduler_pending_pods"].samples} == {
        "active", "backoff", "unschedulable", "gated"}
    assert {s.labels["type"] for s in families["scheduler_cache_size"].samples} == {
        "nodes", "pods", "assumed_pods"}


def sample_value(m: SchedulerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_set_pending_rejects_an_unknown_queue() -> None:
    with pytest.raises(ValueError, match="unknown queue 'waiting'"):
        SchedulerMetrics().set_pending({"waiting": 1})


@pytest.mark.parametrize(("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")],
                         ids=["1", "14", "15", "40"])
def test_sli_attempts_label_is_capped_at_15(attempts: int, label: str) -> None:
    m = SchedulerMetrics()
    m.pod_scheduled(attempts, 0.5)
    assert sample_value(m, "scheduler_pod_scheduling_sli_duration_seconds_count",
                        attempts=label) == 1


def test_in_flight_counts_while_the_block_runs() -> None:
    m = SchedulerMetrics()
    with m.in_flight("binding"), m.in_flight("binding"):
        assert sample_value(m, "scheduler_goroutines", operation="binding") == 2
    assert sample_value(m, "scheduler_goroutines", operation="binding") == 0


def test_unschedulable_gauge_goes_up_and_down_per_plugin() -> None:
    m = SchedulerMetrics()
    m.unschedulable_changed(["A", "B"], "p", 1)
    m.unschedulable_changed(["A"], "p", -1)
    assert sample_value(m, "scheduler_unschedulable_pods", plugin="A", profile="p") == 0
    assert sample_value(m, "scheduler_unschedulable_pods", plugin="B", profile="p") == 1


def test_should_sample_picks_about_ten_percent_of_cycles() -> None:
    m = SchedulerMetrics(rng=random.Random(7))
    picked = sum(m.should_sample() for _ in range(10_000))
    assert 800 < picked < 1200
    assert not any(SchedulerMetrics(sample_percent=0).should_sample() for _ in range(100))


async def test_loop_lag_monitor_observes_samples() -> None:
    m = SchedulerMetrics()
    task = asyncio.create_task(m.loop_lag_monitor(interval=0.01))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count = sample_value(m, "kpysched_event_loop_lag_seconds_count")
    assert count is not None and count >= 2


async def test_the_loop_publishes_gauges_that_render_reads() -> None:
    m = SchedulerMetrics()
    queue = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    task = asyncio.create_task(m.publish_forever(lambda: m.set_pending(queue), interval=0.01))
    queue["active"] = 4
    for _ in range(100):
        await asyncio.sleep(0.01)
        if 'scheduler_pending_pods{queue="active"} 4.0' in m.render().decode():
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 'scheduler_pending_pods{queue="active"} 4.0' in m.render().decode()


def test_each_instance_owns_its_registry() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.preemption_attempt()
    assert sample_value(a, "scheduler_preemption_attempts_total") == 1
    assert sample_value(b, "scheduler_preemption_attempts_total") == 0


def test_disabled_metrics_are_left_out_of_the_exposition() -> None:
    metrics = SchedulerMetrics(process_metrics=False, disabled=frozenset(
        {"scheduler_schedule_attempts_total", "scheduler_pending_pods"}))
    metrics.schedule_attempt("scheduled", "kpysched", 0.01)
    body = metrics.render().decode()
    assert "scheduler_schedule_attempts_total" not in body
    assert "scheduler_pending_pods" not in body
    assert "scheduler_scheduling_attempt_duration_seconds" in body


def test_no_metrics_stands_in_for_every_method() -> None:
    """NoMetrics builds no collectors: a counting method it did not override would
    reach for one and fail in a scheduler built without metrics."""
    public = {name for name, value in vars(SchedulerMetrics).items()
              if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    assert public - set(vars(NoMetrics)) == set()
    quiet = NoMetrics()
    quiet.schedule_attempt("scheduled", "p", 0.1)
    with quiet.in_flight("binding"):
        pass
    assert (quiet.should_sample(), quiet.render()) == (False, b"")
