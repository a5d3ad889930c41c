"""Differential tests of the DynamicResources scenarios (DRA): the same scenario under
upstream kube-scheduler and kpysched must end the same, node, FailedScheduling text
and each ResourceClaim's allocation (devices, pools, driver) included (see compare.py).

A file of its own, so the test run's workers (whole files each) can run it beside
the core and volume scenarios."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.e2e.differential import dra_writes
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM, same_decision, schedulers_running
from tests.e2e.differential.dra_scenarios import DRA
from tests.e2e.differential.model import Scenario


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    with schedulers_running(cluster):
        yield


@pytest.mark.parametrize("scenario", DRA, ids=[s.name for s in DRA])
async def test_same_decision_as_kube_scheduler(
    schedulers: None, api: client.ApiClient, scenario: Scenario
) -> None:
    await same_decision(api, scenario)


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
