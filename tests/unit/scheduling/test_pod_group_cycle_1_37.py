"""The pod-group scheduling cycle as v1.37 (GenericWorkload on, which brings the
GangScheduling plugin): the gang's feasibility is checked before and after each member
and ends the cycle early, members neither preempt nor wait at Permit inside it, an
unschedulable group runs PodGroupPostFilter once (its whole-group preemption:
test_pod_group_preemption.py), and the PodGroup gets
PodGroupInitiallyScheduled on scheduling.k8s.io/v1beta1.

The same scenarios as v1.36 (test_pod_group_cycle.py) where the words differ; the
texts are kube-scheduler v1.37.2's (checked against it by
tests/e2e/differential/test_gang_differential_1_37.py).
"""

from __future__ import annotations

import pytest

from kpysched.config.features import Features
from kpysched.framework.status import Code
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.scheduling import pod_group_placement as placement
from tests.unit.builders import make_pod, make_pod_group
from tests.unit.scheduler_harness import SchedulerHarness, build_harness, node

GANG_37 = Features.from_gates({"GenericWorkload": True}, release=37)
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
CONDITION = "PodGroupInitiallyScheduled"


class Harness(SchedulerHarness):
    def group(self, name: str, min_count: int | None, priority: int | None = None) -> None:
        assert self.listers.workloads is not None
        group = make_pod_group(name, min_count)
        group.spec.priority = priority
        self.listers.workloads.pod_groups.on_add(group)

    def member(self, name: str, group: str, cpu: str = "1", priority: int = 0) -> api.Pod:
        pod = make_pod(name).group(group).req(cpu=cpu).priority(priority).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    def failed(self) -> dict[str, str]:
        return self.notes("FailedScheduling")

    def conditions(self) -> list[tuple[str, str, str]]:
        return [(c["status"], c["reason"], c["message"])
                for body in self.api.sent("PATCH", "/status") if isinstance(body, dict)
                for c in body.get("status", {}).get("conditions", [])
                if c.get("type") == CONDITION]


def make_harness(*nodes: api.Node) -> Harness:
    built = build_harness({"schedulerName": "kpysched"}, GANG_37,
                          Listers(generic_workload=True, release=37), *nodes)
    return Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)


def test_v1_37_turns_gang_scheduling_on_with_generic_workload() -> None:
    assert GANG_37.enabled("GangScheduling")
    assert GANG_37.release == 37


@pytest.mark.parametrize(("needed", "scheduled", "remaining", "code", "message"), [
    (3, 0, 3, Code.WAIT, "minCount (3) is not yet satisfied: 0 scheduled, 3 remaining"),
    (3, 2, 0, Code.UNSCHEDULABLE, "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"),
    (2, 0, 1, Code.UNSCHEDULABLE, "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"),
    (2, 2, 1, Code.SUCCESS, ""),
    (1, 1, 0, Code.SUCCESS, ""),
], ids=["waiting", "short-at-the-end", "short-early", "met", "basic-met"])
def test_feasibility_is_gang_schedulings_placement_feasible(
        needed: int, scheduled: int, remaining: int, code: Code, message: str) -> None:
    status = placement.feasibility(needed, scheduled, remaining)
    assert (status.code, status.message()) == (code, message)


async def test_the_whole_gang_binds_and_the_pod_group_says_initially_scheduled() -> None:
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("g", 3)
    for name in ("a", "b"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}  # held at PreEnqueue below minCount, as in v1.36
    harness.member("c", "g")
    await harness.schedule_all()
    assert sorted(harness.bound()) == ["a", "b", "c"]
    assert harness.failed() == {}
    assert harness.conditions() == [("True", "Scheduled", "")]
    paths = [path for method, path, _ in harness.api.requests if method == "PATCH"
             and path.endswith("/status") and "/podgroups/" in path]
    assert paths == ["/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/g/status"]


async def test_a_gang_that_fits_in_part_is_told_the_counts_and_nobody_preempts() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    group_message = f"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, {NO_VICTIMS}"
    # Two fit and are held back in the group's words; the third fits nowhere and, not
    # preempting inside the group's cycle, gets the bare fit error.
    assert sorted(harness.failed().values()) == [
        "0/1 nodes are available: 1 Insufficient cpu.",
        f"pod group is unschedulable, {group_message}",
        f"pod group is unschedulable, {group_message}"]
    assert harness.conditions() == [("False", "Unschedulable", group_message)]
    assert harness.scheduler.cache.assumed_count() == 0


async def test_a_gang_that_cannot_make_min_count_stops_before_trying_the_rest() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 2)
    harness.member("a", "g", cpu="4")
    harness.member("b", "g", cpu="4")
    await harness.schedule_all()
    short = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    # The first fails; then the gang cannot make 2, and the second is not tried: it
    # gets the group's status as it was before PodGroupPostFilter added to it.
    assert sorted(harness.failed().values()) == [
        "0/1 nodes are available: 1 Insufficient cpu.", short]
    assert harness.conditions() == [("False", "Unschedulable", f"{short}, {NO_VICTIMS}")]


async def test_a_basic_group_places_whom_it_can_and_retries_the_rest_at_once() -> None:
    harness = make_harness(node("n1", "4"))
    harness.group("g", None)
    for name in ("a", "b", "c"):
        harness.member(name, "g", cpu="2")
    await harness.schedule_all()
    assert len(harness.bound()) == 2
    assert list(harness.failed().values()) == ["0/1 nodes are available: 1 Insufficient cpu."]
    # The member left over is tried again at once, alone: none of it placed, so its
    # cycle is Unschedulable, and the PodGroup's copy (not showing the True yet) lets
    # the False through, as kube-scheduler v1.37.2's does.
    assert harness.conditions()[-1] == (
        "False", "Unschedulable", f"pod group is unschedulable, {NO_VICTIMS}")


async def test_a_member_without_the_groups_priority_fails_the_group() -> None:
    harness = make_harness(node("n1", "4"))
    harness.group("g", 2, priority=10)
    harness.member("a", "g", priority=10)
    harness.member("b", "g", priority=0)
    await harness.schedule_all()
    assert harness.bound() == {}
    error = ("all pods in a single pod group should have the same priority as the pod "
             "group's priority, got 0 and 10")
    assert set(harness.failed().values()) == {error}
    assert harness.conditions() == [("False", "SchedulerError", error)]


async def test_a_gang_that_may_not_preempt_hears_both_pod_group_post_filters() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    for name in ("a", "b", "c"):
        pod = make_pod(name).group("g").req(cpu="1").obj()
        pod.spec.scheduler_name = "kpysched"
        pod.spec.preemption_policy = "Never"
        harness.pods.on_add(pod)
    await harness.schedule_all()
    # Not eligible is Unschedulable, not unresolvable: DynamicResources' words stay.
    assert harness.conditions() == [(
        "False", "Unschedulable",
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, deallocation and "
        "deletion of ResourceClaims completed, pod group preemption: not eligible due to "
        "preemptionPolicy=Never.")]

