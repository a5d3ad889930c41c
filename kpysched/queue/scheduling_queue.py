"""The scheduling queue: activeQ, backoffQ, unschedulable pods and gated pods.

- activeQ: a heap ordered by the profile's QueueSort `less`; pop() waits on it.
- backoffQ: pods that failed and wait out their backoff (by expiry time).
- unschedulable: pods rejected by plugins; they move back when a cluster event
  that one of those plugins registered for happens, or after 5 minutes anyway.
- gated: pods a PreEnqueue plugin (e.g. SchedulingGates) keeps out.

A pod is in at most one of these, or "in flight" between pop() and done().
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kpysched.framework.events import UNSCHEDULABLE_TIMEOUT, ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.queue.backoff import backoff_seconds
from kpysched.queue.nominator import Nominator

UNSCHEDULABLE_MAX_SECONDS = 300.0  # upstream's podMaxInUnschedulablePodsDuration
BACKOFF_FLUSH_SECONDS = 1.0
UNSCHEDULABLE_FLUSH_SECONDS = 30.0

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PreEnqueue = Callable[[PodInfo], Status]
# plugin name -> events it registered; decides which unschedulable pods an event moves.
EventRegistry = Callable[[str], Iterable[ClusterEvent]]


@dataclass(slots=True)
class _HeapEntry:
    info: QueuedPodInfo
    less: Less
    removed: bool = False

    def __lt__(self, other: _HeapEntry) -> bool:
        return self.less(self.info, other.info)


@dataclass(order=True, slots=True)
class _BackoffEntry:
    expiry: float
    sequence: int
    info: QueuedPodInfo = field(compare=False)
    removed: bool = field(default=False, compare=False)


class SchedulingQueue:
    def __init__(
        self,
        less: Less,
        pre_enqueue: PreEnqueue,
        registered_events: EventRegistry,
        *,
        initial_backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._registered_events = registered_events
        self._initial_backoff = initial_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._clock = clock
        self._active: list[_HeapEntry] = []
        self._active_by_uid: dict[str, _HeapEntry] = {}
        self._backoff: list[_BackoffEntry] = []
        self._backoff_by_uid: dict[str, _BackoffEntry] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._sequence = itertools.count()
        self._wakeup = asyncio.Event()
        self.nominator = Nominator()
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._closed = False
        # (queue, event) -> count, for scheduler_queue_incoming_pods_total.
        self.incoming: dict[tuple[str, str], int] = {}

    # --- bookkeeping -------------------------------------------------------------

    def _count(self, queue: str, event: str) -> None:
        self.incoming[(queue, event)] = self.incoming.get((queue, event), 0) + 1

    def _push_active(self, info: QueuedPodInfo, event: str) -> None:
        entry = _HeapEntry(info, self._less)
        heapq.heappush(self._active, entry)
        self._active_by_uid[info.pod_info.uid] = entry
        self._count("active", event)
        self._wakeup.set()

    def _push_backoff(self, info: QueuedPodInfo, event: str) -> None:
        entry = _BackoffEntry(self._backoff_expiry(info), next(self._sequence), info)
        heapq.heappush(self._backoff, entry)
        self._backoff_by_uid[info.pod_info.uid] = entry
        self._count("backoff", event)

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + backoff_seconds(
            max(info.attempts, 1), self._initial_backoff, self._max_backoff)

    def _take(self, uid: str) -> QueuedPodInfo | None:
        """Remove a pod from whichever queue holds it."""
        if (entry := self._active_by_uid.pop(uid, None)) is not None:
            entry.removed = True
            return entry.info
        if (backoff := self._backoff_by_uid.pop(uid, None)) is not None:
            backoff.removed = True
            return backoff.info
        if (info := self._unschedulable.pop(uid, None)) is not None:
            return info
        return self._gated.pop(uid, None)

    def _enqueue(self, info: QueuedPodInfo, event: str) -> None:
        """Admit through PreEnqueue: gated pods wait aside, others become active."""
        status = self._pre_enqueue(info.pod_info)
        if not status.ok:
            info.gated = True
            info.gating_plugin = status.plugin
            self._gated[info.pod_info.uid] = info
            self._count("gated", event)
            return
        info.gated = False
        info.gating_plugin = ""
        self._push_active(info, event)

    # --- informer-facing API -----------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        if self.contains(pod.uid):
            self.update(pod)
            return
        self.nominator.add_from_status(pod)
        self._enqueue(QueuedPodInfo(pod, timestamp=self._clock()), "PodAdd")

    def update(self, pod: PodInfo) -> None:
        uid = pod.uid
        self.nominator.add_from_status(pod)
        if uid in self._in_flight:
            self._in_flight[uid].pod_info = pod
            return
        if (entry := self._active_by_uid.get(uid)) is not None:
            entry.info.pod_info = pod
            return
        if (backoff := self._backoff_by_uid.get(uid)) is not None:
            backoff.info.pod_info = pod
            return
        if (info := self._gated.pop(uid, None)) is not None:
            info.pod_info = pod
            self._enqueue(info, "PodUpdate")
            return
        if (info := self._unschedulable.pop(uid, None)) is not None:
            # The pod itself changed; it may fit now (upstream re-evaluates too).
            info.pod_info = pod
            self._requeue_after_event(info, "PodUpdate")
            return
        self.add(pod)

    def delete(self, uid: str) -> None:
        self._take(uid)
        self._in_flight.pop(uid, None)
        self.nominator.delete(uid)

    def contains(self, uid: str) -> bool:
        return (uid in self._active_by_uid or uid in self._backoff_by_uid
                or uid in self._unschedulable or uid in self._gated or uid in self._in_flight)

    # --- scheduling-loop API -----------------------------------------------------

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule; None once the queue is closed."""
        while True:
            if self._closed:
                return None
            while self._active:
                entry = heapq.heappop(self._active)
                if entry.removed:
                    continue
                info = entry.info
                del self._active_by_uid[info.pod_info.uid]
                info.attempts += 1
                if info.initial_attempt_timestamp is None:
                    info.initial_attempt_timestamp = self._clock()
                self.scheduling_cycle += 1
                self._in_flight[info.pod_info.uid] = info
                return info
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, uid: str) -> None:
        """The scheduling attempt for `uid` finished (bound or requeued)."""
        self._in_flight.pop(uid, None)

    def add_unschedulable(self, info: QueuedPodInfo, pod_cycle: int, *,
                          error: bool = False) -> None:
        """Requeue a pod whose attempt failed; `error` means it was not a plugin rejection."""
        uid = info.pod_info.uid
        if uid not in self._in_flight:
            return  # deleted while in flight: nothing to requeue
        del self._in_flight[uid]
        info.timestamp = self._clock()
        if error or self._move_request_cycle >= pod_cycle or not info.unschedulable_plugins:
            # Something changed during the attempt, or it failed for a non-plugin reason:
            # try again after backoff rather than waiting for another event.
            self._push_backoff(info, "ScheduleAttemptFailure")
        else:
            self._unschedulable[uid] = info
            self._count("unschedulable", "ScheduleAttemptFailure")

    def _requeue_after_event(self, info: QueuedPodInfo, event: str) -> None:
        if self._backoff_expiry(info) > self._clock():
            self._push_backoff(info, event)
        else:
            self._enqueue(info, event)

    def _interested(self, info: QueuedPodInfo, event: ClusterEvent) -> bool:
        plugins = info.unschedulable_plugins | info.pending_plugins
        if not plugins:
            return True
        return any(registered.matches(event)
                   for plugin in plugins for registered in self._registered_events(plugin))

    def move_on_event(self, event: ClusterEvent) -> int:
        """Move unschedulable pods that a rejecting plugin said this event may help."""
        self._move_request_cycle = self.scheduling_cycle
        moved = 0
        for uid, info in list(self._unschedulable.items()):
            if self._interested(info, event):
                del self._unschedulable[uid]
                self._requeue_after_event(info, event.queue_label())
                moved += 1
        return moved

    def activate_gated(self) -> None:
        """Re-run PreEnqueue for gated pods (e.g. after their gates were removed)."""
        for uid, info in list(self._gated.items()):
            del self._gated[uid]
            self._enqueue(info, "PodUpdate")

    def flush_backoff_completed(self) -> int:
        now = self._clock()
        moved = 0
        while self._backoff and self._backoff[0].expiry <= now:
            entry = heapq.heappop(self._backoff)
            if entry.removed:
                continue
            del self._backoff_by_uid[entry.info.pod_info.uid]
            self._enqueue(entry.info, "BackoffComplete")
            moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        now = self._clock()
        moved = 0
        for uid, info in list(self._unschedulable.items()):
            if now - info.timestamp >= UNSCHEDULABLE_MAX_SECONDS:
                del self._unschedulable[uid]
                self._requeue_after_event(info, UNSCHEDULABLE_TIMEOUT.queue_label())
                moved += 1
        return moved

    async def run_flushers(self) -> None:
        """Periodic moves from backoffQ and (after 5 minutes) from unschedulable."""
        last_unschedulable_flush = self._clock()
        while not self._closed:
            await asyncio.sleep(BACKOFF_FLUSH_SECONDS)
            self.flush_backoff_completed()
            if self._clock() - last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_SECONDS:
                self.flush_unschedulable_leftover()
                last_unschedulable_flush = self._clock()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    # --- introspection (metrics, tests) ------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        return {
            "active": len(self._active_by_uid),
            "backoff": len(self._backoff_by_uid),
            "unschedulable": len(self._unschedulable),
            "gated": len(self._gated),
        }

    def where(self, uid: str) -> str | None:
        for name, holder in (("active", self._active_by_uid), ("backoff", self._backoff_by_uid),
                             ("unschedulable", self._unschedulable), ("gated", self._gated),
                             ("in_flight", self._in_flight)):
            if uid in holder:
                return name
        return None
