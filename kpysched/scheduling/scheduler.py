"""The scheduling loop: pop a pod, decide, hand the decision on; stop, drain or abort.

One task pops one pod at a time and decides synchronously against a fresh snapshot
(it never awaits the network); the chosen node is assumed in the cache at once and a
binding task per pod goes on from there (binding_cycle.py). A pod group's member
brings its whole group into one cycle (pod_group_cycle.py).

Nothing a pod or a plugin does may end the loop: plugin exceptions already come
back from the framework as Error statuses, and the cycle itself is guarded so a
bug in the core fails that one pod (event, backoff), not the process.
"""

from __future__ import annotations

import asyncio
import os
import time
from functools import partial

import structlog

from kpysched.framework.deferred_resize import is_pod_resize_deferred
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.runtime.cooperative import holding_the_loop, run_cooperatively, turns_given
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.attempt import Attempt, Attempts
from kpysched.scheduling.binding_cycle import BindingCycle
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.pod_group_cycle import PodGroupCycle

log = structlog.get_logger(__name__)

# Cycles longer than this are reported (scheduling_cycle.slow, kpysched_slow_cycles_total):
# a hundred times a typical cycle, well below the 10 s renewDeadline.
DEFAULT_SLOW_CYCLE_SECONDS = 1.0


class Scheduler:
    def __init__(self, context: CycleContext, attempts: Attempts, binding: BindingCycle,
                 *, pod_groups: PodGroupCycle | None = None,
                 slow_cycle_seconds: float = DEFAULT_SLOW_CYCLE_SECONDS) -> None:
        self.context = context
        self.attempts = attempts
        self.binding = binding
        # Pod groups (GenericWorkload, or Coscheduling enabled): their members are
        # decided together. None when neither is on.
        self.pod_groups = pod_groups
        # A cycle holding the loop this long is logged and counted (kpysched's own
        # report; kube-scheduler has none): one tenant's pod can cost every other pod.
        self.slow_cycle_seconds = slow_cycle_seconds
        self.last_progress = time.monotonic()
        # When the current scheduling cycle began (None between cycles): a cycle that
        # never ends is a stuck loop even if nothing else is queued.
        self.busy_since: float | None = None
        self._stopping = False
        # What the event handlers, the application and the tests read most.
        self.frameworks = context.frameworks
        self.queue = context.queue
        self.cache = context.cache

    def responsible_for(self, scheduler_name: str) -> bool:
        return scheduler_name in self.frameworks

    # --- the loop ----------------------------------------------------------------

    async def run(self) -> None:
        while not self._stopping:
            queued = await self.queue.pop()
            if queued is None:
                return
            # Give the core to whatever thread is waiting for it (on a busy machine, the
            # API server) now, between decisions, rather than have the kernel take it
            # in the middle of one. On 2 saturated cores that preemption made most slow
            # cycles (5 ms of wall time around 1.3 ms of CPU). Returns at once when no
            # other thread is waiting.
            os.sched_yield()
            self.busy_since = time.monotonic()
            try:
                # A long cycle pauses at safe points so informers, bindings and
                # events go on meanwhile (kpysched/framework/runtime/cooperative.py).
                await run_cooperatively(partial(self.schedule_one, queued))
            finally:
                self.busy_since = None
            self.last_progress = time.monotonic()
            # Let informers and binding tasks run between decisions.
            await asyncio.sleep(0)

    def stop(self) -> None:
        self._stopping = True
        self.queue.close()

    def bindings_in_flight(self) -> int:
        return self.context.writes.binder.in_flight()

    async def abort_writes(self) -> None:
        """The lease is lost and another replica may already schedule: stop every
        write at once (bindings, victim deletions, events, status patches)."""
        await self.context.writes.abort()

    async def drain_placements(self, timeout: float) -> None:
        """Graceful stop, the part that must end before another replica may lead
        (bindings and victim deletions; see Writes.drain_placements)."""
        await self.context.writes.drain_placements(timeout)

    async def drain_writes(self, timeout: float) -> None:
        """Graceful stop: placements first (they write events), then the queued events
        and status patches."""
        await self.context.writes.drain(timeout)

    def forget_deleted_assumed_pod(self, uid: str) -> None:
        """A pod deleted while its binding runs gives its room back now."""
        self.binding.forget_deleted_assumed_pod(uid)

    # --- one decision ------------------------------------------------------------------

    def schedule_one(self, queued: QueuedPodInfo) -> None:
        pod = queued.pod_info
        groups = self.cache.pod_groups
        deferred = self.queue.deferred_resize and is_pod_resize_deferred(pod.pod)
        if (self.pod_groups is not None and groups is not None and not deferred
                and groups.name_of(pod.pod) is not None):
            # A group's trial assumes and undoes members as one step: no turn inside.
            with holding_the_loop():
                self.pod_groups.run(queued)
            return
        framework = self.frameworks.get(pod.pod.spec.scheduler_name)
        if framework is None or pod.terminating or self._placed(pod, deferred):
            # Not ours any more, being deleted, or already assumed/bound: nothing to do.
            if framework is not None and pod.terminating:
                self.attempts.skip_terminating(pod, framework.profile_name)
            self.queue.done(pod.uid)
            return
        attempt = self.attempts.new(framework, queued)
        try:
            self._schedule(attempt)
            self._report_if_slow(attempt)
        except Exception as error:
            # A bug in the core (plugins cannot get here): fail this pod, keep the loop.
            log.exception("scheduling_cycle.crashed", pod=pod.key)
            if self.cache.is_assumed(pod.uid) and not self.binding.started(pod.uid):
                self.cache.forget_pod(pod.uid)
            self.context.reset_snapshot()
            self.attempts.failed(attempt, Status.error(
                f"scheduling cycle failed: {type(error).__name__}: {error}"))

    def _report_if_slow(self, attempt: Attempt) -> None:
        seconds = time.perf_counter() - attempt.started
        if seconds < self.slow_cycle_seconds:
            return
        plugin, point, plugin_seconds = attempt.state.slowest_plugin()
        log.warning("scheduling_cycle.slow", pod=attempt.pod.key,
                    profile=attempt.framework.profile_name, seconds=round(seconds, 3),
                    plugin=plugin or None, extension_point=point or None,
                    plugin_seconds=round(plugin_seconds, 3), loop_turns=turns_given())
        self.context.metrics.slow_cycle(attempt.framework.profile_name, plugin, point)

    def _schedule(self, attempt: Attempt) -> None:
        context = self.context
        framework, pod = attempt.framework, attempt.pod
        context.cache.update_snapshot(context.snapshot)
        outcome = context.algorithm.schedule(framework, attempt.state, pod, context.snapshot)
        context.metrics.algorithm_duration(time.perf_counter() - attempt.started)
        if turns_given() and self._gone_during_cycle(attempt):
            return

        if isinstance(outcome, Diagnosis):
            nominated = self.attempts.post_filter(attempt, outcome)
            self.attempts.unschedulable(attempt, outcome, nominated)
            return
        if isinstance(outcome, Status):
            self.attempts.failed(attempt, outcome)
            return
        self.binding.assume_and_bind(attempt, outcome)

    def _placed(self, pod: PodInfo, deferred: bool) -> bool:
        """Already assumed or bound, so not to be scheduled. A deferred resize is bound
        by definition: only a copy assumed by an earlier cycle stops it (upstream's
        skipPodSchedule asks only whether the pod is assumed)."""
        return self.cache.is_assumed(pod.uid) if deferred else self.cache.has_pod(pod.uid)

    def _gone_during_cycle(self, attempt: Attempt) -> bool:
        """Whether the pod was deleted, began terminating or was bound elsewhere while
        the cycle gave the loop a turn (as upstream's cycle may find, its informers
        never waiting for it): then the decision is dropped, as schedule_one drops such
        a pod before a cycle, and nothing is assumed or written for it."""
        uid = attempt.pod.uid
        latest = attempt.queued.pod_info
        deferred = self.queue.deferred_resize and is_pod_resize_deferred(latest.pod)
        if (self.queue.where(uid) == "in_flight" and not latest.terminating
                and not self._placed(latest, deferred)):
            return False
        log.info("scheduling_cycle.pod_gone", pod=attempt.pod.key,
                 reason="deleted, terminating or bound while the cycle paused")
        self.queue.done(uid)
        return True
