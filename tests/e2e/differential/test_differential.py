"""Differential tests of the core, affinity and preemption scenarios: the same scenario
under upstream kube-scheduler and kpysched must end the same (see compare.py)."""

from __future__ import annotations

import pytest

from tests.e2e.differential.compare import TwinApis, same_decision
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.scenarios import ALL


@pytest.mark.parametrize("scenario", ALL, ids=[s.name for s in ALL])
async def test_same_decision_as_kube_scheduler(
    twin_schedulers: None, twin_apis: TwinApis, scenario: Scenario
) -> None:
    await same_decision(twin_apis, scenario)
