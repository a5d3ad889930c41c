"""The PodGroup condition writer: upstream's updatePodGroupCondition rules, as v1.36
(PodGroupScheduled on v1alpha2) and v1.37 (PodGroupInitiallyScheduled on v1beta1)."""

from __future__ import annotations

from typing import cast

from kpysched.api.client import RawApi
from kpysched.metrics import SchedulerMetrics
from kpysched.objects.scheduling import Condition
from kpysched.writes.pod_group_status import PodGroupConditionWriter
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod_group

PATH = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups/g/status"


async def write(conditions: list[Condition], status: str, reason: str,
                message: str) -> list[object]:
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), release=36)
    group = make_pod_group("g", 2)
    group.status.conditions = conditions
    writer.set_scheduled_condition(group, status, reason, message)
    await writer.drain(timeout=5)
    return [body for method, path, body in recording.requests
            if method == "PATCH" and path == PATH]


async def test_the_condition_is_patched_with_the_groups_generation() -> None:
    [body] = await write([], "False", "Unschedulable", "pod group is unschedulable")
    assert isinstance(body, dict)
    [condition] = body["status"]["conditions"]
    assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == {
        "type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
        "message": "pod group is unschedulable", "observedGeneration": 1}


async def test_true_is_never_taken_back_and_an_unchanged_condition_is_not_written() -> None:
    scheduled = Condition(type="PodGroupScheduled", status="True", reason="Scheduled",
                          observed_generation=1, last_transition_time="2026-01-01T00:00:00Z")
    assert await write([scheduled], "False", "Unschedulable", "x") == []
    assert await write([scheduled], "True", "Scheduled", "") == []
    waiting = Condition(type="PodGroupScheduled", status="False", reason="Unschedulable",
                        message="old", observed_generation=1,
                        last_transition_time="2026-01-01T00:00:00Z")
    [body] = await write([waiting], "False", "Unschedulable", "new")
    assert isinstance(body, dict)
    # Same status: the transition time stays.
    assert body["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_pod_group_metrics_exist_only_with_generic_workload() -> None:
    def names(metrics: SchedulerMetrics) -> set[str]:
        return {family.name for family in metrics.registry.collect()}

    off = names(SchedulerMetrics(process_metrics=False))
    assert not {name for name in off if "podgroup" in name}
    metrics = SchedulerMetrics(process_metrics=False, generic_workload=True)
    metrics.pod_group_attempt("scheduled", "kpysched", 0.01)
    metrics.pod_group_algorithm_duration(0.002)
    assert {"scheduler_podgroup_schedule_attempts",
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "scheduler_podgroup_scheduling_algorithm_duration_seconds"} <= names(metrics)


async def test_a_true_not_yet_seen_by_the_informer_is_not_taken_back_either() -> None:
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), release=36)
    group = make_pod_group("g", 2)
    writer.set_scheduled_condition(group, "True", "Scheduled", "")
    # A cycle for a member left over reports before the informer shows the True.
    writer.set_scheduled_condition(group, "False", "Unschedulable", "pod group is unschedulable")
    await writer.drain(timeout=5)
    [body] = [body for method, path, body in recording.requests if method == "PATCH"]
    assert isinstance(body, dict)
    assert body["status"]["conditions"][0]["status"] == "True"


async def test_the_groups_marked_scheduled_are_forgotten_once_shown_or_old() -> None:
    # Issue 32 item 10: one uid per PodGroup ever scheduled was kept forever.
    now = [1000.0]
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), clock=lambda: now[0],
                                    release=36)
    shown = Condition(type="PodGroupScheduled", status="True", reason="Scheduled",
                      observed_generation=1, last_transition_time="2026-01-01T00:00:00Z")
    groups = [make_pod_group(f"g{index}", 2) for index in range(3)]
    for index, group in enumerate(groups):
        group.metadata.uid = f"uid-{index}"
        writer.set_scheduled_condition(group, "True", "Scheduled", "")
    assert len(writer._scheduled) == 3
    # Not shown by the informer yet: a later cycle's False must not take it back.
    writer.set_scheduled_condition(groups[0], "False", "Unschedulable", "leftover")
    # The informer shows g1's True: nothing left to remember for it.
    groups[1].status.conditions = [shown]
    writer.set_scheduled_condition(groups[1], "False", "Unschedulable", "leftover")
    assert set(writer._scheduled) == {"uid-0", "uid-2"}
    now[0] += 121  # long past any informer lag
    writer.set_scheduled_condition(groups[1], "True", "Scheduled", "")
    assert writer._scheduled == {}
    await writer.drain(timeout=5)
    statuses = [body["status"]["conditions"][0]["status"]
                for method, path, body in recording.requests if method == "PATCH"]
    assert statuses == ["True", "True", "True"]  # no False for g0 or g1


async def test_as_v1_37_the_condition_is_initially_scheduled_on_v1beta1() -> None:
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), release=37)
    group = make_pod_group("g", 2)
    # v1.36's condition type means nothing to v1.37: it is not the one kept True.
    group.status.conditions = [Condition(type="PodGroupScheduled", status="True",
                                         reason="Scheduled", observed_generation=1)]
    writer.set_scheduled_condition(group, "False", "Unschedulable", "minCount (2) ...")
    await writer.drain(timeout=5)
    [(path, body)] = [(path, body) for method, path, body in recording.requests
                      if method == "PATCH"]
    assert path == "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/g/status"
    assert isinstance(body, dict)
    [condition] = body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["message"]) == (
        "PodGroupInitiallyScheduled", "False", "minCount (2) ...")


async def test_a_false_from_a_stale_copy_follows_a_fresh_true() -> None:
    """v1.37 retries a placed group's left-over members at once, judging by a copy
    that cannot show the True just written: the cycle says so (stale_copy)."""
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), release=37)
    group = make_pod_group("g", 2)
    assert writer.set_scheduled_condition(group, "True", "Scheduled", "")  # fresh
    await writer.drain(timeout=5)
    assert not writer.set_scheduled_condition(group, "True", "Scheduled", "")
    # A later cycle with the True remembered does not take it back...
    writer.set_scheduled_condition(group, "False", "Unschedulable", "pod group is unschedulable")
    await writer.drain(timeout=5)
    assert "False" not in _sent_statuses(recording)
    # ... the one right after it, on a stale copy, does.
    writer.set_scheduled_condition(group, "False", "Unschedulable", "pod group is unschedulable",
                                   stale_copy=True)
    await writer.drain(timeout=5)
    assert _sent_statuses(recording)[-1] == "False"
    # Once its copy shows the True, it is never taken back.
    group.status.conditions = [Condition(type="PodGroupInitiallyScheduled", status="True",
                                         reason="Scheduled", observed_generation=1)]
    writer.set_scheduled_condition(group, "False", "Unschedulable", "pod group is unschedulable")
    await writer.drain(timeout=5)
    assert _sent_statuses(recording).count("False") == 1


def _sent_statuses(recording: RecordingApi) -> list[str]:
    return [body["status"]["conditions"][0]["status"] for method, _, body
            in recording.requests if method == "PATCH" and isinstance(body, dict)]


async def test_a_false_from_a_stale_copy_goes_through_where_our_informer_caught_up() -> None:
    """kube-scheduler retries the left-over members before its copy can show the True;
    kpysched's retry may come later than its own watch event on a loaded machine, and
    must still write what kube-scheduler writes."""
    recording = RecordingApi()
    writer = PodGroupConditionWriter(cast(RawApi, recording), release=37)
    group = make_pod_group("g", 2)
    assert writer.set_scheduled_condition(group, "True", "Scheduled", "")
    await writer.drain(timeout=5)
    group.status.conditions = [Condition(type="PodGroupInitiallyScheduled", status="True",
                                         reason="Scheduled", observed_generation=1)]
    writer.set_scheduled_condition(group, "False", "Unschedulable", "pod group is unschedulable",
                                   stale_copy=True)
    await writer.drain(timeout=5)
    assert _sent_statuses(recording) == ["True", "False"]
