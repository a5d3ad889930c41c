"""Gang scheduling, differential, on Kubernetes v1.37.2: kube-scheduler v1.37.2 and
kpysched, both with GenericWorkload on (which brings gang scheduling in v1.37), on a
cluster whose API server serves scheduling.k8s.io/v1beta1, must bind the same pods,
leave the same ones pending with the same FailedScheduling notes, and write the same
PodGroupInitiallyScheduled condition. test_gang_differential_1_36.py runs a
compatibility set of these scenarios on v1.36.4 (GenericWorkload and GangScheduling,
v1alpha2, PodGroupScheduled).

The cluster is this module's own (the session cluster runs upstream's defaults, which
serve no PodGroup): kube-apiserver and kube-controller-manager with the gates, so
PodGroups' protection finalizer is lifted as in a real cluster. kpysched is started
with no version flag: it takes the release from the API server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import gates, kube
from tests.e2e.differential import dra_writes
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.gang import (
    GangPod,
    GangScenario,
    Step,
    assert_same_outcome,
    run_gang_scenario,
)
from tests.e2e.differential.gated_twins import gated_cluster_with_both
from tests.e2e.differential.model import NodeSpec
from tests.e2e.differential.runner import ensure_priority_classes

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

# What a member that fit is told when its gang did not: v1.36's Permit wait, v1.37's
# feasibility counts (and what PodGroupPostFilter added), after the group's error.
HELD_BACK_1_36 = ("pod group is unschedulable, waiting for minCount pods from a gang to "
                  "be scheduled, one or more plugins asked to wait and no plugin "
                  "rejected pod")
HELD_BACK_1_37_PREFIX = "pod group is unschedulable, minCount ("


def held_back(note: str, release: str) -> bool:
    if release == "1.36":
        return note == HELD_BACK_1_36
    return note.startswith(HELD_BACK_1_37_PREFIX)


def members(group: str, count: int, cpu: str = "1", prefix: str | None = None,
            ) -> tuple[GangPod, ...]:
    return tuple(GangPod(f"{prefix or group}-{i}", group, cpu) for i in range(count))


def node(role: str, cpu: str) -> NodeSpec:
    return NodeSpec(role, cpu=cpu)


SCENARIOS = (
    GangScenario("below-min-count", (node("n0", "4"),),
                 (Step(group=("g", 3)), Step(pods=members("g", 2))),
                 expect_bound={"g-0": False, "g-1": False}),
    GangScenario("fits-exactly", (node("n0", "3"),),
                 (Step(group=("g", 3)), Step(pods=members("g", 3))),
                 expect_bound={"g-0": True, "g-1": True, "g-2": True}),
    GangScenario("fits-only-in-part", (node("n0", "2"), node("n1", "2")),
                 (Step(group=("g", 3)), Step(pods=members("g", 3, cpu="2"))),
                 expect_bound={"g-0": False, "g-1": False, "g-2": False},
                 expect_held_back=2),
    GangScenario("min-count-fits-the-rest-waits", (node("n0", "2"), node("n1", "2")),
                 (Step(group=("g", 2)), Step(pods=members("g", 3, cpu="2"))),
                 expect_bound={"g-0": True, "g-1": True, "g-2": False},
                 # On v1.37 the left-over g-2 is retried at once: on 28 November
                 # kube-scheduler v1.37.2 ended True in 10 runs and False in 5 (all
                 # while other engineers' e2e tests loaded the machine); kpysched True.
                 racy_conditions={"g": frozenset({
                     ("True", "Scheduled", ""),
                     ("False", "Unschedulable", "pod group is unschedulable, pod group "
                      "preemption: No preemption victims found for incoming preemptor"),
                 })}),
    GangScenario("two-groups-compete", (node("n0", "2"), node("n1", "2")),
                 (Step(group=("a", 2)), Step(group=("b", 2)),
                  Step(pods=members("a", 2, cpu="2"), pause=0.5),
                  Step(pods=members("b", 2, cpu="2"))),
                 expect_bound={"a-0": True, "a-1": True, "b-0": False, "b-1": False}),
    GangScenario("group-beside-plain-pods", (node("n0", "3"),),
                 (Step(group=("g", 2)), Step(pods=members("g", 2), pause=1.0),
                  Step(pods=(GangPod("plain-0"), GangPod("plain-1")))),
                 expect_bound={"g-0": True, "g-1": True}),
    GangScenario("group-created-after-its-members", (node("n0", "4"),),
                 (Step(pods=members("g", 2), pause=2.0), Step(group=("g", 2))),
                 expect_bound={"g-0": True, "g-1": True}),
    GangScenario("last-member-arrives-late", (node("n0", "4"),),
                 (Step(group=("g", 3)), Step(pods=members("g", 2), pause=2.0),
                  Step(pods=(GangPod("g-2", "g"),))),
                 expect_bound={"g-0": True, "g-1": True, "g-2": True}),
    GangScenario("basic-policy-group", (node("n0", "4"),),
                 (Step(group=("g", None)), Step(pods=members("g", 3, cpu="2"))),
                 expect_bound={"g-0": True, "g-1": True, "g-2": False}),
    GangScenario("node-added-lets-the-gang-fit", (node("n0", "2"),),
                 (Step(group=("g", 2)), Step(pods=members("g", 2, cpu="2"), pause=3.0),
                  Step(node=node("n1", "2"))),
                 expect_bound={"g-0": True, "g-1": True}),
)


# v1.37 only: what v1.37 added to the pod-group cycle (v1.36 places these groups).
SCENARIOS_1_37 = (
    # Members whose priority is not the PodGroup's (0: it names no priority class)
    # fail the whole group with a SchedulerError.
    GangScenario("members-priority-is-not-the-groups", (node("n0", "4"),),
                 (Step(group=("g", 2)),
                  Step(pods=tuple(GangPod(f"g-{i}", "g", priority_class="low")
                                  for i in range(2)))),
                 expect_bound={"g-0": False, "g-1": False}),
    # A gang that may not preempt (its priority class says Never) fits in part: both
    # PodGroupPostFilter plugins answer, and both their words end the group's message.
    GangScenario("non-preempting-gang-fits-in-part", (node("n0", "2"), node("n1", "2")),
                 (Step(group=("g", 3), group_priority_class="high-nonpreempting"),
                  Step(pods=tuple(GangPod(f"g-{i}", "g", cpu="2",
                                          priority_class="high-nonpreempting")
                                  for i in range(3)))),
                 expect_bound={"g-0": False, "g-1": False, "g-2": False},
                 expect_held_back=2),
    # A gang of higher priority that fits nowhere preempts for the whole group at
    # PodGroupPostFilter: the mid pod is given back first (most important) and stays;
    # both low pods must go; the members are nominated and bind once they are gone.
    GangScenario("gang-preempts-for-the-whole-group", (node("n0", "3"),),
                 (Step(pods=(GangPod("low-0", priority_class="low"),
                             GangPod("low-1", priority_class="low"),
                             GangPod("mid-0", priority_class="mid")), pause=2.0),
                  Step(group=("g", 2), group_priority_class="high"),
                  Step(pods=tuple(GangPod(f"g-{i}", "g", priority_class="high")
                                  for i in range(2)))),
                 expect_bound={"g-0": True, "g-1": True, "mid-0": True},
                 expect_preempted=frozenset({"low-0", "low-1"})),
    # A victim in a PodGroup whose disruptionMode is all takes its whole group along,
    # though one of its members' room would do.
    GangScenario("victim-group-goes-whole", (node("n0", "2"), node("n1", "2")),
                 (Step(group=("v", 2), group_priority_class="low", group_whole=True),
                  Step(pods=tuple(GangPod(f"v-{i}", "v", cpu="2", priority_class="low")
                                  for i in range(2)), pause=2.0),
                  Step(group=("g", 1), group_priority_class="high"),
                  Step(pods=(GangPod("g-0", "g", cpu="2", priority_class="high"),))),
                 expect_bound={"g-0": True},
                 expect_preempted=frozenset({"v-0", "v-1"})),
)
ALL_1_37 = SCENARIOS + SCENARIOS_1_37


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory,
                 cluster_release: str) -> Iterator[harness.ClusterState]:
    """A cluster of the module's release with that release's gang gates, with
    kube-scheduler of the release and kpysched (same gates, release from /version)."""
    directory = tmp_path_factory.mktemp("gang-differential") / "state"
    with gated_cluster_with_both(directory, gates.gang(cluster_release),
                                 cluster_release) as state:
        yield state


@pytest.fixture
async def gang_api(gang_cluster: harness.ClusterState) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(gang_cluster) as api_client:
        yield api_client


async def same_gang_outcome(api: client.ApiClient, scenario: GangScenario,
                            release: str) -> None:
    """Run `scenario` under both schedulers; they must end the same way."""
    await ensure_priority_classes(api)
    upstream = await run_gang_scenario(api, scenario, UPSTREAM, release)
    ours = await run_gang_scenario(api, scenario, KPYSCHED, release)
    # The scenario means what it says on upstream...
    for role, bound in scenario.expect_bound.items():
        assert upstream.pods[role].bound == bound, upstream.describe()
    held = [note for note in upstream.held_back_notes() if held_back(note, release)]
    assert len(held) == scenario.expect_held_back, upstream.describe()
    assert upstream.preempted() == scenario.expect_preempted, upstream.describe()
    # ... and kpysched ends the same way.
    assert_same_outcome(upstream, ours, scenario.racy_conditions)


async def same_outcome_of_a_gang_sharing_one_claim(api: client.ApiClient,
                                                   release: str) -> None:
    """Issue 33 item 3: the members of a gang share one ResourceClaim nobody allocated;
    the second member reuses the first's in-flight allocation, and both bind (the
    reservation write that loses the race is retried by its pod). Both schedulers at
    once, each on a node of its own (dra_writes.py)."""
    barrier = asyncio.Barrier(2)
    upstream, ours = await asyncio.gather(
        dra_writes.run_shared_claim_gang(api, UPSTREAM, barrier, release),
        dra_writes.run_shared_claim_gang(api, KPYSCHED, barrier, release))
    detail = f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
    assert upstream.bound == {"g-0": "n0", "g-1": "n0"}, detail
    assert upstream.claim is not None and upstream.claim.reserved_for == ("g-0", "g-1"), detail
    assert ours == upstream, detail


@pytest.mark.parametrize("scenario", ALL_1_37, ids=[s.name for s in ALL_1_37])
async def test_same_gang_outcome_as_kube_scheduler(gang_api: client.ApiClient,
                                                   cluster_release: str,
                                                   scenario: GangScenario) -> None:
    await same_gang_outcome(gang_api, scenario, cluster_release)


async def test_gang_sharing_one_unallocated_claim(gang_api: client.ApiClient,
                                                  cluster_release: str) -> None:
    await same_outcome_of_a_gang_sharing_one_claim(gang_api, cluster_release)
