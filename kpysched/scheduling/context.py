"""CycleContext: what every step of a scheduling cycle works with.

The loop (scheduler.py), an attempt's bookkeeping (attempt.py), the binding cycle
(binding_cycle.py) and the pod-group cycle with its preemption receive this one object
when they are built, instead of a reference back to the Scheduler: a step reads the
cluster (cache, snapshot), asks the algorithm, hands pods to the queue and writes
through `writes`, and never calls up into the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kpysched.cache.snapshot import Snapshot

if TYPE_CHECKING:
    from kpysched.cache.cache import Cache
    from kpysched.decisions.store import DecisionStore
    from kpysched.framework.runtime import Framework
    from kpysched.metrics import SchedulerMetrics
    from kpysched.objects import api
    from kpysched.queue.scheduling_queue import SchedulingQueue
    from kpysched.scheduling.algorithm import Algorithm
    from kpysched.scheduling.preemption_sink import PreemptionSink
    from kpysched.writes.bundle import Writes


@dataclass(slots=True)
class CycleContext:
    frameworks: Mapping[str, Framework]  # by schedulerName
    queue: SchedulingQueue
    cache: Cache
    algorithm: Algorithm
    writes: Writes
    metrics: SchedulerMetrics
    # Where the preemptions PostFilter asks for go: carried out at once, or, while a
    # Coscheduling group is tried, held until the group's fate is known
    # (group_preemption.py swaps itself in for the trial).
    preemptions: PreemptionSink
    # The last decisions, for `kpysched explain`; None when recording is off.
    decisions: DecisionStore | None = None
    # The cycle's view of the cluster, brought up to date from the cache at the start
    # of each cycle; replaced whole after a crashed cycle (it may be half-updated).
    snapshot: Snapshot = field(default_factory=Snapshot)
    # The pod informer's store now, by uid (upstream's pod lister; a relist replaces
    # the mapping). The pod informer feeds the loop, so it exists only once the loop
    # does: the application connects it then. None where there is none (tests).
    pods: Callable[[], Mapping[str, api.Pod]] | None = None

    def reset_snapshot(self) -> None:
        """After a crashed cycle the snapshot may be half-updated: rebuild it next time."""
        self.snapshot = Snapshot()
