"""The differential suite's fixtures: a twin of the session's cluster, so that
kube-scheduler and kpysched each run a scenario on a cluster of their own, at once
(compare.py says why).

The twin is started as the session's cluster is (the same components, flags, gates
and Kubernetes release: the module's, tests/conftest.py), on first use, and stopped
when the run ends; kube-scheduler is the same release's (UpstreamScheduler follows
the cluster's).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube
from tests.conftest import Clusters
from tests.e2e.differential.compare import TwinApis, Twins, schedulers_running


@pytest.fixture(scope="module")
def twin_cluster(clusters: Clusters, cluster_release: str) -> harness.ClusterState:
    return clusters.get(cluster_release, role="twin")


@pytest.fixture(scope="module")
def twins(cluster: harness.ClusterState, twin_cluster: harness.ClusterState) -> Twins:
    """kube-scheduler's cluster and kpysched's."""
    return Twins(upstream=cluster, kpysched=twin_cluster)


async def _remove_leftover_nodes(state: harness.ClusterState) -> list[str]:
    async with kube.api_client(state) as api:
        core = client.CoreV1Api(api)
        names = [n.metadata.name for n in (await core.list_node()).items]
        await kube.delete_nodes(api, names)

        async def gone() -> bool:
            return not (await core.list_node()).items

        await kube.wait_for(gone, kube.SETTLE_TIMEOUT_SECONDS, "leftover nodes deleted")
        return names


@pytest.fixture(scope="module")
def twin_schedulers(twins: Twins) -> Iterator[None]:
    """kube-scheduler on its cluster and kpysched on the twin, for a whole test module
    (and the test provisioner on both).

    Each scheduler counts every Node of its cluster in its FailedScheduling text, so
    both clusters start the module with none: a node an earlier file on this worker
    left on the session's cluster would be counted by kube-scheduler alone. (Files run
    one at a time on a worker, so no other test is using them.)"""
    for state in (twins.upstream, twins.kpysched):
        left = asyncio.run(_remove_leftover_nodes(state))
        if left:
            print(f"[differential] removed nodes left on {state.dir}: {left}")
    with schedulers_running(twins):
        yield


@pytest.fixture
async def twin_apis(api: client.ApiClient, twins: Twins) -> AsyncIterator[TwinApis]:
    async with kube.api_client(twins.kpysched) as kpysched_api:
        yield TwinApis(upstream=api, kpysched=kpysched_api)
