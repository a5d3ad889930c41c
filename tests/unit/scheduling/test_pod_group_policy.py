"""A v1.37 pod group's preemption policy with and without the alpha
PodGroupPreemptionPolicy gate (scheduling/pod_group_policy.py).

Cases from upstream v1.37.2's TestNewPodGroupPreemptorResolvesPreemptionPolicy
(framework/preemption/types_test.go), the preemption-policy rows of TestValidatePodGroup
(schedule_one_podgroup_test.go) and the PreemptNever row of podgrouppreemption_test.go
(its CompositePodGroup rows: test_the_tree_preemption_policy).
"""

from __future__ import annotations

import pytest

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling import pod_group_policy as policy
from tests.unit.builders import make_composite_pod_group, make_pod, make_pod_group
from tests.unit.scheduler_harness import build_harness, node
from tests.unit.scheduling.test_pod_group_preemption import Harness

NEVER, LOWER = "Never", "PreemptLowerPriority"
SAME_AS_GROUP = ("all pods in a single pod group should have the same preemption policy "
                 "as the pod group's preemption policy, got {} and {}")
SAME_ACROSS_PODS = ("all pods in a single pod group should have the same preemption policy, "
                    "got {} and {}")


def pod(name: str, preemption_policy: str | None, priority: int = 0) -> PodInfo:
    built = make_pod(name).group("pg").priority(priority).obj()
    built.spec.preemption_policy = preemption_policy
    return PodInfo.of(built)


def group(preemption_policy: str | None, priority: int | None = None) -> PodGroup:
    made = make_pod_group("pg", None)
    made.spec.preemption_policy = preemption_policy
    made.spec.priority = priority
    return made


@pytest.mark.parametrize(("pod_group", "pods", "gate", "want"), [
    pytest.param(NEVER, [LOWER], True, NEVER,
                 id="PreemptNever is resolved from PodGroup, ignoring policy in pod, enabled"),
    pytest.param(LOWER, [LOWER, None], True, LOWER,
                 id="PreemptLowerPriority is resolved from PodGroup, enabled"),
    pytest.param(NEVER, [LOWER], False, LOWER,
                 id="resolved from pods with PodGroupPreemptionPolicy disabled"),
    pytest.param(LOWER, [NEVER, LOWER, None], False, NEVER,
                 id="resolved from pods when pods differ, disabled"),
    pytest.param(None, [NEVER], True, LOWER,
                 id="a PodGroup without a policy (written with the gate off) preempts"),
])
def test_the_group_preemption_policy(pod_group: str | None, pods: list[str | None], gate: bool,
                                     want: str) -> None:
    members = [pod(f"p{i}", p) for i, p in enumerate(pods)]
    assert policy.group_policy(group(pod_group), members, gate=gate) == want


def root(preemption_policy: str | None) -> CompositePodGroup:
    made = make_composite_pod_group("cpg1")
    made.spec.preemption_policy = preemption_policy
    return made


@pytest.mark.parametrize(("composite", "pods", "gate", "want"), [
    pytest.param(None, [LOWER, None], False, LOWER,
                 id="resolved from pods, CompositePodGroup: LowerPriority when no pod is Never"),
    pytest.param(None, [NEVER, LOWER], False, NEVER,
                 id="resolved from pods, CompositePodGroup: Never when any pod is Never"),
    pytest.param(NEVER, [LOWER], True, NEVER,
                 id="Never is resolved from CompositePodGroup, ignoring policy in pod, enabled"),
    pytest.param(LOWER, [LOWER, NEVER], True, LOWER,
                 id="LowerPriority is resolved from CompositePodGroup, ignoring pods, enabled"),
    pytest.param(NEVER, [LOWER, None], False, LOWER,
                 id="resolved from pods when CompositePodGroup has policy but gate disabled"),
    pytest.param(None, [NEVER], True, LOWER,
                 id="defaults to LowerPriority when CompositePodGroup has none, enabled"),
])
def test_the_tree_preemption_policy(composite: str | None, pods: list[str | None], gate: bool,
                                    want: str) -> None:
    # TestNewPodGroupPreemptorResolvesPreemptionPolicy's CompositePodGroup rows: a
    # tree's policy is its root's, never a child PodGroup's.
    members = [pod(f"p{i}", p) for i, p in enumerate(pods)]
    assert policy.tree_policy(root(composite), members, gate=gate) == want


@pytest.mark.parametrize(("pod_group", "pods", "gate", "error"), [
    pytest.param(NEVER, [NEVER, NEVER], True, None, id="success when preemption policies match"),
    pytest.param(NEVER, [LOWER, NEVER], True, SAME_AS_GROUP.format(LOWER, NEVER),
                 id="failure when different preemption policies across pods"),
    pytest.param(NEVER, [LOWER, LOWER], True, SAME_AS_GROUP.format(LOWER, NEVER),
                 id="failure when different preemption policies across pods and pod group"),
    pytest.param(NEVER, [LOWER, LOWER], False, None,
                 id="success when pods and podgroup do not match but the gate is disabled"),
    pytest.param(NEVER, [LOWER, NEVER], False, SAME_ACROSS_PODS.format(NEVER, LOWER),
                 id="failure when policies do not match across pods and the gate is disabled"),
])
def test_the_group_validation(pod_group: str, pods: list[str], gate: bool,
                              error: str | None) -> None:
    members = [pod(f"p{i}", p) for i, p in enumerate(pods)]
    check = policy.invalid_group if gate else placement.invalid_group
    assert check(members, [], group(pod_group)) == error


def test_priority_is_checked_before_the_policy_member_by_member() -> None:
    members = [pod("p1", LOWER, priority=5)]
    assert policy.invalid_group(members, [], group(NEVER, priority=10)) == (
        "all pods in a single pod group should have the same priority as the pod group's "
        "priority, got 5 and 10")


def test_a_placed_member_is_checked_too() -> None:
    placed = [pod("placed", LOWER)]
    assert policy.invalid_group([pod("p1", NEVER)], placed, group(NEVER)) == (
        SAME_AS_GROUP.format(LOWER, NEVER))


POLICY_37 = Features.from_gates({"GenericWorkload": True, "PodGroupPreemptionPolicy": True},
                                release=37)


def never_group_harness() -> Harness:
    """PodGroupPreemptionPolicy on, one node of 2 CPUs, and PodGroup pg1 (minCount 2,
    priority 100) whose own policy is Never."""
    built = build_harness({"schedulerName": "kpysched"}, POLICY_37,
                          Listers(generic_workload=True, release=37), node("n1", "2"))
    harness = Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)
    harness.group("pg1", 2, 100)
    assert harness.listers.workloads is not None
    stored = harness.listers.workloads.pod_groups.get("default/pg1")
    assert stored is not None
    stored.spec.preemption_policy = NEVER
    return harness


async def test_a_pod_group_whose_policy_is_never_does_not_preempt() -> None:
    # podgrouppreemption_test.go: a preemptor PodGroup with PreemptNever is "not
    # eligible due to preemptionPolicy=Never." (its members agree with it).
    harness = never_group_harness()
    for name in ("low-1", "low-2"):
        harness.pod(name, "1", 10, on="n1")
    await harness.schedule_all()
    for name in ("high-1", "high-2"):
        never = harness.pod(name, "1", 100, group="pg1")
        never.spec.preemption_policy = NEVER
    await harness.schedule_all()
    assert harness.deleted() == []
    status, reason, message = harness.conditions()[-1]
    assert (status, reason) == ("False", "Unschedulable")
    assert message.endswith("pod group preemption: not eligible due to preemptionPolicy=Never.")


async def test_members_disagreeing_with_their_pod_group_fail_it() -> None:
    harness = never_group_harness()
    for name in ("high-1", "high-2"):
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()
    assert harness.bound() == {}
    status, reason, message = harness.conditions()[-1]
    assert (status, reason) == ("False", "SchedulerError")
    assert message == SAME_AS_GROUP.format(LOWER, NEVER)
