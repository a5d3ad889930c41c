"""The scheduling loop and the binding cycles it spawns.

One task pops one pod at a time and decides synchronously against a fresh
snapshot (it never awaits the network); the chosen node is assumed in the cache
at once, and a separate task per pod runs WaitOnPermit, PreBind, Bind and
PostBind. A failed binding undoes the reservation, forgets the assumed pod and
requeues it with backoff; the room it held may fit pods rejected meanwhile, so
those are moved back as for an assigned pod's deletion.

Nothing a pod or a plugin does may end the loop: plugin exceptions already come
back from the framework as Error statuses, and the cycle itself is guarded so a
bug in the core fails that one pod (event, backoff), not the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog

from kpysched.cache.cache import Cache
from kpysched.cache.snapshot import Snapshot
from kpysched.decisions import record as decisions
from kpysched.decisions.record import Decision
from kpysched.decisions.store import DecisionStore
from kpysched.framework.cluster_events import ASSIGNED_POD_DELETE
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from kpysched.queue.scheduling_queue import SchedulingQueue
from kpysched.scheduling.algorithm import Algorithm, ScheduleResult
from kpysched.scheduling.cooperative import holding_the_loop, run_cooperatively, turns_given
from kpysched.scheduling.pod_group_cycle import PodGroupCycle
from kpysched.writes.event_recorder import EventRecorder
from kpysched.writes.pod_status import PodStatusWriter
from kpysched.writes.preemption import PreemptionExecutor

if TYPE_CHECKING:
    from kpysched.scheduling.coscheduling_groups import CoschedulingGroups
    from kpysched.scheduling.group_preemption import DeferredPreemption
    from kpysched.writes.pod_group_status import PodGroupConditionWriter

log = structlog.get_logger(__name__)

UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of one pod, carried from the cycle into its binding."""

    framework: Framework
    queued: QueuedPodInfo
    state: CycleState
    started: float  # perf_counter at the start of the scheduling cycle
    # The pod as popped: the cycle decides for it and assumes it, as upstream's does,
    # even if an update replaced `queued.pod_info` while the cycle paused (the latest
    # is what a failure requeues).
    pod: PodInfo
    recorded: bool = False  # its decision is in the scheduler's DecisionStore
    # Once stored, the decision is the store's: the attempt (and a binding in flight)
    # holds it weakly and updates it only while the store keeps it.
    stored: weakref.ref[Decision] | None = None


# Cycles longer than this are reported (scheduling_cycle.slow, kpysched_slow_cycles_total):
# a hundred times a typical cycle, well below the 10 s renewDeadline.
DEFAULT_SLOW_CYCLE_SECONDS = 1.0


class Scheduler:
    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        queue: SchedulingQueue,
        cache: Cache,
        algorithm: Algorithm,
        recorder: EventRecorder,
        status_writer: PodStatusWriter,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.frameworks = dict(frameworks)
        self.queue = queue
        self.cache = cache
        self.algorithm = algorithm
        self.recorder = recorder
        self.status_writer = status_writer
        self.metrics = metrics
        self.snapshot = Snapshot()
        self.last_progress = time.monotonic()
        # When the current scheduling cycle began (None between cycles): a cycle that
        # never ends is a stuck loop even if nothing else is queued.
        self.busy_since: float | None = None
        self._binding_tasks: set[asyncio.Task[None]] = set()
        self.preemption: PreemptionExecutor | None = None  # set by the application
        # The last decisions, for `kpysched explain`; None when recording is off.
        self.decisions: DecisionStore | None = None
        # Pod groups (GenericWorkload, or Coscheduling enabled): their members are
        # decided together. None when neither is on.
        self.pod_group_cycle: PodGroupCycle | None = None
        # Each decision written on upstream's PodGroup (None while the gate is off) ...
        self.pod_group_writer: PodGroupConditionWriter | None = None
        # ... or reported on scheduler-plugins' (None unless a profile has Coscheduling).
        self.coscheduling_groups: CoschedulingGroups | None = None
        # While a Coscheduling group is tried, the preemptions its members ask for
        # (group_preemption.py); None otherwise, when they are carried out at once.
        self.deferred_preemptions: list[DeferredPreemption] | None = None
        # A cycle holding the loop this long is logged and counted (kpysched's own
        # report; kube-scheduler has none): one tenant's pod can cost every other pod.
        self.slow_cycle_seconds = DEFAULT_SLOW_CYCLE_SECONDS
        # The pod informer's store now, by uid (upstream's pod lister; a relist
        # replaces the mapping); set by the application once the pod reflector
        # exists, None where there is none.
        self.pods: Callable[[], Mapping[str, api.Pod]] | None = None
        self._stopping = False

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
                # events go on meanwhile (kpysched/scheduling/cooperative.py).
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
        return len(self._binding_tasks)

    async def drain_bindings(self, timeout: float) -> None:
        """Graceful stop: let bindings in flight finish (bounded)."""
        if self._binding_tasks:
            await asyncio.wait(set(self._binding_tasks), timeout=timeout)

    async def abort_bindings(self) -> None:
        """The lease is lost: another replica may already be scheduling, so no binding
        may write any more. Cancel them all and wait until they have stopped."""
        tasks = set(self._binding_tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
            log.warning("bindings.aborted", count=len(tasks))

    async def abort_writes(self) -> None:
        """The lease is lost and another replica may already schedule: stop every
        write at once (bindings, victim deletions, events, status patches)."""
        await self.abort_bindings()
        if self.preemption is not None:
            await self.preemption.abort()
        await self.recorder.abort()
        await self.status_writer.abort()
        if self.pod_group_writer is not None:
            await self.pod_group_writer.abort()
        if self.coscheduling_groups is not None:
            await self.coscheduling_groups.writer.abort()

    async def drain_placements(self, timeout: float) -> None:
        """Graceful stop, the part that must end before another replica may lead:
        bindings and victim deletions in flight get `timeout` to finish; what still
        runs then is cancelled and awaited, as when the lease is lost, so that nothing
        this replica decided is written after it releases the Lease."""
        await self.drain_bindings(timeout)
        if self.preemption is not None:
            await self.preemption.drain(timeout)
        await self.abort_bindings()
        if self.preemption is not None:
            await self.preemption.abort()

    async def drain_writes(self, timeout: float) -> None:
        """Graceful stop: placements first (they write events), then the queued events
        and status patches."""
        await self.drain_placements(timeout)
        await self.recorder.drain(timeout)
        await self.status_writer.drain(timeout)
        if self.pod_group_writer is not None:
            await self.pod_group_writer.drain(timeout)
        if self.coscheduling_groups is not None:
            await self.coscheduling_groups.writer.drain(timeout)

    def new_attempt(self, framework: Framework, queued: QueuedPodInfo,
                    started: float | None = None) -> Attempt:
        """A scheduling attempt of `queued`, with its decision record when recording."""
        pod = queued.pod_info
        sampled = self.metrics.should_sample() if self.metrics is not None else False
        attempt = Attempt(framework, queued, CycleState(sampled),
                          time.perf_counter() if started is None else started, pod)
        if self.decisions is not None:
            attempt.state.decision = Decision(
                pod.key, pod.uid, framework.profile_name, queued.attempts,
                datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        return attempt

    def reset_snapshot(self) -> None:
        """After a crashed cycle the snapshot may be half-updated: rebuild it next time."""
        self.snapshot = Snapshot()

    def schedule_one(self, queued: QueuedPodInfo) -> None:
        pod = queued.pod_info
        groups = self.cache.pod_groups
        if (self.pod_group_cycle is not None and groups is not None
                and groups.name_of(pod.pod) is not None):
            # A group's trial assumes and undoes members as one step: no turn inside.
            with holding_the_loop():
                self.pod_group_cycle.run(queued)
            return
        framework = self.frameworks.get(pod.pod.spec.scheduler_name)
        if framework is None or pod.terminating or self.cache.has_pod(pod.uid):
            # Not ours any more, being deleted, or already assumed/bound: nothing to do.
            if framework is not None and pod.terminating:
                self.skip_terminating(pod, framework.profile_name)
            self.queue.done(pod.uid)
            return
        attempt = self.new_attempt(framework, queued)
        try:
            self._schedule(attempt)
            self._report_if_slow(attempt)
        except Exception as error:
            # A bug in the core (plugins cannot get here): fail this pod, keep the loop.
            log.exception("scheduling_cycle.crashed", pod=pod.key)
            if self.cache.is_assumed(pod.uid) and not self._binding_started(pod.uid):
                self.cache.forget_pod(pod.uid)
            self.reset_snapshot()
            self.fail(attempt, None, Status.error(
                f"scheduling cycle failed: {type(error).__name__}: {error}"))

    def skip_terminating(self, pod: PodInfo, profile: str) -> None:
        """Upstream's skipPodSchedule says so when it passes over a pod being deleted."""
        log.info("pod.skipped", pod=pod.key, reason="being deleted")
        self.recorder.failed_scheduling(pod.pod, profile,
                                        f"skip schedule deleting pod: {pod.key}")

    def _report_if_slow(self, attempt: Attempt) -> None:
        seconds = time.perf_counter() - attempt.started
        if seconds < self.slow_cycle_seconds:
            return
        plugin, point, plugin_seconds = attempt.state.slowest_plugin()
        log.warning("scheduling_cycle.slow", pod=attempt.pod.key,
                    profile=attempt.framework.profile_name, seconds=round(seconds, 3),
                    plugin=plugin or None, extension_point=point or None,
                    plugin_seconds=round(plugin_seconds, 3), loop_turns=turns_given())
        if self.metrics is not None:
            self.metrics.slow_cycle(attempt.framework.profile_name, plugin, point)

    def _binding_started(self, uid: str) -> bool:
        return any(task.get_name() == _binding_task_name(uid) for task in self._binding_tasks)

    def _schedule(self, attempt: Attempt) -> None:
        framework, pod = attempt.framework, attempt.pod
        self.cache.update_snapshot(self.snapshot)
        outcome = self.algorithm.schedule(framework, attempt.state, pod, self.snapshot)
        if self.metrics is not None:
            self.metrics.algorithm_duration(time.perf_counter() - attempt.started)
        if turns_given() and self._gone_during_cycle(attempt):
            return

        if isinstance(outcome, Diagnosis):
            nominated = self.post_filter(attempt, outcome)
            self.fail(attempt, outcome, None, nominated)
            return
        if isinstance(outcome, Status):
            self.fail(attempt, None, outcome)
            return
        self.assume_and_bind(attempt, outcome)

    def _gone_during_cycle(self, attempt: Attempt) -> bool:
        """Whether the pod was deleted, began terminating or was bound elsewhere while
        the cycle gave the loop a turn (as upstream's cycle may find, its informers
        never waiting for it): then the decision is dropped, as schedule_one drops such
        a pod before a cycle, and nothing is assumed or written for it."""
        uid = attempt.pod.uid
        if (self.queue.where(uid) == "in_flight" and not attempt.queued.pod_info.terminating
                and not self.cache.has_pod(uid)):
            return False
        log.info("scheduling_cycle.pod_gone", pod=attempt.pod.key,
                 reason="deleted, terminating or bound while the cycle paused")
        self.queue.done(uid)
        return True

    def post_filter(self, attempt: Attempt, diagnosis: Diagnosis) -> str | None:
        """Run PostFilter (preemption); returns the node to nominate, "" to clear a
        nomination, or None to leave it as it is."""
        framework = attempt.framework
        if not framework.post_filter_plugins or diagnosis.num_all_nodes == 0:
            return None
        if self.metrics is not None:
            self.metrics.preemption_attempt()
        result, status, reasons = framework.run_post_filter(
            attempt.state, attempt.pod, diagnosis.statuses(self.snapshot.by_name))
        if not status.ok:
            diagnosis.post_filter_msg = ", ".join(reasons)
        return result.nominated_node_name if result is not None else None

    @staticmethod
    def assumed_copy(pod: PodInfo, node: str) -> PodInfo:
        """`pod` as it will be once bound to `node`."""
        return pod.bound_to(node)

    def assume_and_bind(self, attempt: Attempt, result: ScheduleResult) -> None:
        framework, state = attempt.framework, attempt.state
        pod = attempt.pod
        node = result.node_name
        assumed = self.assumed_copy(pod, node)
        self.cache.assume_pod(assumed, node)
        self.queue.nominator.delete(pod.uid)
        log.debug("pod.assumed", pod=pod.key, node=node)

        status = framework.run_reserve(state, assumed, node)
        if status.ok:
            status = framework.run_permit(state, assumed, node)
        if not status.ok and status.code != Code.WAIT:
            framework.run_unreserve(state, assumed, node)
            self.cache.forget_pod(pod.uid)
            # As upstream's prepareForBindingCycle failure: the nomination is cleared.
            if status.is_rejected:
                # As upstream: a FitError over the one node the pod was given.
                self.fail(attempt, Diagnosis(1, {node: status}, {status.plugin}), None,
                          nominated_node="")
            else:
                self.fail(attempt, None, status, nominated_node="")
            return
        self._record(attempt, outcome=decisions.SCHEDULED, node=node)
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(attempt, assumed, node), name=_binding_task_name(pod.uid))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def _binding_cycle(self, attempt: Attempt, assumed: PodInfo, node: str) -> None:
        try:
            if self.metrics is not None:
                with self.metrics.in_flight("binding"):
                    status = await self._bind_steps(attempt, assumed, node)
            else:
                status = await self._bind_steps(attempt, assumed, node)
        except Exception as error:
            # A bug in the core must not lose the pod: undo the placement, requeue it.
            log.exception("bind.crashed", pod=assumed.key, node=node)
            status = Status.error(f"binding cycle failed: {type(error).__name__}: {error}")
        if not status.ok:
            self._binding_failed(attempt, assumed, node, status)
            return
        # Bound: from here on nothing may undo the placement, whatever PostBind does.
        framework = attempt.framework
        log.debug("pod.bound", pod=assumed.key, node=node)
        if self.metrics is not None:
            queued = attempt.queued
            self.metrics.schedule_attempt("scheduled", framework.profile_name,
                                          time.perf_counter() - attempt.started)
            first = queued.initial_attempt_timestamp  # on the queue clock: time.monotonic
            self.metrics.pod_scheduled(
                queued.attempts, None if first is None else time.monotonic() - first,
                after_flush=self.queue.was_flushed(assumed.uid))
        self.recorder.scheduled(assumed.pod, framework.profile_name, node)
        self._record(attempt, outcome=decisions.BOUND)
        self.queue.done(assumed.uid)
        await framework.run_post_bind(attempt.state, assumed, node)

    async def _bind_steps(self, attempt: Attempt, assumed: PodInfo, node: str) -> Status:
        """WaitOnPermit, PreBind and Bind; Success once the pod is bound."""
        framework, state = attempt.framework, attempt.state
        # What an earlier failed attempt wrote about the pod (PodScheduled=False) goes
        # out first: queued behind other writes, it could land after the binding and
        # stay on a running pod.
        await self.status_writer.flush(assumed.uid)
        # NominatedNodeNameForExpectation (beta, on in v1.36): when Permit or PreBind
        # will hold the pod a while, announce where it is going first.
        pre_flight = framework.run_pre_bind_pre_flights(state, assumed, node)
        if pre_flight.code == Code.ERROR or pre_flight.is_rejected:
            return pre_flight
        if pre_flight.ok or framework.will_wait_on_permit(assumed):
            await self.status_writer.write_nominated_node(assumed.pod, node)
        stage = "Permit"
        status = await framework.wait_on_permit(assumed)
        if status.ok:
            # No plugin can reject the pod from here on: the queue may drop the events it
            # kept for judging a rejection.
            self.queue.release_events(assumed.uid)
            stage = "PreBind"
            status = await framework.run_pre_bind(state, assumed, node,
                                                  cancellable=pre_flight.ok)
        if status.ok:
            stage = "Bind"
            bind_started = time.perf_counter()
            status = await framework.run_bind(state, assumed, node)
            if status.code == Code.SKIP:
                status = Status.error("no bind plugin bound the pod")
            if self.metrics is not None:
                self.metrics.bind_finished("success" if status.ok else "error",
                                           time.perf_counter() - bind_started)
        if status.ok:
            return status
        if self.metrics is not None:
            self.metrics.bind_failed(stage)
        if status.is_rejected and stage != "Permit":
            # Upstream makes a FitError (naming the plugin) of a Permit rejection only:
            # a pod rejected at PreBind or Bind keeps no rejecting plugin, so it retries
            # after its backoff in the error backoff queue (which an idle pop does not
            # take from early) instead of waiting on that plugin's events.
            status = Status(status.code, list(status.reasons))
        if status.code == Code.ERROR and status.plugin and stage != "Permit":
            # Upstream's wording: running PreBind plugin "X": <error>.
            status = Status.error(
                f"running {stage} plugin \"{status.plugin}\": {status.message()}", status.plugin)
        return status

    def _binding_failed(self, attempt: Attempt, assumed: PodInfo, node: str,
                        status: Status) -> None:
        """Upstream's handleBindingCycleError: undo, requeue, and treat the forgotten
        pod as a deleted assigned pod, since pods rejected while it held its node may
        fit now."""
        log.info("bind.failed", pod=assumed.key, node=node, reason=status.message())
        attempt.framework.run_unreserve(attempt.state, assumed, node)
        uid = assumed.uid
        # Not assumed any more when its deletion already gave the room back and moved
        # the pods (forget_deleted_assumed_pod), as upstream's ForgetPod then fails.
        held_room = self.cache.is_assumed(uid)
        self.cache.forget_pod(uid)
        self._refresh_from_informer(attempt)
        # Upstream fails it with clearNominatedNode: the nominatedNodeName written
        # before PreBind (or by an earlier preemption) goes, in memory and on the pod.
        self.fail(attempt, None, status, nominated_node="")
        if held_room:
            self.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None,
                                     pre_check=lambda pod: pod.uid != uid)

    def _refresh_from_informer(self, attempt: Attempt) -> None:
        """The pod as the informer has it now, as upstream's handleSchedulingFailure
        reads it from the pod lister: updates of an assumed pod (the nominatedNodeName
        the binding cycle wrote among them) never reached the queue's copy."""
        queued = attempt.queued
        current = self.pods().get(queued.pod_info.uid) if self.pods is not None else None
        if current is None or current is queued.pod_info.pod:
            return
        # Malformed since (the event handler reported it): the last good copy stays.
        with contextlib.suppress(QuantityError, ValueError):
            queued.pod_info = PodInfo.of(current)

    def forget_deleted_assumed_pod(self, uid: str) -> None:
        """Upstream's handleAssumedPodDeletion: a pod deleted (or terminating) while its
        binding runs gives its room back now, not when the binding fails, which after a
        long PreBind can take minutes. One waiting at Permit is rejected (its binding
        cycle undoes the rest); one further on is forgotten here and its binding left
        to fail. Either way, pods rejected meanwhile may fit now."""
        assumed = self.cache.assumed_pod(uid)
        if assumed is None:
            return
        rejected = False
        for framework in self.frameworks.values():
            waiting = framework.waiting_pods.get(uid)
            if waiting is not None and not waiting.future.done():
                waiting.reject("", "removed")
                rejected = True
        if not rejected:
            self.cache.forget_pod(uid)
        self.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None)

    def fail(self, attempt: Attempt, diagnosis: Diagnosis | None, error: Status | None,
              nominated_node: str | None = None) -> None:
        framework, queued = attempt.framework, attempt.queued
        pod = queued.pod_info
        if diagnosis is not None:
            queued.unschedulable_plugins = {p for p in diagnosis.unschedulable_plugins if p}
            queued.pending_plugins = _pending_plugins(diagnosis)
            message, reason, is_error = diagnosis.message(), UNSCHEDULABLE, False
        else:
            assert error is not None
            if error.is_rejected:
                plugins = {error.plugin} if error.plugin else set()
                queued.unschedulable_plugins = plugins
                queued.pending_plugins = plugins if error.code == Code.PENDING else set()
                message, reason, is_error = error.message(), UNSCHEDULABLE, False
            else:
                message, reason, is_error = error.message(), SCHEDULER_ERROR, True
        if self.metrics is not None:
            self.metrics.schedule_attempt("error" if is_error else "unschedulable",
                                          framework.profile_name,
                                          time.perf_counter() - attempt.started)
        # A pod deleted or bound by someone else meanwhile has left the queue's view:
        # say nothing about it and do not requeue it.
        still_pending = self.queue.where(pod.uid) == "in_flight"
        if still_pending and nominated_node is not None:
            self.queue.nominator.add(pod, nominated_node)
        self.queue.add_unschedulable(queued, error=is_error)
        self._record(attempt, outcome=decisions.ERROR if is_error else decisions.UNSCHEDULABLE,
                     message=message, nominated_node=nominated_node)
        if not still_pending:
            return
        log.info("pod.unschedulable" if not is_error else "pod.schedule_error",
                 pod=pod.key, reason=message)
        latest = queued.pod_info.pod
        self.recorder.failed_scheduling(latest, framework.profile_name, message)
        self.status_writer.set_unschedulable_condition(latest, reason, message, nominated_node)


    def _record(self, attempt: Attempt, **fields: Any) -> None:
        """Store the attempt's decision on first call, update it on later ones (a
        binding that completes or fails after the scheduling cycle)."""
        if self.decisions is None:
            return
        if attempt.recorded:
            kept = attempt.stored() if attempt.stored is not None else None
            if kept is not None:
                self.decisions.update(kept, **fields)
            return
        decision = attempt.state.decision
        if decision is None:
            return
        for name, value in fields.items():
            setattr(decision, name, value)
        attempt.recorded = True
        self.decisions.add(decision)
        # The store keeps the last N records; a binding waiting on a loaded API server
        # must not keep an evicted one (its score arrays are ~60 KB at 5000 nodes:
        # thousands of waiting bindings doubled peak RSS).
        attempt.stored = weakref.ref(decision)
        attempt.state.decision = None


def _pending_plugins(diagnosis: Diagnosis) -> set[str]:
    """The plugins that answered Pending (upstream's Diagnosis.PendingPlugins): their
    Queue hint sends the pod to the active queue at once, skipping its backoff. Nodes
    share a few Status objects, so each distinct one is looked at once."""
    statuses = list(diagnosis.node_to_status.values())
    if diagnosis.absent_status is not None:
        statuses.append(diagnosis.absent_status)
    distinct = dict(zip(map(id, statuses), statuses, strict=True)).values()
    return {status.plugin for status in distinct
            if status.code == Code.PENDING and status.plugin}


def _binding_task_name(uid: str) -> str:
    return f"bind {uid}"
