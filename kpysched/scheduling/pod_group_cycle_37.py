"""A pod group's decision as v1.37: its algorithm (pod_group_placement.decide), then,
when the group is Unschedulable, the PodGroupPostFilter point once for the whole group:
DynamicResources frees what the members tried hold, and DefaultPreemption may preempt
for the whole group (pod_group_preemption.py), running the group's algorithm again on
the snapshot without the victims. Their words end the group's message; a preemption
makes the group wait, its members nominated where the dry run placed them. With
TopologyAwareWorkloadScheduling on, the algorithm (both times) tries the group
placement by placement (pod_group_cycle_placements.py).
"""

from __future__ import annotations

from collections.abc import Callable

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.objects.scheduling import PodGroup
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling.attempt import Attempt, GroupOutcome, MemberResult
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.pod_group_cycle_placements import decide_in_placements, placements_on
from kpysched.scheduling.pod_group_preemption import (
    CLUSTER,
    Assignment,
    GroupPreemption,
    preempt_for_group,
)
from kpysched.scheduling.pod_group_trial import MemberTrial
from kpysched.scheduling.preemption_sink import ImmediatePreemption


class DecisionAs37:
    def __init__(self, context: CycleContext, trial: MemberTrial) -> None:
        self._context = context
        self._trial = trial

    def decide(self, framework: Framework, attempts: list[Attempt],
               group: PodGroupState, name: str) -> GroupOutcome:
        """v1.37's algorithm (pod_group_placement.py), then, for an Unschedulable group,
        its PodGroupPostFilter point, whose words end the group's message."""
        namespace = attempts[0].queued.pod_info.namespace
        pod_group = framework.handle.pod_group(namespace, name)
        outcome = self._algorithm(framework, attempts, group, pod_group, name)
        if outcome.status.code == Code.UNSCHEDULABLE:
            constrained = (placements_on(framework) and pod_group is not None
                           and pod_group.spec.scheduling_constraints is not None)
            after, nominations = placement.post_filter(
                framework, attempts,
                lambda: self._preempt_for_group(framework, attempts, pod_group, name),
                constrained=constrained)
            if after.code == Code.ERROR:
                outcome.status = after
            else:
                outcome.status.reasons.append(after.message())
            if after.ok:
                # The group preempted (or its preemption is under way): its members
                # wait for the victims to go, nominated where the dry run put them.
                outcome.waiting_on_preemption = True
                for member in outcome.members:
                    member.nominated = (nominations or {}).get(
                        member.attempt.queued.pod_info.uid)
        return outcome

    def _algorithm(self, framework: Framework, attempts: list[Attempt],
                   group: PodGroupState, pod_group: PodGroup | None,
                   name: str) -> GroupOutcome:
        """v1.37's algorithm over the whole cluster, or placement by placement with
        TopologyAwareWorkloadScheduling on (pod_group_cycle_placements.py)."""
        def try_member(attempt: Attempt, undo: list[Callable[[], None]]) -> MemberResult:
            return self._trial.try_member(framework, attempt, group, undo, as_37=True)

        if placements_on(framework):
            return decide_in_placements(framework, self._context, attempts, group,
                                        pod_group, name, try_member)
        return placement.decide(framework, attempts, group, pod_group, try_member)

    def _preempt_for_group(self, framework: Framework, attempts: list[Attempt],
                           pod_group: PodGroup | None, name: str) -> GroupPreemption:
        """DefaultPreemption's PodGroupPostFilter: the dry run, then the victims' eviction
        in the PodGroup's name."""
        if pod_group is None:
            # Not reached upstream (a group without its PodGroup is held before its
            # cycle); here the PodGroup may have gone since the cycle began.
            return GroupPreemption(Status.unschedulable())
        context = self._context
        handle = framework.handle
        members = [attempt.queued.pod_info for attempt in attempts]
        priority = placement.group_priority(pod_group)
        found = preempt_for_group(
            framework, context.snapshot, priority, members, handle.pod_group, handle.pdbs(),
            lambda: self._schedule_again(framework, attempts, pod_group, name),
            composites=(handle.composite_pod_group
                        if handle.features.enabled("CompositePodGroup") else None))
        if found.status.ok and found.victims:
            sink = context.preemptions
            assert isinstance(sink, ImmediatePreemption), "no Coscheduling trial here"
            sink.preempt_for_group(pod_group, handle.features.release, members, priority,
                                   CLUSTER, found.victims, placement.DEFAULT_PREEMPTION)
        return found

    def _schedule_again(self, framework: Framework, attempts: list[Attempt],
                        pod_group: PodGroup, name: str) -> tuple[list[Assignment], Status]:
        """The group's algorithm once more on the snapshot as preemption left it (its
        victims taken off), each member with a fresh cycle state; every assumption is
        undone before it returns."""
        groups = self._context.cache.pod_groups
        assert groups is not None
        namespace = attempts[0].queued.pod_info.namespace
        group = groups.get(namespace, name).copy()
        again = [Attempt(framework, a.queued, CycleState(), a.started, a.pod)
                 for a in attempts]
        outcome = self._algorithm(framework, again, group, pod_group, name)
        placed = [Assignment(m.attempt.queued.pod_info, m.result.node_name, m.attempt.state)
                  for m in outcome.members if m.status.ok and m.result is not None]
        return placed, outcome.status
