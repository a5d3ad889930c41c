"""The compatibility set's stateful part (issue 34): the volume and DRA scenarios on a
Kubernetes v1.36.4 control plane against kube-scheduler v1.36.4, each scheduler on a
twin cluster of its own (compare.py), as test_volume_differential.py and
test_dra_differential.py run them all on the default release (v1.37.2).

Not all of them: CI has room for the whole suite once. Of each plugin's scenarios
(VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits, DynamicResources),
the first of each outcome and FailedScheduling text, so that every plugin places a
pod and refuses one with each text it writes. The stateless scenarios (every other
plugin, preemption and their texts) run whole on v1.36.4 in
batch/test_batch_1_36.py. kpysched, started with no version flag, takes v1.36 from
the API server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from tests.e2e.differential.compare import TwinApis, same_decision
from tests.e2e.differential.dra_scenarios import DRA
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.volume_scenarios import (
    NODE_VOLUME_LIMITS,
    VOLUME_BINDING,
    VOLUME_RESTRICTIONS,
    VOLUME_ZONE,
)

pytestmark = pytest.mark.release("1.36")

# "2 node(s) had no available disk" and "1 node(s) had ..." are one text.
_NODE_COUNT = re.compile(r"^\d+ ")


def first_of_each_outcome(scenarios: Sequence[Scenario]) -> list[Scenario]:
    """The first scenario of each (outcome, FailedScheduling text), in list order."""
    chosen: dict[tuple[str, str], Scenario] = {}
    for scenario in scenarios:
        key = (scenario.expect, _NODE_COUNT.sub("", scenario.expect_reason))
        chosen.setdefault(key, scenario)
    return list(chosen.values())


COMPATIBILITY: list[Scenario] = [
    scenario
    for plugin_scenarios in (VOLUME_BINDING, VOLUME_ZONE, VOLUME_RESTRICTIONS,
                             NODE_VOLUME_LIMITS, DRA)
    for scenario in first_of_each_outcome(plugin_scenarios)
]


@pytest.mark.parametrize("scenario", COMPATIBILITY, ids=[s.name for s in COMPATIBILITY])
async def test_same_decision_as_kube_scheduler_v1_36(
    twin_schedulers: None, twin_apis: TwinApis, scenario: Scenario
) -> None:
    await same_decision(twin_apis, scenario)


def test_every_plugin_places_and_refuses_with_each_of_its_texts() -> None:
    """The selection keeps what the set is for: each plugin's lists have a bound
    scenario and every text a pending one of theirs expects."""
    names = {s.name for s in COMPATIBILITY}
    for plugin_scenarios in (VOLUME_BINDING, VOLUME_ZONE, VOLUME_RESTRICTIONS,
                             NODE_VOLUME_LIMITS, DRA):
        kept = [s for s in plugin_scenarios if s.name in names]
        assert any(s.expect == "bound" for s in kept)
        texts = {_NODE_COUNT.sub("", s.expect_reason) for s in plugin_scenarios
                 if s.expect == "pending"}
        assert texts == {_NODE_COUNT.sub("", s.expect_reason) for s in kept
                         if s.expect == "pending"}
