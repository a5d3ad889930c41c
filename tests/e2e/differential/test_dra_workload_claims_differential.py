"""ResourceClaims shared by a PodGroup (DRAWorkloadResourceClaims), differential, on
Kubernetes v1.37.2: kube-scheduler v1.37.2 and kpysched, both with GenericWorkload and
DRAWorkloadResourceClaims on, must bind the same pods on the same nodes, give the same
first FailedScheduling notes, write the same PodGroup condition and leave every claim
the same (allocation, reservedFor, finalizers) for a group sharing one claim, pods
outside the group using it, and a group that does not fit freeing what it held
(dra_workload_claims.py says how a scenario runs).

The cluster is this module's own: kube-apiserver (which keeps a PodGroup's
resourceClaims and accepts a PodGroup in a claim's reservedFor only with the gate) and
kube-controller-manager get the gates too and serve scheduling.k8s.io/v1beta1.
kpysched is started with no version flag: it takes v1.37 from the API server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import gates, kube
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.dra_workload_claims import (
    ClaimNode,
    Outsider,
    WorkloadClaimScenario,
    check_upstream,
    run_workload_claim_scenario,
)
from tests.e2e.differential.gated_twins import gated_cluster_with_both

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

WORKLOAD_CLAIMS = gates.Gates(
    feature_gates=MappingProxyType({"GenericWorkload": True,
                                    "DRAWorkloadResourceClaims": True}),
    runtime_config=("scheduling.k8s.io/v1beta1=true",),
)

SCENARIOS = (
    # Two members share one claim nobody allocated: the first member's allocation is
    # shared in the group's cycle, and PreBind reserves the claim for the PodGroup (one
    # entry, not one per pod). Only n0 has devices: the member that reuses the other's
    # allocation in flight must go there too.
    WorkloadClaimScenario(
        "group-shares-one-claim",
        (ClaimNode("n0", devices=2), ClaimNode("n1", devices=0)),
        expect_nodes={"g-0": "n0", "g-1": "n0"}, expect_claim=("n0", ("g",))),
    # The same with a ResourceClaimTemplate: kube-controller-manager makes one claim for
    # the PodGroup (owned by it) and records it in each member's status; the members
    # take it as theirs (IsForPod accepts their PodGroup as owner) and it is reserved
    # for the PodGroup.
    WorkloadClaimScenario(
        "group-shares-one-claim-from-a-template",
        (ClaimNode("n0", devices=2), ClaimNode("n1", devices=0)), template=True,
        expect_nodes={"g-0": "n0", "g-1": "n0"}, expect_claim=("n0", ("g",))),
    # The claim is the PodGroup's (its controller): a pod in no group and a pod of
    # another group that name it through a template's status are held at PreEnqueue
    # (IsForPod: "Pod is not owner" / "neither Pod nor PodGroup h is the owner"), the
    # members bind.
    WorkloadClaimScenario(
        "outsiders-refused",
        (ClaimNode("n0", devices=1),), owned_by_group=True,
        outsiders=(Outsider("lone", None), Outsider("stranger", "h")),
        expect_nodes={"g-0": "n0", "g-1": "n0", "lone": None, "stranger": None},
        expect_claim=("n0", ("g",))),
    # The claim is allocated for the group on a node no member may use (tainted): the
    # group does not fit, PodGroupPostFilter deallocates the claim ("deallocation of
    # PodGroup ResourceClaim completed", in no note or condition), and the next attempt
    # allocates it where the members go.
    WorkloadClaimScenario(
        "unschedulable-group-deallocates-its-claim",
        (ClaimNode("n-taken", tainted=True), ClaimNode("n-free")), allocated_on="n-taken",
        expect_nodes={"g-0": "n-free", "g-1": "n-free"}, expect_claim=("n-free", ("g",))),
    # The claim is allocated for the group where its devices are, but the members do
    # not fit there (cpu): PodGroupPostFilter takes the PodGroup out of reservedFor
    # ("ResourceClaim unreserved for PodGroup") and the group stays pending.
    WorkloadClaimScenario(
        "unschedulable-group-unreserves-its-claim",
        (ClaimNode("n0", cpu="2"),), member_cpu="3", allocated_on="n0",
        expect_nodes={"g-0": None, "g-1": None}, expect_claim=("n0", ())),
)


@pytest.fixture(scope="module")
def workload_claims_cluster(tmp_path_factory: pytest.TempPathFactory
                            ) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("dra-workload-claims") / "state"
    with gated_cluster_with_both(directory, WORKLOAD_CLAIMS, "1.37") as state:
        yield state


@pytest.fixture
async def claims_api(workload_claims_cluster: harness.ClusterState
                     ) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(workload_claims_cluster) as api_client:
        yield api_client


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_workload_claim_outcome_as_kube_scheduler(
        claims_api: client.ApiClient, scenario: WorkloadClaimScenario) -> None:
    upstream = await run_workload_claim_scenario(claims_api, scenario, UPSTREAM)
    check_upstream(scenario, upstream)
    ours = await run_workload_claim_scenario(claims_api, scenario, KPYSCHED)
    assert ours == upstream, f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
