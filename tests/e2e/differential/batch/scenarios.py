"""The scenarios run as one batch: the stateless core, affinity and preemption table
(tests/e2e/differential/scenarios.py) and more of the same kind."""

from __future__ import annotations

from tests.e2e.differential.model import Scenario
from tests.e2e.differential.scenarios import ALL

BATCH: list[Scenario] = [*ALL]
