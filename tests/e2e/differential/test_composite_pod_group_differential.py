"""CompositePodGroup, differential, on Kubernetes v1.37.2: kube-scheduler v1.37.2 and
kpysched, both with GenericWorkload, TopologyAwareWorkloadScheduling and the alpha
CompositePodGroup on, must bind the same members of a tree of groups (PodGroups under
CompositePodGroups) to the same nodes, preempt the same pods, give the pending ones
the same FailedScheduling notes and write the same PodGroupInitiallyScheduled
condition on every PodGroup (topology_aware.py says how a scenario runs).

The cluster is this module's own: kube-apiserver and kube-controller-manager get the
three gates too and serve scheduling.k8s.io/v1beta1 (PodGroups) and v1alpha3
(CompositePodGroups). kpysched takes v1.37 from the API server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType
from typing import Any

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
    TreeComposite,
    TreeGroup,
    assert_same_outcome,
    run_topology_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

COMPOSITE_POD_GROUP = gates.Gates(
    feature_gates=MappingProxyType({"GenericWorkload": True,
                                    "TopologyAwareWorkloadScheduling": True,
                                    "CompositePodGroup": True}),
    runtime_config=("scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"),
)


def on(node: str | None, *groups: tuple[str, int]) -> dict[str, str | None]:
    """Each member of these groups (name, members) on `node` (None: pending)."""
    return {f"{name}-m{i}": node for name, count in groups for i in range(count)}


def tree(name: str, nodes: tuple[RackNode, ...], root: TreeComposite,
         *groups: TreeGroup, expect: dict[str, str | None],
         inner: tuple[TreeComposite, ...] = (), **rest: Any) -> TopologyScenario:
    """A tree scenario: `root`, then the `inner` CompositePodGroups, then `groups`."""
    return TopologyScenario(name, nodes, min_count=0, members=0, composites=(root, *inner),
                            groups=groups, expect=expect, **rest)


SCENARIOS = (
    # A root gang of two groups of two, room for all four: every member binds.
    tree("tree-fits-whole", (RackNode("n1", "a", "4"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 2, 2),
         expect=on("n1", ("ga", 2), ("gb", 2))),
    # Room for three of the four: ga fits on its own, gb does not, and the root
    # needs both, so nothing binds.
    tree("one-child-short-nothing-binds", (RackNode("n1", "a", "3"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 2, 2),
         expect=on(None, ("ga", 2), ("gb", 2))),
    # minGroupCount 2 of three children: ga and gb fit, gc (3 cpu a member) does not;
    # the root is satisfied and the two bind, gc stays pending.
    tree("min-group-count-across-children", (RackNode("n1", "a", "4"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 2, 2),
         TreeGroup("gc", "root", 2, 2, member_cpu="3"),
         expect={**on("n1", ("ga", 2), ("gb", 2)), **on(None, ("gc", 2))},
         racy_conditions=frozenset({"ga", "gb"})),
    # A basic root: the child that fits goes alone.
    tree("basic-root-lets-a-child-go-alone", (RackNode("n1", "a", "2"),),
         TreeComposite("root", None),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 3, 3),
         expect={**on("n1", ("ga", 2)), **on(None, ("gb", 3))},
         racy_conditions=frozenset({"ga"})),
    # The rack constraint on the root: each group would fit in either rack alone,
    # together only in rack b.
    tree("topology-constraint-at-the-parent",
         (RackNode("a1", "a", "2"), RackNode("b1", "b", "4")),
         TreeComposite("root", 2, constrained=True),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 2, 2),
         expect=on("b1", ("ga", 2), ("gb", 2))),
    # Two levels: the root (gang 2) over a composite (gang 2 of ga, gb) and gc; room
    # for five of the six members: gb cannot complete, so mid fails, and with it the
    # root, though gc and ga fit.
    tree("two-levels-inner-failure-fails-the-root",
         (RackNode("n1", "a", "5"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "mid", 2, 2), TreeGroup("gb", "mid", 2, 2),
         TreeGroup("gc", "root", 2, 2),
         expect=on(None, ("ga", 2), ("gb", 2), ("gc", 2)),
         inner=(TreeComposite("mid", 2, parent="root"),)),
    # The same tree with room for all six: every member binds.
    tree("two-levels-fit",
         (RackNode("n1", "a", "6"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "mid", 2, 2), TreeGroup("gb", "mid", 2, 2),
         TreeGroup("gc", "root", 2, 2),
         expect=on("n1", ("ga", 2), ("gb", 2), ("gc", 2)),
         inner=(TreeComposite("mid", 2, parent="root"),)),
    # A tree of high priority fits only without the low pod: it preempts for the whole
    # tree, in the CompositePodGroup's name, and its members bind once it is gone.
    tree("tree-preempts-for-all-its-groups", (RackNode("n1", "a", "4"),),
         TreeComposite("root", 2),
         TreeGroup("ga", "root", 2, 2), TreeGroup("gb", "root", 2, 2),
         expect=on("n1", ("ga", 2), ("gb", 2)),
         busy=(("n1", "3"),), busy_priority_class="low", priority_class="high",
         expect_preempted=frozenset({"busy-0"})),
    # The victims are a low tree whose root has disruptionMode all, one member on each
    # node: room on n1 alone would do, but the tree goes whole (both pods), and the
    # preemptor then binds on n1, the roomier node.
    tree("victim-tree-with-disruption-mode-all-goes-whole",
         (RackNode("n1", "a", "3"), RackNode("n2", "a", "2")),
         TreeComposite("root", 1),
         TreeGroup("ga", "root", 1, 1, member_cpu="2"),
         expect=on("n1", ("ga", 1)),
         busy=(("n1", "2"), ("n2", "2")), busy_priority_class="low", priority_class="high",
         victim_composites=(TreeComposite("vroot", 1, disruption_all=True),),
         victim_groups=(TreeGroup("va", "vroot", 1, 1), TreeGroup("vb", "vroot", 1, 1)),
         busy_groups=("va", "vb"),
         expect_preempted=frozenset({"busy-0", "busy-1"})),
)


@pytest.fixture(scope="module")
def composite_cluster(tmp_path_factory: pytest.TempPathFactory,
                      cluster_release: str) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("composite-differential") / "state"
    with gated_cluster_with_both(directory, COMPOSITE_POD_GROUP, cluster_release) as state:
        yield state


@pytest.fixture
async def composite_api(composite_cluster: harness.ClusterState
                        ) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(composite_cluster) as api_client:
        yield api_client


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_outcome_as_kube_scheduler(composite_api: client.ApiClient,
                                              scenario: TopologyScenario) -> None:
    await ensure_priority_classes(composite_api)
    upstream = await run_topology_scenario(composite_api, scenario, UPSTREAM)
    ours = await run_topology_scenario(composite_api, scenario, KPYSCHED)
    assert_same_outcome(scenario, upstream, ours)
