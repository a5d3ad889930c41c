"""Differential test of DynamicResources' claim writes (issue 33): claims with spaced
opaque config, two pods reserving one claim at once, a deallocation an admission policy
refuses and a wait for binding conditions, under kube-scheduler and kpysched at once on
one cluster (dra_writes.py: each run's messages count the other run's nodes too).

Beside test_dra_differential.py, whose scenarios run each scheduler on a cluster of
its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.e2e.differential import dra_writes
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM, schedulers_side_by_side


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    with schedulers_side_by_side(cluster):
        yield


async def test_claim_writes_as_kube_scheduler(schedulers: None, api: client.ApiClient) -> None:
    """Issue 33: claims with spaced opaque config, two pods reserving one claim at once,
    a deallocation an admission policy refuses and a wait for binding conditions, both
    schedulers at once (dra_writes.py)."""
    barrier = asyncio.Barrier(2)
    upstream, ours = await asyncio.gather(
        dra_writes.run_claim_writes(api, UPSTREAM, barrier),
        dra_writes.run_claim_writes(api, KPYSCHED, barrier))
    dra_writes.check_upstream(upstream)
    assert ours == upstream, f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
