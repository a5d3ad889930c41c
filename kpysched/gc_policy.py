"""How kpysched uses Python's cyclic garbage collector.

Almost all of the heap is the informers' cache: every node and pod of the cluster,
alive for the life of the process. The collector does not know that, so each full
collection walks all of it (about 100 ms with 1000 nodes and 4000 pods) and each
young collection promotes whatever the cycle in flight still holds. Measured on
SchedulingBasic at 1000 nodes, collections took 14 % of the scheduler's CPU, and a
full one landing inside a scheduling cycle is that cycle's latency.

Three changes, all about when collection happens, never about what is freed (reference
counting frees almost everything; the collector only finds cycles):
- while start-up imports kpysched and its libraries, nothing is collected: the classes,
  functions and module globals an import makes live until exit, so the collections that
  would run meanwhile (~200 young ones and a full one, ~70 ms of CPU) find next to nothing;
- once the first LIST is in the cache, everything alive is moved out of the
  collector's sight (`gc.freeze`), as the cache it holds lives until exit;
- the young generation is collected after YOUNG_ALLOCATIONS container allocations
  instead of 700, so a scheduling cycle's temporaries are mostly gone by then and
  are not promoted.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_ALLOCATIONS = 20_000


@contextmanager
def paused() -> Iterator[None]:
    """No collections inside (start-up's imports); the collector as it was after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def tune() -> None:
    """At start-up: collect the young generation less often."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_ALLOCATIONS, middle, old)


def freeze_synced_cache() -> None:
    """After the informers' first LIST: what is alive now lives as long as the
    process, so the collector need not walk it again."""
    gc.collect()
    gc.freeze()
