"""Reach a plugin's queueing hints the way the queue does: through its registrations.

Hint tables are ported from upstream's Test_isSchedulableAfter* cases; `QUEUE`,
`SKIP` and `ERROR` (the hint raises, which the queue counts as Queue) are the
expected answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    QueueingHint,
    QueueingHintFn,
    Resource,
    with_hints,
)
from kpysched.objects.pod import PodInfo

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
ERROR = "error"

Expected = QueueingHint | str

# The event the volume plugins' claim hints hear.
PVC_ADDED = ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)


def registered(plugin: Any) -> list[tuple[ClusterEvent, bool]]:
    """(event, has a hint) for each registration, in order."""
    return [(r.event, r.hint is not None) for r in with_hints(plugin.events_to_register())]


def hint_for(plugin: Any, incoming: ClusterEvent) -> QueueingHintFn:
    """The hint of the one registration that hears `incoming`."""
    matching = [r for r in with_hints(plugin.events_to_register()) if r.event.matches(incoming)]
    assert len(matching) == 1, matching
    hint = matching[0].hint
    assert hint is not None
    return hint


def check(hint: QueueingHintFn, pod: PodInfo, old: object, new: object,
          expected: Expected) -> None:
    if expected == ERROR:
        with pytest.raises(Exception):  # noqa: B017 - any error counts as Queue
            hint(pod, old, new)
    else:
        assert hint(pod, old, new) is expected
