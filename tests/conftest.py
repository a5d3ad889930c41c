"""Shared fixtures: one real test cluster per run, a fresh namespace per test.

If the cluster cannot be built or started, every test that needs it errors with
the reason (the harness's message carries the log tail); nothing is skipped.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube

# The tests' Nodes are hand-made API objects: no kubelet, no Lease, never a heartbeat.
# Node lifecycle would mark them Unknown and taint them `unreachable` 50s after it
# first sees them (upstream's grace period), in the middle of a test; a day is
# longer than any run. KWOK nodes and the default `up` keep upstream's 50s
# (tests/e2e/test_cluster_kwok.py checks that their Leases keep them healthy).
HAND_MADE_NODES = dataclasses.replace(harness.FULL, node_monitor_grace_period="24h")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ClusterState]:
    directory = Path(os.environ.get("KPYSCHED_TEST_CLUSTER_DIR") or
                     tmp_path_factory.mktemp("cluster") / "state")
    state = harness.up(directory, HAND_MADE_NODES)
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
