"""Shared fixtures: one real test cluster per run, a fresh namespace per test.

If the cluster cannot be built or started, every test that needs it errors with
the reason (the harness's message carries the log tail); nothing is skipped.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ClusterState]:
    directory = Path(os.environ.get("KPYSCHED_TEST_CLUSTER_DIR") or
                     tmp_path_factory.mktemp("cluster") / "state")
    state = harness.up(directory)
    try:
        yield state
    finally:
        harness.down(directory)


@pytest.fixture
async def api(cluster: harness.ClusterState) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(cluster) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(api)
    try:
        yield name
    finally:
        await kube.delete_namespace(api, name)


@pytest.fixture
async def nodes_to_clean(api: client.ApiClient) -> AsyncIterator[list[str]]:
    """Append node names here; they are deleted when the test ends."""
    names: list[str] = []
    try:
        yield names
    finally:
        await kube.delete_nodes(api, names)
