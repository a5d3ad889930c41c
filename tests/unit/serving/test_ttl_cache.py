"""The review cache: bounded, least recently used out first, entries expire. Issue 31:
once full, each insert rebuilt the whole cache (460x the cost of an insert before)."""

from __future__ import annotations

from kpysched.serving.ttl_cache import MAX_ENTRIES, TtlCache


def test_expired_entries_are_gone() -> None:
    now = [0.0]
    cache: TtlCache[str, int] = TtlCache(lambda: now[0])
    cache.put("a", 1, ttl=10)
    assert cache.get("a") == 1
    now[0] = 10.0
    assert cache.get("a") is None
    cache.put("b", 2, ttl=0)  # a zero TTL caches nothing, as upstream's
    assert cache.get("b") is None


def test_a_full_cache_drops_exactly_the_least_recently_used() -> None:
    cache: TtlCache[int, int] = TtlCache(lambda: 0.0, max_entries=3)
    for key in range(3):
        cache.put(key, key, ttl=10)
    assert cache.get(0) == 0  # 0 used: 1 is now the least recently used
    cache.put(3, 3, ttl=10)
    assert cache.size == 3
    assert [cache.get(key) for key in range(4)] == [0, None, 2, 3]


def test_ever_new_keys_keep_the_cache_at_its_bound() -> None:
    cache: TtlCache[str, bool] = TtlCache(lambda: 0.0)
    for index in range(MAX_ENTRIES * 3):
        cache.put(f"token-{index}", False, ttl=10)
        assert cache.size <= MAX_ENTRIES
    # The newest survive; the oldest went one at a time, never the whole cache at once.
    assert cache.get(f"token-{MAX_ENTRIES * 3 - 1}") is False
    assert cache.get(f"token-{MAX_ENTRIES * 2}") is False
    assert cache.get(f"token-{MAX_ENTRIES * 2 - 1}") is None
