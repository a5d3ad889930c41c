"""Trying a pod group's members one by one on the cycle's snapshot.

Each member runs upstream's podGroupPodSchedulingAlgorithm: the scheduling algorithm
(as v1.36 with its PostFilter, so it may preempt; as v1.37 without), then, where it
fits or preemption nominates it somewhere, it is assumed in the snapshot and in the
cycle's copy of the group and Reserved (and, as v1.36, asked by Permit), so the
members after it see it placed. Each assumption's undo is pushed for the caller,
which undoes them all before anything is written: trying a group holds no resources.

`decide_as_36` is v1.36's podGroupSchedulingDefaultAlgorithm over these trials: the
group goes when some member's Permit says Success (GangScheduling answers Wait until
minCount members are placed), and waits on preemption when a member needed one.
v1.37's rules are in pod_group_placement.py and pod_group_cycle_37.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.runtime import Framework
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.scheduling.attempt import Attempt, Attempts, GroupOutcome, MemberResult
from kpysched.scheduling.binding_cycle import assumed_copy
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.group_preemption import GroupPreemption as CoschedulingPreemption

# Upstream's errPodGroupUnschedulable, first in the message of every member turned
# away for its group's sake.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"


class MemberTrial:
    def __init__(self, context: CycleContext, attempts: Attempts) -> None:
        self._context = context
        self._attempts = attempts
        # The current Coscheduling group's preemptions, held until its fate is known
        # (set by the cycle for the group's trial, else None).
        self.preemption: CoschedulingPreemption | None = None

    def decide_as_36(self, framework: Framework, attempts: list[Attempt],
                     group: PodGroupState) -> GroupOutcome:
        """Upstream's podGroupSchedulingDefaultAlgorithm: try each member in turn on the
        snapshot, then undo every assumption."""
        outcome = GroupOutcome([], Status.unschedulable(POD_GROUP_UNSCHEDULABLE))
        undo: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for attempt in attempts:
                member = self.try_member(framework, attempt, group, undo)
                outcome.members.append(member)
                if member.permit is None:
                    if member.status.is_rejected:
                        continue  # the others may still make the quorum
                    outcome.status = Status.error(
                        f"failed to schedule other pod from a pod group: "
                        f"{member.status.message()}")
                    outcome.waiting_on_preemption = False
                    break
                requires_preemption = requires_preemption or member.requires_preemption
                if member.permit.ok:
                    if requires_preemption:
                        outcome.status = Status.unschedulable(POD_GROUP_UNSCHEDULABLE,
                                                              WAITING_ON_PREEMPTION)
                        outcome.waiting_on_preemption = True
                    else:
                        outcome.status = SUCCESS
        finally:
            for step in reversed(undo):
                step()
        return outcome

    def try_member(self, framework: Framework, attempt: Attempt, group: PodGroupState,
                   undo: list[Callable[[], None]], *, as_37: bool = False) -> MemberResult:
        """Upstream's podGroupPodSchedulingAlgorithm for one member; on success its undo
        is pushed onto `undo`. As v1.37 (`as_37`) a member neither preempts nor is
        asked by Permit: the group's feasibility is checked by the caller."""
        context = self._context
        state, pod = attempt.state, attempt.queued.pod_info
        state.pod_group = group
        started = time.perf_counter()
        found = context.algorithm.schedule(framework, state, pod, context.snapshot)
        member = MemberResult(attempt, SUCCESS)
        if isinstance(found, Diagnosis) and not as_37:
            member.nominated = self._attempts.post_filter(attempt, found)
        # Each member's algorithm (with its preemption) counts as a pod's, as
        # upstream's podGroupPodSchedulingAlgorithm times it.
        context.metrics.algorithm_duration(time.perf_counter() - started)
        if isinstance(found, Status):
            member.status = found
            return member
        if isinstance(found, Diagnosis):
            member.status = Status.unschedulable(plugin="")
            member.diagnosis = found
            if not member.nominated:
                return member
            refusal = self.preemption.claim(pod, undo) if self.preemption else ""
            if refusal:
                found.post_filter_msg = f"preemption: {refusal}"
                member.nominated = ""
                return member
            # Preemption makes room: the members after it must see it placed there.
            member.requires_preemption = True
        else:
            member.result = found
        node = member.node
        assumed = assumed_copy(pod, node)
        restore_node = context.snapshot.assume_pod(assumed, node)
        group.assume(assumed)
        nominator = context.queue.nominator
        nominator.delete(pod.uid)

        def revert() -> None:
            framework.run_unreserve(state, assumed, node)
            restore_node()
            group.forget(pod.uid)
            if pod.pod.status.nominated_node_name:
                # Assuming dropped the pod's nomination; trying the group must not.
                nominator.add(pod, pod.pod.status.nominated_node_name)

        status = framework.run_reserve(state, assumed, node)
        if status.ok and not as_37:
            status = framework.run_permit(state, assumed, node, hold=False)
        if not status.ok and status.code != Code.WAIT:
            revert()
            failed = MemberResult(attempt, status, nominated="")
            if status.is_rejected:
                # As upstream: a FitError over the one node the member was given.
                failed.diagnosis = Diagnosis(1, {node: status}, {status.plugin})
            return failed
        member.permit = status
        undo.append(revert)
        return member
