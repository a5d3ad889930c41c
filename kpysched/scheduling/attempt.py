"""One scheduling attempt: how it starts, how it fails, and what it records.

An `Attempt` is carried from the scheduling cycle into its binding. `Attempts` holds
the steps every cycle (a single pod's, a pod group's, a binding's) shares: starting an
attempt with its decision record, running PostFilter, failing it (unschedulable: the
pod waits for an event that may help; an error: it goes to backoff) and recording how
it ended. A group's members end in a `GroupOutcome` of `MemberResult`s.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from kpysched.decisions import record as decisions
from kpysched.decisions.record import Decision
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.deferred_resize import is_pod_resize_deferred
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.algorithm import ScheduleResult
from kpysched.scheduling.context import CycleContext

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


@dataclass(slots=True)
class MemberResult:
    """How one member fared in its group's cycle."""

    attempt: Attempt
    # Success when it fits; else its failure (a Diagnosis's Unschedulable, an Error).
    status: Status
    diagnosis: Diagnosis | None = None
    result: ScheduleResult | None = None  # where it fits
    nominated: str | None = None  # preemption's nomination ("" clears one)
    requires_preemption: bool = False
    permit: Status | None = None  # Success or Wait once it was assumed

    @property
    def node(self) -> str:
        if self.result is not None:
            return self.result.node_name
        return self.nominated or ""


@dataclass(slots=True)
class GroupOutcome:
    members: list[MemberResult]
    status: Status  # Success, Unschedulable (the group cannot go yet) or Error
    waiting_on_preemption: bool = False


class Attempts:
    """Starting, failing and recording attempts."""

    def __init__(self, context: CycleContext) -> None:
        self._context = context

    def new(self, framework: Framework, queued: QueuedPodInfo,
            started: float | None = None) -> Attempt:
        """A scheduling attempt of `queued`, with its decision record when recording."""
        pod = queued.pod_info
        attempt = Attempt(framework, queued, CycleState(self._context.metrics.should_sample()),
                          time.perf_counter() if started is None else started, pod)
        if self._context.decisions is not None:
            attempt.state.decision = Decision(
                pod.key, pod.uid, framework.profile_name, queued.attempts,
                datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        return attempt

    def skip_terminating(self, pod: PodInfo, profile: str) -> None:
        """Upstream's skipPodSchedule says so when it passes over a pod being deleted."""
        log.info("pod.skipped", pod=pod.key, reason="being deleted")
        self._context.writes.events.failed_scheduling(
            pod.pod, profile, f"skip schedule deleting pod: {pod.key}")

    def post_filter(self, attempt: Attempt, diagnosis: Diagnosis) -> str | None:
        """Run PostFilter (preemption); returns the node to nominate, "" to clear a
        nomination, or None to leave it as it is."""
        framework = attempt.framework
        if not framework.post_filter_plugins or diagnosis.num_all_nodes == 0:
            return None
        self._context.metrics.preemption_attempt()
        result, _, reasons = framework.run_post_filter(
            attempt.state, attempt.pod, diagnosis.statuses(self._context.snapshot.by_name))
        # Upstream's PostFilterMsg is the status's message whatever its code.
        diagnosis.post_filter_msg = ", ".join(reasons)
        return result.nominated_node_name if result is not None else None

    # --- failures ------------------------------------------------------------------------

    def unschedulable(self, attempt: Attempt, diagnosis: Diagnosis,
                      nominated_node: str | None = None) -> None:
        """No node fits: the pod waits for an event one of the rejecting plugins names."""
        queued = attempt.queued
        queued.unschedulable_plugins = {p for p in diagnosis.unschedulable_plugins if p}
        queued.pending_plugins = _pending_plugins(diagnosis)
        self._requeue(attempt, diagnosis.message(), is_error=False,
                      nominated_node=nominated_node)

    def failed(self, attempt: Attempt, status: Status,
               nominated_node: str | None = None) -> None:
        """A rejection (unschedulable, naming its plugin) or an error (backoff)."""
        if not status.is_rejected:
            self._requeue(attempt, status.message(), is_error=True,
                          nominated_node=nominated_node)
            return
        queued = attempt.queued
        plugins = {status.plugin} if status.plugin else set()
        queued.unschedulable_plugins = plugins
        queued.pending_plugins = plugins if status.code == Code.PENDING else set()
        self._requeue(attempt, status.message(), is_error=False, nominated_node=nominated_node)

    def _requeue(self, attempt: Attempt, message: str, *, is_error: bool,
                 nominated_node: str | None) -> None:
        context = self._context
        framework, queued = attempt.framework, attempt.queued
        pod = queued.pod_info
        context.metrics.schedule_attempt("error" if is_error else "unschedulable",
                                         framework.profile_name,
                                         time.perf_counter() - attempt.started)
        queue = context.queue
        # A pod deleted or bound by someone else meanwhile has left the queue's view:
        # say nothing about it and do not requeue it.
        still_pending = queue.where(pod.uid) == "in_flight"
        # A deferred resize runs on its node already: it is requeued, but neither
        # nominated nor reported (no event, no PodScheduled condition), as upstream's
        # handleSchedulingFailure returns early for it.
        deferred = queue.deferred_resize and is_pod_resize_deferred(attempt.pod.pod)
        if still_pending and nominated_node is not None and not deferred:
            queue.nominator.add(pod, nominated_node)
        queue.add_unschedulable(queued, error=is_error)
        self.record(attempt, outcome=decisions.ERROR if is_error else decisions.UNSCHEDULABLE,
                    message=message, nominated_node=nominated_node)
        if not still_pending or deferred:
            return
        log.info("pod.unschedulable" if not is_error else "pod.schedule_error",
                 pod=pod.key, reason=message)
        latest = queued.pod_info.pod
        writes = context.writes
        writes.events.failed_scheduling(latest, framework.profile_name, message)
        writes.status.set_unschedulable_condition(
            latest, SCHEDULER_ERROR if is_error else UNSCHEDULABLE, message, nominated_node)

    # --- the decision record ---------------------------------------------------------------

    def record(self, attempt: Attempt, **fields: Any) -> None:
        """Store the attempt's decision on first call, update it on later ones (a
        binding that completes or fails after the scheduling cycle)."""
        store = self._context.decisions
        if store is None:
            return
        if attempt.recorded:
            kept = attempt.stored() if attempt.stored is not None else None
            if kept is not None:
                store.update(kept, **fields)
            return
        decision = attempt.state.decision
        if decision is None:
            return
        for name, value in fields.items():
            setattr(decision, name, value)
        attempt.recorded = True
        store.add(decision)
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
