"""Pod groups in v1.37's queue and with PodGroupPreemptionPolicy, differential, on
Kubernetes v1.37.2: kube-scheduler v1.37.2 and kpysched, both with GenericWorkload and
the alpha PodGroupPreemptionPolicy on, on a cluster whose API server and controller
manager have the same gates (the API server keeps a PodGroup's spec.preemptionPolicy,
set from its priority class, only with the gate) and serve scheduling.k8s.io/v1beta1.

Each scenario runs under both schedulers (gang.py) and must end the same way: the same
pods bound and preempted, the same FailedScheduling notes, the same
PodGroupInitiallyScheduled condition; and upstream must do what the scenario says, so
that it means what it says:

- a PodGroup whose policy is Never (its priority class's) with members that would
  preempt (theirs is PreemptLowerPriority): with the gate, the group's policy is the
  PodGroup's and the members disagree with it, a SchedulerError; nobody is preempted;
- the other way round (members Never, PodGroup PreemptLowerPriority): the same error;
- a PodGroup and members all Never: the group may not preempt;
- a PodGroup and members all PreemptLowerPriority: the group preempts as one;
- one member behind a scheduling gate holds its whole group: nobody is tried, though
  the other members would make minCount (v1.37's queue keeps the group as one entity).

Then both schedulers' /metrics must show v1.37's workload preemption metrics with the
same names, help texts and label sets, after a group preempted a whole victim group and
a single pod preempted a group's member.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType

import pytest
from kubernetes_asyncio import client
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import gates, kube
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.gang import (
    GangOutcome,
    GangPod,
    GangScenario,
    Step,
    assert_same_outcome,
    run_gang_scenario,
)
from tests.e2e.differential.gated_twins import GatedTwins, gated_twins
from tests.e2e.differential.model import NodeSpec
from tests.e2e.differential.runner import ensure_priority_classes

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

RELEASE = "1.37"
POLICY_GATES = gates.Gates(
    feature_gates=MappingProxyType({"GenericWorkload": True, "PodGroupPreemptionPolicy": True}),
    runtime_config=("scheduling.k8s.io/v1beta1=true",))
NEVER_CLASS, LOWER_CLASS = "high-nonpreempting", "high"  # both 1000 (runner.py)
DISAGREE = ("all pods in a single pod group should have the same preemption policy as the "
            "pod group's preemption policy, got {} and {}")
WORKLOAD_PREEMPTION_METRICS = (
    "scheduler_workload_preemption_attempts",
    "scheduler_workload_preemption_victims",
    "scheduler_preemption_workload_disruptions",
    "scheduler_preemption_evaluation_duration_seconds",
    "scheduler_preemption_execution_duration_seconds",
    "scheduler_preemption_pdb_violations",
)


def node(role: str, cpu: str) -> NodeSpec:
    return NodeSpec(role, cpu=cpu)


def members(group: str, count: int, priority_class: str, cpu: str = "1") -> tuple[GangPod, ...]:
    return tuple(GangPod(f"{group}-{i}", group, cpu, priority_class) for i in range(count))


LOW_PODS = Step(pods=(GangPod("low-0", priority_class="low"),
                      GangPod("low-1", priority_class="low")), pause=2.0)

# (scenario, the message every member's note and the condition must carry, or None)
SCENARIOS = (
    (GangScenario("never-pod-group-whose-members-would-preempt", (node("n0", "2"),),
                  (LOW_PODS, Step(group=("g", 2), group_priority_class=NEVER_CLASS,
                        group_preemption_policy="Never"),
                   Step(pods=members("g", 2, LOWER_CLASS))),
                  expect_bound={"low-0": True, "low-1": True, "g-0": False, "g-1": False}),
     DISAGREE.format("PreemptLowerPriority", "Never")),
    (GangScenario("never-members-of-a-preempting-pod-group", (node("n0", "2"),),
                  (LOW_PODS, Step(group=("g", 2), group_priority_class=LOWER_CLASS),
                   Step(pods=members("g", 2, NEVER_CLASS))),
                  expect_bound={"low-0": True, "low-1": True, "g-0": False, "g-1": False}),
     DISAGREE.format("Never", "PreemptLowerPriority")),
    (GangScenario("never-pod-group-and-members-do-not-preempt", (node("n0", "2"),),
                  (LOW_PODS, Step(group=("g", 2), group_priority_class=NEVER_CLASS,
                        group_preemption_policy="Never"),
                   Step(pods=members("g", 2, NEVER_CLASS))),
                  expect_bound={"low-0": True, "low-1": True, "g-0": False, "g-1": False}),
     "pod group preemption: not eligible due to preemptionPolicy=Never."),
    (GangScenario("preempting-pod-group-and-members-preempt", (node("n0", "2"),),
                  (LOW_PODS, Step(group=("g", 2), group_priority_class=LOWER_CLASS),
                   Step(pods=members("g", 2, LOWER_CLASS))),
                  expect_bound={"g-0": True, "g-1": True},
                  expect_preempted=frozenset({"low-0", "low-1"})),
     None),
    # The gated member comes first, so no member is ever tried while it is missing.
    (GangScenario("a-gated-member-holds-its-whole-group", (node("n0", "4"),),
                  (Step(group=("g", 2)),
                   Step(pods=(GangPod("g-2", "g", scheduling_gates=("example.com/hold",)),
                              GangPod("g-0", "g"), GangPod("g-1", "g")))),
                  expect_bound={"g-0": False, "g-1": False, "g-2": False}),
     None),
)

# A higher-priority gang preempts a whole victim group (disruptionMode all) for the
# metrics' sake: a podgroup preemptor, a victim group disrupted, victims removed.
VICTIM_GROUP_PREEMPTED = GangScenario(
    "victim-group-goes-whole", (node("n0", "2"), node("n1", "2")),
    (Step(group=("v", 2), group_priority_class="low", group_whole=True),
     Step(pods=members("v", 2, "low", cpu="2"), pause=2.0),
     Step(group=("g", 1), group_priority_class=LOWER_CLASS),
     Step(pods=members("g", 1, LOWER_CLASS, cpu="2"))),
    expect_bound={"g-0": True}, expect_preempted=frozenset({"v-0", "v-1"}))
# And a single pod preempts a member of a group (disruptionMode single): a pod
# preemptor (upstream counts no pod-group disruption for a pod's candidate).
POD_PREEMPTS_A_MEMBER = GangScenario(
    "pod-preempts-a-group-member", (node("n0", "2"),),
    (Step(group=("v", 1), group_priority_class="low"),
     Step(pods=members("v", 1, "low", cpu="2"), pause=2.0),
     Step(pods=(GangPod("high-0", cpu="2", priority_class=LOWER_CLASS),))),
    expect_bound={"high-0": True}, expect_preempted=frozenset({"v-0"}))


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatedTwins]:
    """A v1.37.2 cluster with GenericWorkload and PodGroupPreemptionPolicy on every
    component, kube-scheduler v1.37.2 and kpysched with the same gates."""
    directory = tmp_path_factory.mktemp("pod-group-queue-differential") / "state"
    with gated_twins(directory, POLICY_GATES, RELEASE) as both:
        yield both


@pytest.fixture
async def pg_api(twins: GatedTwins) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(twins.state) as api_client:
        yield api_client


async def run_both(api: client.ApiClient,
                   scenario: GangScenario) -> tuple[GangOutcome, GangOutcome]:
    await ensure_priority_classes(api)
    upstream = await run_gang_scenario(api, scenario, UPSTREAM, RELEASE)
    ours = await run_gang_scenario(api, scenario, KPYSCHED, RELEASE)
    # The scenario means what it says on upstream...
    for role, bound in scenario.expect_bound.items():
        assert upstream.pods[role].bound == bound, upstream.describe()
    assert upstream.preempted() == scenario.expect_preempted, upstream.describe()
    # ... and kpysched ends the same way.
    assert_same_outcome(upstream, ours)
    return upstream, ours


@pytest.mark.parametrize(("scenario", "words"), SCENARIOS, ids=[s.name for s, _ in SCENARIOS])
async def test_same_outcome_as_kube_scheduler(pg_api: client.ApiClient,
                                              scenario: GangScenario,
                                              words: str | None) -> None:
    upstream, _ = await run_both(pg_api, scenario)
    if words is not None:
        # The PodGroup says why (its members' notes follow the cycle's rules and are
        # compared above).
        condition = upstream.conditions["g"]
        assert condition is not None and words in condition[2], upstream.describe()
    if scenario.name == "a-gated-member-holds-its-whole-group":
        # Never tried: no note, no condition.
        assert all(o.note is None for o in upstream.pods.values()), upstream.describe()
        assert upstream.conditions["g"] is None, upstream.describe()


def workload_preemption_series(text: str) -> dict[str, tuple[str, frozenset[frozenset[
        tuple[str, str]]]]]:
    """name -> (help, the label sets of its series, bucket bounds left out)."""
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name in WORKLOAD_PREEMPTION_METRICS:
            label_sets = frozenset(
                frozenset((k, v) for k, v in sample.labels.items() if k != "le")
                for sample in family.samples)
            found[family.name] = (family.documentation, label_sets)
    return found


# A group that preempted is retried when its victims' pods change. If the retry comes
# while they are still terminating, its PodGroupPostFilter finds no victim left to
# take (terminating pods are not eligible) and counts an UnschedulableAndUnresolvable
# attempt; if the deletions are done first, the group just fits. Which one happens is
# the API server's timing, not the scheduler's: kube-scheduler v1.37.2 counted it in a
# loaded cold CI run (28 November) and not in the runs before. Either scheduler may
# have these series; every other series must be the same in both.
RACY_SERIES = MappingProxyType({
    "scheduler_workload_preemption_attempts": frozenset({
        frozenset({("result", "UnschedulableAndUnresolvable")})}),
    "scheduler_preemption_evaluation_duration_seconds": frozenset({
        frozenset({("preemptor", "podgroup"), ("result", "UnschedulableAndUnresolvable")})}),
})


def without_racy_series(found: dict[str, tuple[str, frozenset[frozenset[tuple[str, str]]]]]
                        ) -> dict[str, tuple[str, frozenset[frozenset[tuple[str, str]]]]]:
    return {name: (help_text, label_sets - RACY_SERIES.get(name, frozenset()))
            for name, (help_text, label_sets) in found.items()}


async def test_workload_preemption_metrics_match(pg_api: client.ApiClient,
                                                 twins: GatedTwins) -> None:
    await run_both(pg_api, VICTIM_GROUP_PREEMPTED)
    await run_both(pg_api, POD_PREEMPTS_A_MEMBER)
    theirs = workload_preemption_series(twins.upstream.metrics())
    status, body = twins.kpysched.get("/metrics")
    assert status == 200
    ours = workload_preemption_series(body)
    # No budget was violated: that family has no series in either (a labelled family
    # with none is not written).
    assert set(theirs) == set(WORKLOAD_PREEMPTION_METRICS) - {
        "scheduler_preemption_pdb_violations"}, sorted(theirs)
    assert without_racy_series(ours) == without_racy_series(theirs)
    # The group's preemption is in both: its attempt, evaluation, victims, the victim
    # group it disrupted and the removal.
    attempts = theirs["scheduler_workload_preemption_attempts"][1]
    assert frozenset({("result", "Success")}) in attempts
    disruptions = theirs["scheduler_preemption_workload_disruptions"][1]
    assert frozenset({("preemptor", "podgroup")}) in disruptions
    # The single pod's preemption is evaluated as a pod's (it counts no disruption).
    evaluations = theirs["scheduler_preemption_evaluation_duration_seconds"][1]
    assert frozenset({("preemptor", "pod"), ("result", "Success")}) in evaluations
