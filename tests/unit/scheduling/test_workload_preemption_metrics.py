"""v1.37's workload preemption metrics (pkg/scheduler/metrics of v1.37.2): registered
with GenericWorkload on, with upstream's names, labels, buckets and help; a pod group's
preemption counts its attempt, its evaluation, its victims (and the pod groups and
budgets they disrupt) and, once the victims are gone, its execution; a single pod's
preemption counts its evaluation, budget violations and execution under preemptor "pod"
(its victims in preemption_victims; upstream counts no disruptions for it)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.metrics import SchedulerMetrics
from tests.unit.scheduler_harness import build_harness, node
from tests.unit.scheduling.test_pod_group_preemption import Harness

GANG_37 = Features.from_gates({"GenericWorkload": True}, release=37)
NAMES = {
    "scheduler_workload_preemption_attempts": ("counter", ("result",)),
    "scheduler_workload_preemption_victims": ("histogram", ()),
    "scheduler_preemption_workload_disruptions": ("histogram", ("preemptor",)),
    "scheduler_preemption_evaluation_duration_seconds": ("histogram", ("preemptor", "result")),
    "scheduler_preemption_execution_duration_seconds": ("histogram", ("preemptor", "result")),
    "scheduler_preemption_pdb_violations": ("counter", ("preemptor",)),
}


def families(metrics: SchedulerMetrics) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}


@pytest.mark.parametrize(("generic_workload", "release"), [(False, 37), (True, 36)])
def test_not_registered_without_generic_workload_or_before_v1_37(generic_workload: bool,
                                                                 release: int) -> None:
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=generic_workload,
                               release=release)
    metrics.workload_preemption_attempt("Success")
    metrics.group_preemption_chosen(2, 1, 1)
    assert not set(NAMES) & set(families(metrics))


def test_upstream_names_types_labels_buckets_and_help() -> None:
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=True, release=37)
    metrics.workload_preemption_attempt("Success")
    metrics.preemption_evaluation("podgroup", "Success", 0.002)
    metrics.group_preemption_chosen(3, 1, 2)
    metrics.preemption_execution("podgroup", "success", 0.01)
    found = families(metrics)
    for name, (kind, labels) in NAMES.items():
        family = found[name]
        assert family.type == kind, name  # type: ignore[attr-defined]
        assert family.documentation.startswith("[ALPHA] "), name  # type: ignore[attr-defined]
        sample_labels = {key for sample in family.samples  # type: ignore[attr-defined]
                         for key in sample.labels if key != "le"}
        assert sample_labels == set(labels), name
    victims = found["scheduler_workload_preemption_victims"]
    bounds = [s.labels["le"] for s in victims.samples  # type: ignore[attr-defined]
              if s.name.endswith("_bucket")]
    assert bounds == [*(str(2**i) for i in range(11)), "+Inf"]  # as Go writes them
    evaluation = found["scheduler_preemption_evaluation_duration_seconds"]
    bounds = [s.labels["le"] for s in evaluation.samples  # type: ignore[attr-defined]
              if s.name.endswith("_bucket")]
    assert len(bounds) == 17 and bounds[0] == "0.001"


def test_nothing_disrupted_or_violated_is_not_observed_nor_written() -> None:
    # As Go's client, a labelled family with no series is left out of /metrics.
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=True, release=37)
    metrics.group_preemption_chosen(2, 0, 0)
    found = families(metrics)
    assert "scheduler_preemption_workload_disruptions" not in found
    assert "scheduler_preemption_pdb_violations" not in found
    assert "scheduler_workload_preemption_attempts" not in found
    assert "scheduler_workload_preemption_victims" in found  # no labels: always there


def sample(metrics: SchedulerMetrics, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def metrics_harness(cpu: str) -> tuple[SchedulerMetrics, Harness]:
    """A v1.37 scheduler with GenericWorkload on, its metrics, and one node n1."""
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=True, release=37)
    built = build_harness({"schedulerName": "kpysched"}, GANG_37,
                          Listers(generic_workload=True, release=37), node("n1", cpu),
                          metrics=metrics)
    return metrics, Harness(built.scheduler, built.api, built.listers, built.pods,
                            built.nodes)


async def victims_removed(harness: Harness) -> None:
    """The victims' removal runs as a task of its own; its execution is timed at the end."""
    await harness.scheduler.context.writes.preemption.drain(timeout=5)


async def test_a_group_preemption_is_counted_as_upstream_counts_it() -> None:
    metrics, harness = metrics_harness(cpu="3")
    harness.group("victims", 2, 10, whole=True)
    harness.group("pg1", 2, 100)
    for name in ("low-1", "low-2"):
        harness.pod(name, "1", 10, group="victims", on="n1")
    harness.pod("low-3", "1", 10, on="n1")
    await harness.schedule_all()
    for name in ("high-1", "high-2"):
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()
    await victims_removed(harness)

    assert sample(metrics, "scheduler_workload_preemption_attempts_total",
                  result="Success") == 1
    assert sample(metrics, "scheduler_preemption_evaluation_duration_seconds_count",
                  preemptor="podgroup", result="Success") == 1
    # Two pods must go: the whole victim group (one disruption) is the least important
    # unit that frees two CPUs.
    assert sample(metrics, "scheduler_workload_preemption_victims_sum") == len(
        harness.deleted())
    assert sample(metrics, "scheduler_preemption_workload_disruptions_count",
                  preemptor="podgroup") == 1
    assert sample(metrics, "scheduler_preemption_execution_duration_seconds_count",
                  preemptor="podgroup", result="success") == 1


async def test_a_group_with_nobody_to_preempt_counts_its_attempt_as_unresolvable() -> None:
    metrics, harness = metrics_harness(cpu="1")
    harness.group("pg1", 2, 100)
    for name in ("high-1", "high-2"):
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()
    assert sample(metrics, "scheduler_workload_preemption_attempts_total",
                  result="UnschedulableAndUnresolvable") == 1
    assert sample(metrics, "scheduler_preemption_evaluation_duration_seconds_count",
                  preemptor="podgroup", result="UnschedulableAndUnresolvable") == 1
    assert sample(metrics, "scheduler_workload_preemption_victims_count") == 0


async def test_a_single_pods_preemption_is_counted_as_a_pod() -> None:
    metrics, harness = metrics_harness(cpu="2")
    harness.group("victims", None, 10)  # disruptionMode single: each member a unit
    for name in ("low-1", "low-2"):
        harness.pod(name, "1", 10, group="victims", on="n1")
    await harness.schedule_all()
    harness.pod("high", "2", 100)
    await harness.schedule_all()
    await victims_removed(harness)

    assert sorted(harness.deleted()) == ["low-1", "low-2"]
    assert sample(metrics, "scheduler_preemption_evaluation_duration_seconds_count",
                  preemptor="pod", result="Success") == 1
    # Upstream counts no pod-group disruptions for a single pod's candidate.
    assert sample(metrics, "scheduler_preemption_workload_disruptions_count",
                  preemptor="pod") == 0
    assert sample(metrics, "scheduler_preemption_execution_duration_seconds_count",
                  preemptor="pod", result="success") == 1
    assert sample(metrics, "scheduler_preemption_victims_sum") == 2
    assert sample(metrics, "scheduler_workload_preemption_attempts_total",
                  result="Success") == 0
