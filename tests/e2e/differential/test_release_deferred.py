"""Deferred in-place resizes, differential, on Kubernetes v1.37.2 with
InPlacePodVerticalScalingSchedulerPreemption on (alpha, off by default): kube-scheduler
v1.37.2 and kpysched, both with the gate, must delete the same pods, write the same
Preempted and FailedScheduling notes (none about the resized pod) and leave the
resized pod on its node, neither nominated nor marked unschedulable
(release_deferred.py says how the kubelet's part is played).

The cluster is this module's own: kube-apiserver and kube-controller-manager get the
gate too, since the API server keeps a Node's spec.podPreemptionPolicy only with it.
kpysched is started with no version flag: it takes v1.37 from the API server. Each
scenario runs under both schedulers at once, each on nodes and a namespace of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import gates, kube
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM
from tests.e2e.differential.gated_twins import gated_cluster_with_both
from tests.e2e.differential.release_deferred import (
    GATE,
    SCENARIOS,
    DeferredScenario,
    run_deferred_scenario,
)
from tests.e2e.differential.runner import ensure_priority_classes

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

RESIZE_PREEMPTION = gates.Gates(feature_gates=MappingProxyType({GATE: True}))


@pytest.fixture(scope="module")
def deferred_cluster(tmp_path_factory: pytest.TempPathFactory,
                     cluster_release: str) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("deferred-differential") / "state"
    with gated_cluster_with_both(directory, RESIZE_PREEMPTION, cluster_release) as state:
        yield state


@pytest.fixture
async def deferred_api(deferred_cluster: harness.ClusterState
                       ) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(deferred_cluster) as api_client:
        yield api_client


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_outcome_as_kube_scheduler(deferred_api: client.ApiClient,
                                              scenario: DeferredScenario) -> None:
    await ensure_priority_classes(deferred_api)
    upstream, ours = await asyncio.gather(
        run_deferred_scenario(deferred_api, scenario, UPSTREAM),
        run_deferred_scenario(deferred_api, scenario, KPYSCHED))
    detail = f"\n upstream: {upstream}\n kpysched: {ours}"
    # The scenario means what it says on upstream...
    assert upstream.deleted == scenario.expect_deleted, detail
    assert upstream.resized_node == "n0", detail
    # ... and kpysched ends the same way.
    assert ours == upstream, detail
