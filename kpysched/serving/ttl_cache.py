"""A small cache whose entries expire, for review results (upstream caches both
TokenReview and SubjectAccessReview answers for a configured TTL).

Bounded and least-recently-used, as upstream's authorizer cache (an LRU expiring
cache): every operation is O(1), so a client sending ever-new tokens or paths makes
each insert cost the same as the first, however full the cache."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# A scraper hitting the port with ever-new tokens must not grow memory without bound.
MAX_ENTRIES = 4096


class TtlCache(Generic[K, V]):
    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._max = max(max_entries, 1)
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    @property
    def size(self) -> int:  # not __len__: callers test `cache or TtlCache()`
        return len(self._entries)

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        if len(self._entries) > self._max:
            # The least recently used goes; an expired one would have gone anyway.
            self._entries.popitem(last=False)
