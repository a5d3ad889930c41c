"""Differential tests of the DynamicResources scenarios (DRA): the same scenario under
upstream kube-scheduler and kpysched must end the same, node, FailedScheduling text
and each ResourceClaim's allocation (devices, pools, driver) included (see compare.py).

A file of its own, so the test run's workers (whole files each) can run it beside
the core and volume scenarios."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.e2e.differential.compare import same_decision, schedulers_running
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
