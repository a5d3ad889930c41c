"""A small cache whose entries expire, for review results (upstream caches both
TokenReview and SubjectAccessReview answers for a configured TTL)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# A scraper hitting the port with ever-new tokens must not grow memory without bound.
MAX_ENTRIES = 4096


class TtlCache(Generic[K, V]):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        if len(self._entries) >= MAX_ENTRIES:
            now = self._clock()
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (self._clock() + ttl, value)
