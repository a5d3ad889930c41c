"""Topology-aware workload scheduling, differential, on Kubernetes v1.37.2:
kube-scheduler v1.37.2 and kpysched, both with GenericWorkload and the alpha
TopologyAwareWorkloadScheduling on, must bind the same members to the same nodes,
preempt the same pods, give the pending ones the same FailedScheduling notes and write
the same PodGroupInitiallyScheduled condition, for a PodGroup constrained to one rack
(spec.schedulingConstraints.topology) and for one without a constraint
(topology_aware.py says how a scenario runs).

The cluster is this module's own: kube-apiserver and kube-controller-manager get both
gates too (the API server keeps a PodGroup's schedulingConstraints only with
TopologyAwareWorkloadScheduling on) and serve scheduling.k8s.io/v1beta1. kpysched is
started with no version flag: it takes v1.37 from the API server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import gates, kube
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.gated_twins import gated_cluster_with_both
from tests.e2e.differential.runner import ensure_priority_classes
from tests.e2e.differential.topology_aware import (
    RackNode,
    TopologyScenario,
    assert_same_outcome,
    run_topology_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

TOPOLOGY_AWARE = gates.Gates(
    feature_gates=MappingProxyType({"GenericWorkload": True,
                                    "TopologyAwareWorkloadScheduling": True}),
    runtime_config=("scheduling.k8s.io/v1beta1=true",),
)


def pending(count: int) -> dict[str, str | None]:
    return {f"m{i}": None for i in range(count)}


def all_on(node: str, count: int) -> dict[str, str | None]:
    return {f"m{i}": node for i in range(count)}


SCENARIOS = (
    # Rack a's node takes two of the three members, rack b's all three: the gang goes
    # whole to b, where spreading by LeastAllocated would have used a as well.
    TopologyScenario("whole-gang-into-the-rack-it-fits",
                     (RackNode("a1", "a", "2"), RackNode("b1", "b", "3")),
                     min_count=3, members=3, expect=all_on("b1", 3)),
    # Both racks take the whole gang; NodeResourcesFit scores placements
    # MostAllocated, so the rack already in use wins (137 to 125).
    TopologyScenario("fuller-rack-wins-by-placement-score",
                     (RackNode("a1", "a", "4"), RackNode("b1", "b", "4")),
                     min_count=2, members=2, busy=(("b1", "1"),), expect=all_on("b1", 2)),
    # minCount 2 of 4 members: rack a takes all four, the fuller rack b three.
    # PodGroupPodsCount (100 to 75) outweighs NodeResourcesFit (50 each).
    TopologyScenario("rack-taking-more-members-wins-by-pods-count",
                     (RackNode("a1", "a", "4"), RackNode("b1", "b", "4")),
                     min_count=2, members=4, busy=(("b1", "1"),), expect=all_on("a1", 4)),
    # Two racks of two cpus, a gang of four: it would fit spread, in no single rack.
    # Both racks alike, so whichever placement is first says the same.
    TopologyScenario("fits-in-no-single-rack",
                     (RackNode("a1", "a", "2"), RackNode("b1", "b", "2")),
                     min_count=4, members=4, expect=pending(4)),
    # No constraint: one placement, the whole cluster, and its words.
    TopologyScenario("no-constraint-one-placement",
                     (RackNode("a1", "a", "2"), RackNode("b1", "b", "2")),
                     min_count=3, members=3, member_cpu="2", constrained=False,
                     expect=pending(3)),
    # A gang of high priority fits in no rack as it is. PodGroupPostFilter preempts for
    # the whole group: without the low pods both racks fit, the fuller (a: 2 of 2 cpus
    # to 2 of 3) wins, and only the low pod there must go; the members then bind there.
    TopologyScenario("gang-preempts-inside-the-rack-it-goes-to",
                     (RackNode("a1", "a", "2"), RackNode("b1", "b", "3")),
                     min_count=2, members=2, busy=(("a1", "2"), ("b1", "2")),
                     busy_priority_class="low", priority_class="high",
                     expect=all_on("a1", 2), expect_preempted=frozenset({"busy-0"})),
    # No node carries the rack label: no placement at all.
    TopologyScenario("no-node-in-any-rack",
                     (RackNode("n1", None, "4"),),
                     min_count=1, members=1, expect=pending(1)),
)


@pytest.fixture(scope="module")
def topology_cluster(tmp_path_factory: pytest.TempPathFactory,
                     cluster_release: str) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("topology-differential") / "state"
    with gated_cluster_with_both(directory, TOPOLOGY_AWARE, cluster_release) as state:
        yield state


@pytest.fixture
async def topology_api(topology_cluster: harness.ClusterState
                       ) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(topology_cluster) as api_client:
        yield api_client


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_outcome_as_kube_scheduler(topology_api: client.ApiClient,
                                              scenario: TopologyScenario) -> None:
    await ensure_priority_classes(topology_api)
    upstream = await run_topology_scenario(topology_api, scenario, UPSTREAM)
    ours = await run_topology_scenario(topology_api, scenario, KPYSCHED)
    assert_same_outcome(scenario, upstream, ours)
