"""`Writes`: the scheduler's six writers in one object, built whole.

A graceful stop drains them and a lost lease aborts them, always all of them and in
one order, so that no caller keeps its own list (which once forgot a writer):
placements first (bindings, then the victims' deletes: both write events and status
patches as they finish), then the queued events and status patches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kpysched.api.client import RawApi
from kpysched.objects.scheduling import NEWEST_API_RELEASE
from kpysched.queue.nominator import Nominator
from kpysched.writes.binding import Binder
from kpysched.writes.coscheduling_status import GroupStatusWriter
from kpysched.writes.event_recorder import DropCounter, EventRecorder
from kpysched.writes.pod_group_status import PodGroupConditionWriter
from kpysched.writes.pod_status import PodStatusWriter
from kpysched.writes.preemption import PreemptionExecutor


class Writer(Protocol):
    async def drain(self, timeout: float) -> None: ...

    async def abort(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Writes:
    binder: Binder  # Bindings, and the binding cycles that end in them
    preemption: PreemptionExecutor  # the victims' deletes
    events: EventRecorder
    status: PodStatusWriter  # pod status patches
    # The PodGroupScheduled condition on upstream's PodGroups (GenericWorkload on).
    pod_groups: PodGroupConditionWriter | None = None
    # The status of scheduler-plugins' PodGroups (a profile has Coscheduling).
    coscheduling: GroupStatusWriter | None = None

    @classmethod
    def build(cls, raw: RawApi, binder: Binder, nominator: Nominator, *,
              on_preempted: Callable[[], object] | None = None,
              pod_groups: bool = False, coscheduling: bool = False,
              drops: DropCounter | None = None,
              release: int = NEWEST_API_RELEASE) -> Writes:
        """The writers on `raw`. `binder` is made first, for the handle the frameworks
        are built with; `on_preempted` runs when a preemption has finished."""
        # Events get a rate limiter of their own, as kube-scheduler's separate event
        # client has: at the default QPS, events must not halve the binding rate.
        events = EventRecorder(raw.sibling(lane="events"), drops=drops)
        status = PodStatusWriter(raw)
        return cls(
            binder=binder,
            preemption=PreemptionExecutor(raw, events, status, nominator,
                                          on_finished=on_preempted),
            events=events,
            status=status,
            pod_groups=(PodGroupConditionWriter(raw, release=release) if pod_groups
                        else None),
            coscheduling=GroupStatusWriter(raw) if coscheduling else None,
        )

    def _placements(self) -> tuple[Writer, ...]:
        return (self.binder, self.preemption)

    def _queued(self) -> tuple[Writer, ...]:
        return tuple(writer for writer in (self.events, self.status, self.pod_groups,
                                           self.coscheduling) if writer is not None)

    async def drain_placements(self, timeout: float) -> None:
        """Graceful stop, the part that must end before another replica may lead:
        bindings and victim deletions in flight get `timeout` to finish; what still
        runs then is cancelled and awaited, as when the lease is lost, so that nothing
        this replica decided is written after it releases the Lease."""
        for writer in self._placements():
            await writer.drain(timeout)
        for writer in self._placements():
            await writer.abort()

    async def drain(self, timeout: float) -> None:
        """Graceful stop: placements first (they write events), then the queued events
        and status patches, each given `timeout`."""
        await self.drain_placements(timeout)
        for writer in self._queued():
            await writer.drain(timeout)

    async def abort(self) -> None:
        """The lease is lost and another replica may already schedule: stop every
        write at once."""
        for writer in self._placements() + self._queued():
            await writer.abort()
