"""A CelCache made on its first selector.

The CEL runtime (cel-expr-python, the protobuf descriptors of the Kubernetes library,
cel.py's helpers) costs ~50 ms of start-up CPU to import and each CelCache's two
environments ~25 ms to build, twice per profile (DynamicResources and NodeResourcesFit's
DRA scoring). Most pods, and many clusters, never bring a device selector: those pay
nothing, the first selector pays once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kpysched.plugins.dynamic_resources.request_data import CompiledSelector

if TYPE_CHECKING:
    from kpysched.plugins.dynamic_resources.cel import CelCache


class LazyCelCache:
    """CelCache(max_size)'s `compile`, the cache built (and cel.py imported) on first use."""

    __slots__ = ("_cache", "_max_size")

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size
        self._cache: CelCache | None = None

    def compile(self, expression: str) -> CompiledSelector:
        cache = self._cache
        if cache is None:
            from kpysched.plugins.dynamic_resources.cel import CelCache

            cache = self._cache = CelCache(self._max_size)
        return cache.compile(expression)
