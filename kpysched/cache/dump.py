"""What the scheduler believes, as JSON: GET /debug/cache (with --enable-cache-endpoint).

kube-scheduler answers SIGUSR2 by comparing its cache with its informers and dumping
both into its log. An endpoint serves the same purpose better for a test or an
operator: the dump can be compared with a fresh list from the API server once the
cluster is quiet (the reliability soak does exactly that), and it carries the sizes a
leak would show in (pods in each queue, bindings and asyncio tasks in flight).

The dump is taken on the scheduler's event loop, never on the HTTP server's thread,
because the cache is mutated there without locks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from kpysched.cache.cache import Cache

PATH: Final = "/debug/cache"


def cache_dump(cache: Cache, pending: Callable[[], dict[str, int]],
               bindings_in_flight: Callable[[], int],
               events_in_flight: Callable[[], int]) -> dict[str, Any]:
    """Nodes, and every pod the cache places, by uid: its node and whether it is only
    assumed (binding not yet confirmed by the informer). Events in flight tell a test
    whether every FailedScheduling already recorded has reached the API server."""
    return {
        "nodes": sorted(cache.node_names()),
        "pods": {uid: {"node": node, "assumed": assumed}
                 for uid, node, assumed in cache.placements()},
        "queue": pending(),
        "bindingsInFlight": bindings_in_flight(),
        "eventsInFlight": events_in_flight(),
        "asyncioTasks": len(asyncio.all_tasks()),
    }


def dump_from(loop: asyncio.AbstractEventLoop,
              take: Callable[[], dict[str, Any]]) -> Callable[[], asyncio.Future[Any]]:
    """A dump callable for the server's thread: `take` runs on `loop` (the scheduler's)."""

    async def on_loop() -> dict[str, Any]:
        return take()

    def request() -> asyncio.Future[Any]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(on_loop(), loop))

    return request
