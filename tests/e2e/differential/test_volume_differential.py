"""Differential tests of the volume scenarios (VolumeBinding, VolumeZone,
VolumeRestrictions, NodeVolumeLimits): the same scenario under upstream kube-scheduler
and kpysched must end the same, claims and PVs included (see compare.py).

A file of their own, so the test run's two workers (whole files each) can run them
beside the core scenarios."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.e2e.differential.compare import same_decision, schedulers_running
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.volume_scenarios import VOLUME


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    with schedulers_running(cluster):
        yield


@pytest.mark.parametrize("scenario", VOLUME, ids=[s.name for s in VOLUME])
async def test_same_decision_as_kube_scheduler(
    schedulers: None, api: client.ApiClient, scenario: Scenario
) -> None:
    await same_decision(api, scenario)
