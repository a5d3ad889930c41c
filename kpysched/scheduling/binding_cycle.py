"""The binding cycle: assume the chosen node, then WaitOnPermit, PreBind, Bind and
PostBind in a task of its own per pod.

The scheduling cycle assumes the pod in the cache at once (Reserve, Permit), so the
next cycle sees the room taken; the binding task then awaits the network. A failed
binding undoes the reservation, forgets the assumed pod and requeues it with backoff;
the room it held may fit pods rejected meanwhile, so those are moved back as for an
assigned pod's deletion.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from kpysched.decisions import record as decisions
from kpysched.extenders import steps as extender_steps
from kpysched.framework.cluster_events import ASSIGNED_POD_DELETE
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from kpysched.scheduling.algorithm import ScheduleResult
from kpysched.scheduling.attempt import Attempt, Attempts
from kpysched.scheduling.context import CycleContext

log = structlog.get_logger(__name__)


def assumed_copy(pod: PodInfo, node: str) -> PodInfo:
    """`pod` as it will be once bound to `node`."""
    return pod.bound_to(node)


class BindingCycle:
    """Assumes pods and starts their binding tasks (which the writes' Binder holds
    while they run: drained on a graceful stop, cancelled when the lease is lost)."""

    def __init__(self, context: CycleContext, attempts: Attempts) -> None:
        self._context = context
        self._attempts = attempts

    def started(self, uid: str) -> bool:
        """Whether the binding task of pod `uid` runs."""
        return self._context.writes.binder.started(_task_name(uid))

    def assume_and_bind(self, attempt: Attempt, result: ScheduleResult) -> None:
        context = self._context
        framework, state = attempt.framework, attempt.state
        pod = attempt.pod
        node = result.node_name
        if context.cache.has_pod(pod.uid):
            # Only a deferred resize (bound, in the cache) gets here. Upstream's cache
            # refuses to assume it, so a resize that fits ends as an error and the pod
            # retries after backoff until the kubelet acts; Permit is never reached.
            self._attempts.failed(attempt, Status.error(
                f"pod {pod.uid}({pod.key}) is in the cache, so can't be assumed"))
            return
        assumed = assumed_copy(pod, node)
        context.cache.assume_pod(assumed, node)
        context.queue.nominator.delete(pod.uid)
        log.debug("pod.assumed", pod=pod.key, node=node)

        status = framework.run_reserve(state, assumed, node)
        if status.ok:
            status = framework.run_permit(state, assumed, node)
        if not status.ok and status.code != Code.WAIT:
            framework.run_unreserve(state, assumed, node)
            context.cache.forget_pod(pod.uid)
            # As upstream's prepareForBindingCycle failure: the nomination is cleared.
            if status.is_rejected:
                # As upstream: a FitError over the one node the pod was given.
                self._attempts.unschedulable(
                    attempt, Diagnosis(1, {node: status}, {status.plugin}), nominated_node="")
            else:
                self._attempts.failed(attempt, status, nominated_node="")
            return
        self._attempts.record(attempt, outcome=decisions.SCHEDULED, node=node)
        context.writes.binder.track(asyncio.get_running_loop().create_task(
            self._run(attempt, assumed, node), name=_task_name(pod.uid)))

    async def _run(self, attempt: Attempt, assumed: PodInfo, node: str) -> None:
        context = self._context
        metrics = context.metrics
        try:
            with metrics.in_flight("binding"):
                status = await self._bind_steps(attempt, assumed, node)
        except Exception as error:
            # A bug in the core must not lose the pod: undo the placement, requeue it.
            log.exception("bind.crashed", pod=assumed.key, node=node)
            status = Status.error(f"binding cycle failed: {type(error).__name__}: {error}")
        if not status.ok:
            self._failed(attempt, assumed, node, status)
            return
        # Bound: from here on nothing may undo the placement, whatever PostBind does.
        framework = attempt.framework
        log.debug("pod.bound", pod=assumed.key, node=node)
        queued = attempt.queued
        metrics.schedule_attempt("scheduled", framework.profile_name,
                                 time.perf_counter() - attempt.started)
        first = queued.initial_attempt_timestamp  # on the queue clock: time.monotonic
        metrics.pod_scheduled(
            queued.attempts, None if first is None else time.monotonic() - first,
            after_flush=context.queue.was_flushed(assumed.uid))
        context.writes.events.scheduled(assumed.pod, framework.profile_name, node)
        self._attempts.record(attempt, outcome=decisions.BOUND)
        context.queue.done(assumed.uid)
        await framework.run_post_bind(attempt.state, assumed, node)

    async def _bind_steps(self, attempt: Attempt, assumed: PodInfo, node: str) -> Status:
        """WaitOnPermit, PreBind and Bind; Success once the pod is bound."""
        context = self._context
        framework, state = attempt.framework, attempt.state
        pod_status = context.writes.status
        # What an earlier failed attempt wrote about the pod (PodScheduled=False) goes
        # out first: queued behind other writes, it could land after the binding and
        # stay on a running pod.
        await pod_status.flush(assumed.uid)
        # NominatedNodeNameForExpectation (beta, on in v1.36): when Permit or PreBind
        # will hold the pod a while, announce where it is going first.
        pre_flight = framework.run_pre_bind_pre_flights(state, assumed, node)
        if pre_flight.code == Code.ERROR or pre_flight.is_rejected:
            return pre_flight
        if pre_flight.ok or framework.will_wait_on_permit(assumed):
            await pod_status.write_nominated_node(assumed.pod, node)
        stage = "Permit"
        status = await framework.wait_on_permit(assumed)
        if status.ok:
            # No plugin can reject the pod from here on: the queue may drop the events it
            # kept for judging a rejection.
            context.queue.release_events(assumed.uid)
            stage = "PreBind"
            status = await framework.run_pre_bind(state, assumed, node,
                                                  cancellable=pre_flight.ok)
        if status.ok:
            stage = "Bind"
            bind_started = time.perf_counter()
            status = await self._bind(attempt, assumed, node)
            if status.code == Code.SKIP:
                status = Status.error("no bind plugin bound the pod")
            context.metrics.bind_finished("success" if status.ok else "error",
                                          time.perf_counter() - bind_started)
        if status.ok:
            return status
        context.metrics.bind_failed(stage)
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

    async def _bind(self, attempt: Attempt, assumed: PodInfo, node: str) -> Status:
        """A binding extender interested in the pod binds it; otherwise the profile's
        Bind plugins do (upstream's bind: extenders first)."""
        extenders = self._context.algorithm.extenders
        if extenders is not None:
            bound = await extender_steps.bind(extenders, assumed, node)
            if bound is not None:
                return bound
        return await attempt.framework.run_bind(attempt.state, assumed, node)

    def _failed(self, attempt: Attempt, assumed: PodInfo, node: str, status: Status) -> None:
        """Upstream's handleBindingCycleError: undo, requeue, and treat the forgotten
        pod as a deleted assigned pod, since pods rejected while it held its node may
        fit now."""
        context = self._context
        log.info("bind.failed", pod=assumed.key, node=node, reason=status.message())
        attempt.framework.run_unreserve(attempt.state, assumed, node)
        uid = assumed.uid
        # Not assumed any more when its deletion already gave the room back and moved
        # the pods (forget_deleted_assumed_pod), as upstream's ForgetPod then fails.
        held_room = context.cache.is_assumed(uid)
        context.cache.forget_pod(uid)
        self._refresh_from_informer(attempt)
        # Upstream fails it with clearNominatedNode: the nominatedNodeName written
        # before PreBind (or by an earlier preemption) goes, in memory and on the pod.
        self._attempts.failed(attempt, status, nominated_node="")
        if held_room:
            context.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None,
                                        pre_check=lambda pod: pod.uid != uid)

    def _refresh_from_informer(self, attempt: Attempt) -> None:
        """The pod as the informer has it now, as upstream's handleSchedulingFailure
        reads it from the pod lister: updates of an assumed pod (the nominatedNodeName
        the binding cycle wrote among them) never reached the queue's copy."""
        queued = attempt.queued
        pods = self._context.pods
        current = pods().get(queued.pod_info.uid) if pods is not None else None
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
        context = self._context
        assumed = context.cache.assumed_pod(uid)
        if assumed is None:
            return
        rejected = False
        for framework in context.frameworks.values():
            waiting = framework.waiting_pods.get(uid)
            if waiting is not None and not waiting.future.done():
                waiting.reject("", "removed")
                rejected = True
        if not rejected:
            context.cache.forget_pod(uid)
        context.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None)


def _task_name(uid: str) -> str:
    return f"bind {uid}"
