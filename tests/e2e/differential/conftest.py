"""The differential suite's fixtures: a twin of the session's cluster, so that
kube-scheduler and kpysched each run a scenario on a cluster of their own, at once
(compare.py says why).

The twin is started as the session's cluster is (the same components, flags and
gates), on first use, and stopped when the run ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube
from tests.conftest import HAND_MADE_NODES
from tests.e2e.differential.compare import TwinApis, Twins, schedulers_running


@pytest.fixture(scope="session")
def twin_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ClusterState]:
    directory = tmp_path_factory.mktemp("twin-cluster") / "state"
    state = harness.up(directory, HAND_MADE_NODES)
    try:
        yield state
    finally:
        harness.down(directory)


@pytest.fixture(scope="session")
def twins(cluster: harness.ClusterState, twin_cluster: harness.ClusterState) -> Twins:
    """kube-scheduler's cluster and kpysched's."""
    return Twins(upstream=cluster, kpysched=twin_cluster)


@pytest.fixture(scope="module")
def twin_schedulers(twins: Twins) -> Iterator[None]:
    """kube-scheduler on its cluster and kpysched on the twin, for a whole test module
    (and the test provisioner on both)."""
    with schedulers_running(twins):
        yield


@pytest.fixture
async def twin_apis(api: client.ApiClient, twins: Twins) -> AsyncIterator[TwinApis]:
    async with kube.api_client(twins.kpysched) as kpysched_api:
        yield TwinApis(upstream=api, kpysched=kpysched_api)
