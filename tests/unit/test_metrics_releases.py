"""What kube-scheduler v1.37.2 exposes differently from v1.36.4 (pkg/scheduler/metrics/
metrics.go and metric_recorder.go of both tags), shown when kpysched runs as 1.37 and
not when it runs as 1.36. test_metrics.py holds the v1.36 table."""

from __future__ import annotations

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from kpysched.metrics import SchedulerMetrics


def families(release: int) -> dict[str, Metric]:
    m = SchedulerMetrics(release=release, process_metrics=False)
    m.set_pending({"active": 0, "backoff": 2, "unschedulable": 1, "gated": 0})
    m.incoming("active", "UnscheduledPodAdd")
    m.incoming_entity("active", "UnscheduledPodAdd")
    m.algorithm_duration(0.002)
    m.plugin_duration("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.preemption_victims(1)
    text = m.render().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


@pytest.mark.parametrize(("name", "v136", "v137"), [
    # ALPHA -> BETA in v1.37.
    ("scheduler_scheduling_algorithm_duration_seconds",
     "[ALPHA] Scheduling algorithm latency in seconds",
     "[BETA] Scheduling algorithm latency in seconds"),
    ("scheduler_plugin_execution_duration_seconds",
     "[ALPHA] Duration for running a plugin at a specific extension point.",
     "[BETA] Duration for running a plugin at a specific extension point."),
    ("scheduler_preemption_victims",
     "[STABLE] Number of selected preemption victims",
     "[STABLE] Number of selected preemption victims for preemption initiated by a single "
     "pod"),
])
def test_help_follows_the_release(name: str, v136: str, v137: str) -> None:
    assert families(36)[name].documentation == v136
    assert families(37)[name].documentation == v137


def test_pending_pods_gains_the_pod_group_member_queues_in_v1_37() -> None:
    def queues(release: int) -> set[str]:
        return {s.labels["queue"] for s in families(release)["scheduler_pending_pods"].samples}

    assert queues(36) == {"active", "backoff", "unschedulable", "gated"}
    assert queues(37) == {"active", "backoff", "unschedulable", "gated", "incomplete",
                          "pending"}
    doc = families(37)["scheduler_pending_pods"].documentation
    assert doc.endswith("because they are gated; 'incomplete' means number of pods in "
                        "incompletePodGroupPods; 'pending' means number of pods in "
                        "pendingPodGroupPods.")
    assert "in unschedulableEntities that" in doc


def test_queued_entities_shows_each_queue_once_it_held_a_pod() -> None:
    m = SchedulerMetrics(release=37, process_metrics=False)
    m.set_pending({"active": 0, "backoff": 2, "unschedulable": 0, "gated": 0})
    m.set_pending({"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0})

    def value(queue: str) -> float | None:
        return m.registry.get_sample_value("scheduler_queued_entities",
                                           {"queue": queue, "type": "pod"})

    # Upstream's series appears with a queue's first entity and stays (at 0 when empty).
    assert (value("active"), value("backoff"), value("unschedulable")) == (None, 0, 1)


def test_entity_families_exist_only_as_v1_37() -> None:
    as_v136, as_v137 = families(36), families(37)
    for name in ("scheduler_queued_entities", "scheduler_queue_incoming_entities"):
        assert name not in as_v136
        assert name in as_v137
    incoming = as_v137["scheduler_queue_incoming_entities"]
    assert [(s.labels, s.value) for s in incoming.samples] == [
        ({"queue": "active", "event": "UnscheduledPodAdd", "type": "pod"}, 1.0)]
    assert incoming.documentation.startswith("[ALPHA] Number of scheduling entities added")


def test_queued_entities_counts_pod_groups_as_one_entity() -> None:
    m = SchedulerMetrics(process_metrics=False, release=37)
    m.set_pending({"active": 3, "backoff": 0, "unschedulable": 0, "gated": 0})
    m.set_queued_entities({("active", "pod"): 1, ("active", "podgroup"): 1,
                           ("backoff", "pod"): 0})
    m.incoming_entity("active", "UnscheduledPodAdd", "podgroup")

    def value(name: str, **labels: str) -> float | None:
        return m.registry.get_sample_value(name, labels)

    assert value("scheduler_queued_entities", queue="active", type="pod") == 1
    assert value("scheduler_queued_entities", queue="active", type="podgroup") == 1
    assert value("scheduler_queued_entities", queue="backoff", type="podgroup") is None
    assert value("scheduler_queue_incoming_entities_total", queue="active",
                 event="UnscheduledPodAdd", type="podgroup") == 1
