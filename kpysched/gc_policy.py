"""How kpysched uses Python's cyclic garbage collector.

Almost all of the heap is the informers' cache: every node and pod of the cluster,
alive for the life of the process. The collector does not know that, so each full
collection walks all of it (about 100 ms with 1000 nodes and 4000 pods) and each
young collection promotes whatever the cycle in flight still holds. Measured on
SchedulingBasic at 1000 nodes, collections took 14 % of the scheduler's CPU, and a
full one landing inside a scheduling cycle is that cycle's latency.

Three changes, all about when collection happens, never about what is freed (reference
counting frees almost everything; the collector only finds cycles):
- start-up's imports run without collections, and what they made (classes, functions,
  module globals: alive until exit) is then moved out of the collector's sight
  (`gc.freeze`): collecting as they ran, or once after them, only walked it (~25 ms of
  CPU, measured with gc.callbacks over `kpysched run`'s imports);
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
def importing() -> Iterator[None]:
    """Start-up's imports inside: no collections meanwhile, everything alive frozen after
    (the collector as it was otherwise)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
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
