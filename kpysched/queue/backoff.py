"""Per-pod exponential backoff and the backoff queue (upstream's backoff_queue.go).

Two heaps, as upstream keeps them: pods that plugins rejected (podBackoffQ, which
pop() may take from early when the active queue is empty, SchedulerPopFromBackoffQ)
and pods that failed with an error (podErrorBackoffQ, which only the flush empties).

Upstream also rounds expiries down to whole-second windows under
SchedulerPopFromBackoffQ, flushing on second boundaries; here expiries are exact
(the flusher still runs every second), so a pod leaves backoff at most a second
sooner than upstream would let it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kpysched.framework.interfaces import QueuedPodInfo

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
NO_BACKOFF = -math.inf


def backoff_seconds(count: int, initial: float, maximum: float) -> float:
    """initial * 2^(count-1), capped at maximum; count is the failures backed off from
    (upstream's calculateBackoffDuration); no failure, no backoff."""
    if count <= 0:
        return 0.0
    duration = initial
    for _ in range(count - 1):
        duration *= 2
        if duration > maximum:
            return maximum
    return min(duration, maximum)


@dataclass(slots=True)
class FailureCounts:
    """Upstream's UnschedulableCount and ConsecutiveErrorsCount of one pod."""

    unschedulable: int = 0
    consecutive_errors: int = 0

    def record(self, *, error: bool) -> None:
        if error:
            self.consecutive_errors += 1
        else:
            self.unschedulable += 1
            self.consecutive_errors = 0  # the error is gone

    @property
    def backoff_count(self) -> int:
        """An error in the last attempt backs off by the error streak, else by rejections."""
        return self.consecutive_errors or self.unschedulable


@dataclass(slots=True)
class _Entry:
    expiry: float
    sequence: int
    info: QueuedPodInfo
    less: Less | None  # ties in expiry: activeQ order (podBackoffQ) or arrival
    rejected: bool  # in podBackoffQ, which an idle pop() may take from early
    removed: bool = False

    def __lt__(self, other: _Entry) -> bool:
        if self.expiry != other.expiry:
            return self.expiry < other.expiry
        if self.less is not None:
            return self.less(self.info, other.info)
        return self.sequence < other.sequence


class BackoffQueue:
    def __init__(self, less: Less, initial_seconds: float, max_seconds: float) -> None:
        self._less = less
        self._initial = initial_seconds
        self._max = max_seconds
        self._rejected: list[_Entry] = []
        self._errored: list[_Entry] = []
        self._by_uid: dict[str, _Entry] = {}
        self._rejected_count = 0
        self._sequence = itertools.count()

    def expiry(self, info: QueuedPodInfo, counts: FailureCounts) -> float:
        """When the pod's backoff ends (upstream's getBackoffTime)."""
        count = counts.backoff_count
        if self._max == 0 or count == 0:
            return NO_BACKOFF
        return info.timestamp + backoff_seconds(count, self._initial, self._max)

    @staticmethod
    def is_backing_off(expiry: float, now: float) -> bool:
        # isPodBackingoff: !expiry.Before(now), so the exact expiry still backs off.
        return expiry >= now

    def add(self, info: QueuedPodInfo, expiry: float, *, early: bool = True) -> None:
        """`early=False` keeps a plugin-rejected pod out of an idle pop(): it waits out
        its whole backoff in the heap only the flush empties."""
        self.remove(info.pod_info.uid)
        rejected = early and bool(info.unschedulable_plugins or info.pending_plugins)
        entry = _Entry(expiry, next(self._sequence), info, self._less if rejected else None,
                       rejected)
        heapq.heappush(self._rejected if rejected else self._errored, entry)
        self._by_uid[info.pod_info.uid] = entry
        self._rejected_count += rejected

    def remove(self, uid: str) -> QueuedPodInfo | None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return None
        entry.removed = True
        self._rejected_count -= entry.rejected
        return entry.info

    def in_rejected_heap(self) -> Iterator[QueuedPodInfo]:
        """The pods of every entry of the heap QueueSort orders (podBackoffQ), removed
        ones included: their place still orders the others."""
        return (entry.info for entry in self._rejected)

    def reorder(self, uid: str | None = None) -> None:
        """The order QueueSort gives (expiry ties) may have changed: for one pod whose
        update changed it (pushed again), or, with no uid, for all (heaps rebuilt)."""
        if uid is None:
            heapq.heapify(self._rejected)
            return
        entry = self._by_uid.get(uid)
        if entry is not None and entry.rejected:
            self.add(entry.info, entry.expiry)

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._by_uid.get(uid)
        return entry.info if entry is not None else None

    def __contains__(self, uid: str) -> bool:
        return uid in self._by_uid

    def __len__(self) -> int:
        return len(self._by_uid)

    def has_rejected(self) -> bool:
        return self._rejected_count > 0

    def pop_rejected(self) -> QueuedPodInfo | None:
        """The head of podBackoffQ, backoff over or not (for an idle scheduler)."""
        return self._pop(self._rejected, None)

    def pop_completed(self, now: float) -> list[QueuedPodInfo]:
        """Every pod whose backoff is over, podBackoffQ's before podErrorBackoffQ's."""
        completed: list[QueuedPodInfo] = []
        for heap in (self._rejected, self._errored):
            while (info := self._pop(heap, now)) is not None:
                completed.append(info)
        return completed

    def _pop(self, heap: list[_Entry], now: float | None) -> QueuedPodInfo | None:
        """Pop the live head of `heap`; with `now`, only once its backoff is over."""
        while heap:
            head = heap[0]
            if not head.removed and now is not None and self.is_backing_off(head.expiry, now):
                return None
            heapq.heappop(heap)
            if not head.removed:
                self.remove(head.info.pod_info.uid)
                return head.info
        return None
