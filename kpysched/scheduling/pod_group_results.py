"""Acting on a pod group's decision (upstream's submitPodGroupAlgorithmResult): the
members that fit go to their binding cycles when the group goes; otherwise every member
is requeued with its own failure, or, held back for its group's sake, with the group's
words; the PodGroup's condition says how the cycle ended, and the podgroup metrics and
explain's last cycles record it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

import structlog

from kpysched.api.times import api_time
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.objects import scheduling
from kpysched.scheduling.attempt import Attempt, Attempts, GroupOutcome, MemberResult
from kpysched.scheduling.binding_cycle import BindingCycle
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.pod_group_trial import POD_GROUP_UNSCHEDULABLE

log = structlog.get_logger(__name__)

# Groups whose last cycle explain can tell.
LAST_CYCLES_KEPT = 4096


class GroupResults:
    def __init__(self, context: CycleContext, attempts: Attempts,
                 binding: BindingCycle) -> None:
        self._context = context
        self._attempts = attempts
        self._binding = binding
        # Each group's last cycle (result, message, time), for explain; bounded, the
        # groups tried longest ago forgotten first.
        self.last_cycles: OrderedDict[str, dict[str, str]] = OrderedDict()

    def submit(self, attempts: list[Attempt], outcome: GroupOutcome,
               held_back: Callable[[MemberResult], Status], *, as_37: bool = False) -> None:
        """Upstream's submitPodGroupAlgorithmResult: bind the group or requeue it.
        `held_back` gives the failure of a member that fit while its group did not."""
        for index, attempt in enumerate(attempts):
            member = outcome.members[index] if index < len(outcome.members) else None
            try:
                self._submit_member(attempt, member, outcome, held_back, as_37=as_37)
            except Exception as error:
                # A bug in the core fails this member, never the loop or the others.
                log.exception("pod_group_cycle.submit_crashed", pod=attempt.queued.pod_info.key)
                self._attempts.failed(attempt, Status.error(
                    f"pod group scheduling cycle failed: {type(error).__name__}: {error}"), "")

    def _submit_member(self, attempt: Attempt, member: MemberResult | None,
                       outcome: GroupOutcome, held_back: Callable[[MemberResult], Status],
                       *, as_37: bool = False) -> None:
        attempts = self._attempts
        group_status = outcome.status
        if group_status.code == Code.ERROR:
            failure = (member.status if member is not None
                       and member.status.code == Code.ERROR else group_status)
            attempts.failed(attempt, failure, "")
            return
        assert member is not None  # only an Error leaves members untried
        if member.permit is not None and not member.requires_preemption:
            if group_status.ok:
                attempt.state.pod_group = None
                assert member.result is not None
                self._binding.assume_and_bind(attempt, member.result)
            elif outcome.waiting_on_preemption:
                # As v1.37 the nomination is the group preemption's (None: unchanged).
                attempts.failed(attempt, group_status,
                                member.nominated if as_37 else member.node)
            else:
                attempts.failed(attempt, held_back(member), "")
        elif member.requires_preemption and not outcome.waiting_on_preemption:
            attempts.failed(attempt, held_back(member), "")
        elif member.diagnosis is not None:
            attempts.unschedulable(attempt, member.diagnosis, member.nominated)
        else:
            attempts.failed(attempt, member.status, member.nominated)

    @staticmethod
    def held_back_by_permit(member: MemberResult) -> Status:
        """A member that could go, held back because its group cannot: the reason is
        what its Permit said."""
        assert member.permit is not None
        return Status.unschedulable(POD_GROUP_UNSCHEDULABLE, *member.permit.reasons)

    def record_attempt(self, framework: Framework, namespace: str, name: str,
                       outcome: GroupOutcome, started: float) -> str:
        """Log the group's result and count it in the podgroup metrics; the result."""
        status = outcome.status
        if status.ok:
            result = "scheduled"
        elif status.code == Code.ERROR:
            result = "error"
        else:
            result = "waiting_on_preemption" if outcome.waiting_on_preemption else "unschedulable"
        log.info("pod_group.scheduled" if status.ok else "pod_group.unschedulable",
                 group=f"{namespace}/{name}", result=result, reason=status.message())
        key = f"{namespace}/{name}"
        self.last_cycles.pop(key, None)
        self.last_cycles[key] = {"result": result, "message": status.message(),
                                 "time": api_time()}
        while len(self.last_cycles) > LAST_CYCLES_KEPT:
            self.last_cycles.popitem(last=False)
        self._context.metrics.pod_group_attempt(result, framework.profile_name,
                                                time.perf_counter() - started)
        return result

    def report(self, framework: Framework, namespace: str, name: str,
               outcome: GroupOutcome, started: float, *, stale_copy: bool = False) -> bool:
        """The PodGroup's condition and the podgroup metrics; True when the condition
        became True now (PodGroupConditionWriter.set_scheduled_condition)."""
        self.record_attempt(framework, namespace, name, outcome, started)
        return self.condition(framework, namespace, name, outcome.status,
                              stale_copy=stale_copy)

    def condition(self, framework: Framework, namespace: str, name: str, status: Status,
                  *, stale_copy: bool = False) -> bool:
        """The PodGroup's condition after a cycle that ended with `status`; True when
        it became True now."""
        if status.ok:
            condition, reason = "True", "Scheduled"
        elif status.code == Code.ERROR:
            condition, reason = "False", scheduling.REASON_SCHEDULER_ERROR
        else:
            condition, reason = "False", scheduling.REASON_UNSCHEDULABLE
        group = framework.handle.pod_group(namespace, name)
        writer = self._context.writes.pod_groups
        if group is None or writer is None:
            return False
        return writer.set_scheduled_condition(group, condition, reason, status.message(),
                                              stale_copy=stale_copy)
