"""The pod-group scheduling cycle (GenericWorkload; upstream's scheduleOnePodGroup).

When the loop pops a member of a pod group, every other member still waiting in the
queue is taken out with it, and the group is decided in one snapshot:

1. Members are tried one by one (priority, then first attempt, first). Each that
   fits, or that preemption nominates somewhere, is assumed in the snapshot and in
   the cycle's copy of the group, Reserved, and asked by Permit, so the members after
   it see it placed. GangScheduling's Permit answers Wait until minCount members are
   placed, then Success.
2. Every assumption is undone before anything is written: trying the group holds no
   resources.
3. If some member's Permit said Success (the quorum is met), the members that fit go
   to their binding cycles the ordinary way (assumed in the cache, Reserve, Permit,
   where the last one lets the others through). Otherwise every member goes back to
   the queue, and the PodGroup says why: upstream's PodGroupScheduled condition, or,
   for a scheduler-plugins PodGroup (Coscheduling), an event and its status
   (coscheduling_groups.py).

The two APIs differ in one more way. Upstream's members retry after their backoff
whatever happens (the queue's rule for them). A Coscheduling member held back because
its group did not fit is rejected in Coscheduling's name, so like any rejected pod it
waits in the unschedulable pool for an event that may help (a node added, a pod
deleted) and its retries do not pile up backoff while nothing changes.

As v1.37 the algorithm follows that release's rules instead (pod_group_placement.py):
the gang's feasibility is checked before and after each member, and an unschedulable
group runs the PodGroupPostFilter point once.

Nothing here awaits: like the single-pod cycle it runs on the loop from start to end.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import nullcontext

import structlog

from kpysched.api.times import api_time
from kpysched.cache.pod_groups import PodGroupState, group_name
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.runtime import Framework
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects import scheduling
from kpysched.objects.scheduling import PodGroup
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling.attempt import Attempt, Attempts, GroupOutcome, MemberResult
from kpysched.scheduling.binding_cycle import BindingCycle, assumed_copy
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.coscheduling_groups import CoschedulingGroups
from kpysched.scheduling.group_preemption import GroupPreemption as CoschedulingPreemption
from kpysched.scheduling.pod_group_preemption import (
    CLUSTER,
    Assignment,
    GroupPreemption,
    preempt_for_group,
)
from kpysched.scheduling.preemption_sink import ImmediatePreemption

log = structlog.get_logger(__name__)

# The plugin a held-back Coscheduling member is rejected by: its queueing hints say
# which events may help the group. (Named, not imported: the core imports no plugin.)
COSCHEDULING = "Coscheduling"

# Upstream's errPodGroupUnschedulable, first in the message of every member turned
# away for its group's sake.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
# Groups whose last cycle explain can tell.
LAST_CYCLES_KEPT = 4096
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"


class PodGroupCycle:
    def __init__(self, context: CycleContext, attempts: Attempts, binding: BindingCycle,
                 coscheduling: CoschedulingGroups | None = None) -> None:
        self._context = context
        self._attempts = attempts
        self._binding = binding
        # scheduler-plugins' PodGroups (a profile has Coscheduling), else None; their
        # members' informer feeds it too (the application connects it).
        self.coscheduling = coscheduling
        # The current Coscheduling group's preemptions, held until its fate is known.
        self._preemption: CoschedulingPreemption | None = None
        # Each group's last cycle (result, message, time), for explain; bounded, the
        # groups tried longest ago forgotten first.
        self.last_cycles: OrderedDict[str, dict[str, str]] = OrderedDict()
        # As v1.37: groups whose last cycle wrote a fresh True and left members over,
        # retried at once; their next cycle judges by a copy not showing that True.
        self._stale_copy: set[str] = set()

    # --- which pods -----------------------------------------------------------------

    def run(self, first: QueuedPodInfo) -> None:
        """Schedule the group of `first` (just popped), with every member the queue holds."""
        members = [first]
        try:
            members = self._take_members(first)
            framework = self._framework(members)
            if framework is None:
                return
            members = self._without_skipped(members)
            if members:
                self._cycle(framework, members)
        except Exception as error:
            # A bug in the core fails the members taken, never the loop.
            log.exception("pod_group_cycle.crashed", pod=first.pod_info.key)
            self._context.reset_snapshot()
            failure = Status.error(
                f"pod group scheduling cycle failed: {type(error).__name__}: {error}")
            for member in members:
                framework = self._context.frameworks.get(
                    member.pod_info.pod.spec.scheduler_name)
                if framework is None:
                    self._context.queue.done(member.pod_info.uid)
                else:
                    self._attempts.failed(self._attempts.new(framework, member), failure, "")

    def _take_members(self, first: QueuedPodInfo) -> list[QueuedPodInfo]:
        context = self._context
        pod = first.pod_info
        groups = context.cache.pod_groups
        assert groups is not None, "pod-group cycles run only with GenericWorkload on"
        live = groups.get(pod.namespace, groups.name_of(pod.pod) or "")
        members = [first]
        for other in live.unscheduled_pods():
            if other.uid == pod.uid:
                continue
            taken = context.queue.pop_specific(other.uid)
            if taken is not None:
                members.append(taken)
        # Upstream's order: higher priority first, then the longest waiting.
        members.sort(key=lambda q: (-q.pod_info.priority,
                                    q.initial_attempt_timestamp or 0.0))
        return members

    def _framework(self, members: list[QueuedPodInfo]) -> Framework | None:
        """The one profile of the whole group; members of a mixed group all fail."""
        frameworks = self._context.frameworks
        names = list(dict.fromkeys(m.pod_info.pod.spec.scheduler_name for m in members))
        if len(names) == 1 and names[0] in frameworks:
            chosen = frameworks[names[0]]
            invalid = self._invalid_as_37(chosen, members)
            if invalid is None:
                return chosen
            reason = invalid
        else:
            reason = (f"all pods in a single pod group should have the same "
                      f'.spec.schedulerName set, got: "{names[-1]}" and "{names[0]}"'
                      if len(names) > 1
                      else f'profile not found for scheduler name "{names[0]}"')
        for member in members:
            framework = frameworks.get(member.pod_info.pod.spec.scheduler_name)
            if framework is None:
                self._context.queue.done(member.pod_info.uid)
                continue
            self._attempts.failed(self._attempts.new(framework, member),
                                  Status.error(reason), "")
        return None

    def _invalid_as_37(self, framework: Framework,
                       members: list[QueuedPodInfo]) -> str | None:
        """v1.37 also requires the group's priority and one preemption policy of every
        member; the error is written on the PodGroup too. None when valid (or 1.36)."""
        if (framework.handle.features.release < placement.PLACEMENT_FEASIBLE_FROM
                or group_name(members[0].pod_info.pod) is None):
            return None
        first = members[0].pod_info
        groups = self._context.cache.pod_groups
        assert groups is not None
        name = group_name(first.pod) or ""
        pod_group = framework.handle.pod_group(first.namespace, name)
        invalid = placement.invalid_group(
            (m.pod_info for m in members), groups.get(first.namespace, name).placed_pods(),
            pod_group)
        writer = self._context.writes.pod_groups
        if invalid is not None and pod_group is not None and writer is not None:
            writer.set_scheduled_condition(pod_group, "False",
                                           scheduling.REASON_SCHEDULER_ERROR, invalid)
        return invalid

    def _without_skipped(self, members: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        """Members being deleted, or already assumed or bound, are not tried again."""
        context = self._context
        kept = []
        for member in members:
            pod = member.pod_info
            if pod.terminating or context.cache.has_pod(pod.uid):
                if pod.terminating:
                    self._attempts.skip_terminating(pod, pod.pod.spec.scheduler_name)
                context.queue.done(pod.uid)
            else:
                kept.append(member)
        return kept

    # --- the cycle ---------------------------------------------------------------------

    def _cycle(self, framework: Framework, members: list[QueuedPodInfo]) -> None:
        context = self._context
        started = time.perf_counter()
        attempts = [self._attempts.new(framework, member, started) for member in members]
        first = members[0].pod_info
        groups = context.cache.pod_groups
        assert groups is not None
        name = groups.name_of(first.pod) or ""
        coscheduling = self.coscheduling
        if group_name(first.pod) is not None:
            coscheduling = None  # upstream's PodGroup: upstream's rules
        # A Coscheduling group preempts only if that places it (group_preemption.py).
        self._preemption = CoschedulingPreemption(context) if coscheduling is not None else None
        try:
            context.cache.update_snapshot(context.snapshot)
            group = groups.get(first.namespace, name).copy()
            with self._preemption or nullcontext():
                if self._as_37(framework, coscheduling):
                    outcome = self._decide_as_37(framework, attempts, group, name)
                else:
                    outcome = self._decide(framework, attempts, group)
            if self._preemption is not None and outcome.waiting_on_preemption:
                self._preemption.carry_out(framework.handle)
        except Exception as error:
            # A bug in the core must fail this group, not the loop.
            log.exception("pod_group_cycle.crashed", group=f"{first.namespace}/{name}")
            context.reset_snapshot()
            outcome = GroupOutcome([], Status.error(
                f"pod group scheduling cycle failed: {type(error).__name__}: {error}"))
        context.metrics.pod_group_algorithm_duration(time.perf_counter() - started)
        self._preemption = None
        if coscheduling is not None:
            held_back = Status.unschedulable(
                coscheduling.held_back(first.namespace, name, outcome), plugin=COSCHEDULING)
            self._submit(attempts, outcome, lambda _: held_back)
            coscheduling.report(framework.profile_name, first.namespace, name, outcome)
            self._record_attempt(framework, first.namespace, name, outcome, started)
            return
        if self._as_37(framework, coscheduling):
            # Held back in the group's words, which name no Permit (upstream's
            # Unschedulable status with the group's message after its error).
            held_back = Status.unschedulable(POD_GROUP_UNSCHEDULABLE, outcome.status.message())
            self._submit(attempts, outcome, lambda _: held_back, as_37=True)
            key = f"{first.namespace}/{name}"
            stale_copy = key in self._stale_copy
            self._stale_copy.discard(key)
            fresh = self._report(framework, first.namespace, name, outcome, started,
                                 stale_copy=stale_copy)
            left_over = [attempt.queued.pod_info.uid for attempt, member
                         in zip(attempts, outcome.members, strict=True)
                         if member.permit is None]
            if outcome.status.ok and left_over:
                # v1.37's queue sends the members a placed group left over straight
                # back to the active queue, without their backoff.
                self._context.queue.activate(left_over)
                if fresh and len(self._stale_copy) < LAST_CYCLES_KEPT:
                    self._stale_copy.add(key)
            return
        self._submit(attempts, outcome, self._held_back)
        self._report(framework, first.namespace, name, outcome, started)

    def _decide(self, framework: Framework, attempts: list[Attempt],
                group: PodGroupState) -> GroupOutcome:
        """Upstream's podGroupSchedulingDefaultAlgorithm: try each member in turn on the
        snapshot, then undo every assumption."""
        outcome = GroupOutcome([], Status.unschedulable(POD_GROUP_UNSCHEDULABLE))
        undo: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for attempt in attempts:
                member = self._try_member(framework, attempt, group, undo)
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

    @staticmethod
    def _as_37(framework: Framework, coscheduling: CoschedulingGroups | None) -> bool:
        """Whether an upstream PodGroup's cycle follows v1.37's rules."""
        return (coscheduling is None and framework.handle.features.release
                >= placement.PLACEMENT_FEASIBLE_FROM)

    def _decide_as_37(self, framework: Framework, attempts: list[Attempt],
                      group: PodGroupState, name: str) -> GroupOutcome:
        """v1.37's algorithm (pod_group_placement.py), then, for an Unschedulable group,
        its PodGroupPostFilter point, whose words end the group's message."""
        namespace = attempts[0].queued.pod_info.namespace
        pod_group = framework.handle.pod_group(namespace, name)
        outcome = placement.decide(
            framework, attempts, group, pod_group,
            lambda attempt, undo: self._try_member(framework, attempt, group, undo,
                                                   as_37=True))
        if outcome.status.code == Code.UNSCHEDULABLE:
            after, nominations = placement.post_filter(
                framework, attempts,
                lambda: self._preempt_for_group(framework, attempts, pod_group, name))
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

    def _preempt_for_group(self, framework: Framework, attempts: list[Attempt],
                           pod_group: PodGroup | None, name: str) -> GroupPreemption:
        """DefaultPreemption's PodGroupPostFilter: the dry run, then the victims' eviction
        in the PodGroup's name."""
        assert pod_group is not None, "a v1.37 group's cycle runs with its PodGroup"
        context = self._context
        handle = framework.handle
        members = [attempt.queued.pod_info for attempt in attempts]
        priority = placement.group_priority(pod_group)
        found = preempt_for_group(
            framework, context.snapshot, priority, members, handle.pod_group, handle.pdbs(),
            lambda: self._schedule_again(framework, attempts, pod_group, name))
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
        outcome = placement.decide(
            framework, again, group, pod_group,
            lambda attempt, undo: self._try_member(framework, attempt, group, undo,
                                                   as_37=True))
        placed = [Assignment(m.attempt.queued.pod_info, m.result.node_name, m.attempt.state)
                  for m in outcome.members if m.status.ok and m.result is not None]
        return placed, outcome.status

    def _try_member(self, framework: Framework, attempt: Attempt, group: PodGroupState,
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
            refusal = self._preemption.claim(pod, undo) if self._preemption else ""
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

    # --- acting on the decision -------------------------------------------------------

    def _submit(self, attempts: list[Attempt], outcome: GroupOutcome,
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
    def _held_back(member: MemberResult) -> Status:
        """A member that could go, held back because its group cannot: the reason is
        what its Permit said."""
        assert member.permit is not None
        return Status.unschedulable(POD_GROUP_UNSCHEDULABLE, *member.permit.reasons)

    def _record_attempt(self, framework: Framework, namespace: str, name: str,
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

    def _report(self, framework: Framework, namespace: str, name: str,
                outcome: GroupOutcome, started: float, *, stale_copy: bool = False) -> bool:
        """The PodGroup's condition and the podgroup metrics; True when the condition
        became True now (PodGroupConditionWriter.set_scheduled_condition)."""
        status = outcome.status
        result = self._record_attempt(framework, namespace, name, outcome, started)
        if status.ok:
            condition, reason = "True", "Scheduled"
        elif result == "error":
            condition, reason = "False", scheduling.REASON_SCHEDULER_ERROR
        else:
            condition, reason = "False", scheduling.REASON_UNSCHEDULABLE
        group = framework.handle.pod_group(namespace, name)
        writer = self._context.writes.pod_groups
        if group is None or writer is None:
            return False
        return writer.set_scheduled_condition(group, condition, reason, status.message(),
                                              stale_copy=stale_copy)
