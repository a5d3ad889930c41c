"""Cluster events seen while pods are being scheduled (upstream's inFlightPods and
inFlightEvents).

A pod rejected by plugins goes back to the unschedulable pods only if nothing that
happened during its attempt may have helped it; otherwise the event that arrived
mid-cycle would be lost and the pod would wait for the next one (or the 5-minute
flush). So while any pod is in flight, every event some plugin cares about is kept,
with its objects, and a returning pod's hints are asked about the events logged since
it was popped. The log is one list shared by all in-flight pods; each pod remembers
where it started, and events older than the oldest in-flight pod are dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

from kpysched.framework.cluster_events import ClusterEvent


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    event: ClusterEvent
    old: object
    new: object


class InFlightEvents:
    def __init__(self) -> None:
        self._log: deque[LoggedEvent] = deque()
        self._first = 0  # sequence number of _log[0]
        self._starts: dict[str, int] = {}  # pod uid -> sequence number of its first event

    def __contains__(self, uid: str) -> bool:
        return uid in self._starts

    def __len__(self) -> int:
        """Events held for in-flight pods."""
        return len(self._log)

    def start(self, uid: str) -> None:
        """The pod was popped: from now on, events count for it."""
        self._starts[uid] = self._first + len(self._log)

    def record(self, event: ClusterEvent, old: object, new: object) -> bool:
        """Keep the event if any pod is in flight (upstream's addEventIfAnyInFlight)."""
        if not self._starts:
            return False
        self._log.append(LoggedEvent(event, old, new))
        return True

    def record_for(self, uid: str, events: Iterable[ClusterEvent], old: object,
                   new: object) -> bool:
        """The pod's own update while it is in flight (upstream's addEventsIfPodInFlight):
        kept, and reported as handled, only if that pod is in flight."""
        if uid not in self._starts:
            return False
        self._log.extend(LoggedEvent(event, old, new) for event in events)
        return True

    def since_start(self, uid: str) -> list[LoggedEvent] | None:
        """The events logged since the pod was popped; None if it is not tracked (done
        already, e.g. after Permit allowed it)."""
        start = self._starts.get(uid)
        if start is None:
            return None
        return list(islice(self._log, start - self._first, None))

    def done(self, uid: str) -> None:
        """Stop tracking the pod and drop the events no in-flight pod needs any more."""
        if self._starts.pop(uid, None) is None:
            return
        oldest = min(self._starts.values(), default=self._first + len(self._log))
        while self._first < oldest:
            self._log.popleft()
            self._first += 1
