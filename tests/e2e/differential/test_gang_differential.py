"""Gang scheduling, differential: kube-scheduler v1.36.4 and kpysched, both with the
GenericWorkload and GangScheduling gates on, on a cluster whose API server serves
scheduling.k8s.io/v1alpha2, must bind the same pods, leave the same ones pending with
the same FailedScheduling notes, and write the same PodGroupScheduled condition.

The cluster is this module's own (the session cluster runs upstream's defaults, which
serve no PodGroup): kube-apiserver and kube-controller-manager with the gates, so
PodGroups' protection finalizer is lifted as in a real cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import gates, kube
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential import dra_writes
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.gang import GangPod, GangScenario, Step, run_gang_scenario
from tests.e2e.differential.model import NodeSpec
from tests.e2e.differential.runner import ensure_priority_classes

pytestmark = pytest.mark.e2e

GANG_GATES = "GenericWorkload=true,GangScheduling=true"
HELD_BACK = ("pod group is unschedulable, waiting for minCount pods from a gang to be "
             "scheduled, one or more plugins asked to wait and no plugin rejected pod")


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
                 expect_bound={"g-0": True, "g-1": True, "g-2": False}),
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


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("gang-differential") / "state"
    addons = dataclasses.replace(harness.FULL, kwok=False, node_monitor_grace_period="24h")
    state = harness.up(directory, addons, gates.GANG)
    try:
        with (UpstreamScheduler(state, feature_gates=state.feature_gates),
              KpyschedProcess(state, log_level="info",
                              extra_args=(f"--feature-gates={GANG_GATES}",))):
            yield state
    finally:
        harness.down(directory)


@pytest.fixture
async def gang_api(gang_cluster: harness.ClusterState) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(gang_cluster) as api_client:
        yield api_client


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_gang_outcome_as_kube_scheduler(gang_api: client.ApiClient,
                                                   scenario: GangScenario) -> None:
    await ensure_priority_classes(gang_api)
    upstream = await run_gang_scenario(gang_api, scenario, UPSTREAM)
    ours = await run_gang_scenario(gang_api, scenario, KPYSCHED)
    # The scenario means what it says on upstream...
    for role, bound in scenario.expect_bound.items():
        assert upstream.pods[role].bound == bound, upstream.describe()
    assert upstream.held_back_notes().count(HELD_BACK) == scenario.expect_held_back, \
        upstream.describe()
    # ... and kpysched ends the same way.
    detail = f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
    assert ({r for r, o in ours.pods.items() if o.bound}
            == {r for r, o in upstream.pods.items() if o.bound}), detail
    assert ours.held_back_notes() == upstream.held_back_notes(), detail
    assert ours.conditions == upstream.conditions, detail


async def test_gang_sharing_one_unallocated_claim(gang_api: client.ApiClient) -> None:
    """Issue 33 item 3: the members of a gang share one ResourceClaim nobody allocated;
    the second member reuses the first's in-flight allocation, and both bind (the
    reservation write that loses the race is retried by its pod). Both schedulers at
    once, each on a node of its own (dra_writes.py)."""
    barrier = asyncio.Barrier(2)
    upstream, ours = await asyncio.gather(
        dra_writes.run_shared_claim_gang(gang_api, UPSTREAM, barrier),
        dra_writes.run_shared_claim_gang(gang_api, KPYSCHED, barrier))
    detail = f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
    assert upstream.bound == {"g-0": "n0", "g-1": "n0"}, detail
    assert upstream.claim is not None and upstream.claim.reserved_for == ("g-0", "g-1"), detail
    assert ours == upstream, detail
