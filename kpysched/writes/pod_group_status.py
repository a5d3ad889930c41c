"""The condition kube-scheduler writes on upstream's PodGroups after each pod-group
scheduling cycle (PodGroupScheduled on v1.36's scheduling.k8s.io/v1alpha2,
PodGroupInitiallyScheduled on v1.37's v1beta1), as its updatePodGroupCondition writes it:
a strategic-merge patch of podgroups/status, only when the condition changes, never
taking a True back to False (a later cycle for extra members must not undo it), with
the group's generation as observedGeneration.

The writes go through PodStatusWriter's machinery (off the loop, coalesced per
object, drained on stop, dropped when the lease is lost).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kpysched.api.client import RawApi
from kpysched.api.times import api_time
from kpysched.objects.scheduling import (
    NEWEST_API_RELEASE,
    PodGroup,
    api_version,
    scheduled_condition_type,
)
from kpysched.writes.pod_status import PodStatusWriter

# One cycle writes one condition for a whole group: a single writer keeps up.
WRITERS = 1
# How long a True this writer queued speaks for a group whose informer copy does not
# show it yet: far longer than a patch and its watch event take, short enough that
# the groups remembered are only those scheduled lately.
REMEMBER_SECONDS = 120.0


class PodGroupConditionWriter(PodStatusWriter):
    def __init__(self, raw: RawApi, clock: Callable[[], float] = time.monotonic,
                 release: int = NEWEST_API_RELEASE) -> None:
        super().__init__(raw, writers=WRITERS)
        self._clock = clock
        # The release's PodGroup API version and the condition type it writes.
        self._api_version = api_version(release)
        self.condition_type = scheduled_condition_type(release)
        # Groups (by uid) this writer marked scheduled, and when: the informer's copy
        # may not show it yet when the next cycle, for members left over, reports on
        # the group. Oldest first; forgotten once the informer shows it or after
        # REMEMBER_SECONDS, so it holds recent groups only, not every group ever.
        self._scheduled: dict[str, float] = {}

    def _forget_old(self) -> None:
        cutoff = self._clock() - REMEMBER_SECONDS
        while self._scheduled:
            uid, since = next(iter(self._scheduled.items()))
            if since > cutoff:
                break
            del self._scheduled[uid]

    def set_scheduled_condition(self, group: PodGroup, status: str, reason: str,
                                message: str, *, stale_copy: bool = False) -> bool:
        """Write the condition unless unchanged or a True would be taken back. True
        when this is a True the informer's copy did not show and this writer had not
        queued before (a fresh one).

        `stale_copy`: the cycle before this one wrote a fresh True and this cycle came
        at once (v1.37 retries a placed group's left-over members without backoff):
        kube-scheduler's copy cannot show that True yet, and a False goes through, even
        where kpysched's own informer has caught up (a loaded machine delays the retry
        more than the watch; kube-scheduler's retry is immediate)."""
        meta = group.metadata
        current = next((c for c in group.status.conditions
                        if c.type == self.condition_type), None)
        self._forget_old()
        shown_true = current is not None and current.status == "True"
        if shown_true:
            self._scheduled.pop(meta.uid, None)  # the informer shows it now
        if status != "True" and not stale_copy and (shown_true or meta.uid in self._scheduled):
            return False
        fresh = status == "True" and not shown_true and meta.uid not in self._scheduled
        if status == "True" and not shown_true:
            self._scheduled.pop(meta.uid, None)
            self._scheduled[meta.uid] = self._clock()
        elif status != "True":
            self._scheduled.pop(meta.uid, None)
        unchanged = current is not None and (
            current.status, current.reason, current.message,
            current.observed_generation) == (status, reason, message, meta.generation)
        if unchanged:
            return fresh
        # As apimeta.SetStatusCondition: the transition time moves only with the status.
        since = (current.last_transition_time
                 if current is not None and current.status == status
                 and current.last_transition_time else api_time())
        condition = {"type": self.condition_type, "status": status, "reason": reason,
                     "message": message, "observedGeneration": meta.generation,
                     "lastTransitionTime": since}
        self._queue(meta.uid, meta.namespace, meta.name, {"conditions": [condition]})
        return fresh

    def _path(self, namespace: str, name: str) -> str:
        return f"/apis/{self._api_version}/namespaces/{namespace}/podgroups/{name}/status"
