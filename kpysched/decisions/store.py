"""The last N decisions, by pod.

Written by the scheduling loop, read by the HTTP server's thread: a lock guards the
index, and readers get JSON built under it, so they never see a half-written record.
Memory is bounded by `capacity` decisions in all; the oldest go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from kpysched.decisions.record import Decision

DEFAULT_CAPACITY = 1000


class DecisionStore:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._by_pod: OrderedDict[str, list[Decision]] = OrderedDict()
        self._count = 0

    def add(self, decision: Decision) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            decisions = self._by_pod.pop(decision.pod, [])
            decisions.append(decision)
            self._by_pod[decision.pod] = decisions
            self._count += 1
            while self._count > self.capacity:
                oldest_pod, oldest = next(iter(self._by_pod.items()))
                oldest.pop(0)
                self._count -= 1
                if not oldest:
                    del self._by_pod[oldest_pod]

    def update(self, decision: Decision, **fields: Any) -> None:
        """Change a stored decision (e.g. Scheduled -> Bound) under the lock."""
        with self._lock:
            for name, value in fields.items():
                setattr(decision, name, value)

    def for_pod(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The pod's decisions as JSON, oldest first; empty when none is kept."""
        with self._lock:
            return [d.to_json() for d in self._by_pod.get(f"{namespace}/{name}", [])]

    def __len__(self) -> int:
        with self._lock:
            return self._count
