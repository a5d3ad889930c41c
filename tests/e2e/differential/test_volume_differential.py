"""Differential tests of the volume scenarios (VolumeBinding, VolumeZone,
VolumeRestrictions, NodeVolumeLimits): the same scenario under upstream kube-scheduler
and kpysched must end the same, claims and PVs included (see compare.py).

A file of their own, so the test run's two workers (whole files each) can run them
beside the core scenarios."""

from __future__ import annotations

import pytest

from tests.e2e.differential.compare import TwinApis, same_decision
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.volume_scenarios import VOLUME


@pytest.mark.parametrize("scenario", VOLUME, ids=[s.name for s in VOLUME])
async def test_same_decision_as_kube_scheduler(
    twin_schedulers: None, twin_apis: TwinApis, scenario: Scenario
) -> None:
    await same_decision(twin_apis, scenario)
