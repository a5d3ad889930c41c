"""Differential tests of the core, affinity and preemption scenarios: the same scenario
under upstream kube-scheduler and kpysched must end the same (see compare.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.e2e.differential.compare import same_decision, schedulers_running
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.scenarios import ALL


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    with schedulers_running(cluster):
        yield


@pytest.mark.parametrize("scenario", ALL, ids=[s.name for s in ALL])
async def test_same_decision_as_kube_scheduler(
    schedulers: None, api: client.ApiClient, scenario: Scenario
) -> None:
    await same_decision(api, scenario)
