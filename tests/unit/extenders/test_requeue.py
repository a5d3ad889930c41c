"""With extenders configured, upstream registers their pseudo-plugin `Extender` for
every cluster event: a pod an extender rejected may fit after any change."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from tests.unit.extenders.run import build

# An event no default plugin registers for.
PDB_ADD = ClusterEvent(Resource.PDB, ActionType.ADD, "PodDisruptionBudgetAdd")


@pytest.mark.parametrize(("extenders", "hears"), [
    pytest.param([{"urlPrefix": "http://e", "filterVerb": "filter"}], True,
                 id="with-extenders"),
    pytest.param([], False, id="without"),
])
def test_the_extender_pseudo_plugin_hears_every_event(
        extenders: list[dict[str, str]], hears: bool) -> None:
    scheduler, _ = build(extenders)
    # Without extenders nothing listens, so the queue never even looks at the event.
    assert scheduler.queue.hints.interested(PDB_ADD) is hears
