"""Differential tests of the DynamicResources scenarios (DRA): the same scenario under
upstream kube-scheduler and kpysched must end the same, node, FailedScheduling text
and each ResourceClaim's allocation (devices, pools, driver) included (see compare.py).

A file of its own, so the test run's workers (whole files each) can run it beside
the core and volume scenarios; the claim writes of issue 33 are in
test_dra_claim_writes.py."""

from __future__ import annotations

import pytest

from tests.e2e.differential.compare import TwinApis, same_decision
from tests.e2e.differential.dra_scenarios import DRA
from tests.e2e.differential.model import Scenario


@pytest.mark.parametrize("scenario", DRA, ids=[s.name for s in DRA])
async def test_same_decision_as_kube_scheduler(
    twin_schedulers: None, twin_apis: TwinApis, scenario: Scenario
) -> None:
    await same_decision(twin_apis, scenario)
