"""The pod-group scheduling cycle (GenericWorkload; upstream's scheduleOnePodGroup).

When the loop pops a member of a pod group, every other member still waiting in the
queue is taken out with it (pod_group_members.py), and the group is decided in one
snapshot:

1. Members are tried one by one (pod_group_trial.py): each that fits, or that
   preemption nominates somewhere, is assumed in the snapshot and in the cycle's copy
   of the group, Reserved, and asked by Permit, so the members after it see it
   placed. GangScheduling's Permit answers Wait until minCount members are placed,
   then Success.
2. Every assumption is undone before anything is written: trying the group holds no
   resources.
3. If some member's Permit said Success (the quorum is met), the members that fit go
   to their binding cycles the ordinary way (assumed in the cache, Reserve, Permit,
   where the last one lets the others through). Otherwise every member goes back to
   the queue, and the PodGroup says why: upstream's PodGroupScheduled condition, or,
   for a scheduler-plugins PodGroup (Coscheduling), an event and its status
   (coscheduling_groups.py). Acting on the decision: pod_group_results.py.

The two APIs differ in one more way. Upstream's members retry after their backoff
whatever happens (the queue's rule for them). A Coscheduling member held back because
its group did not fit is rejected in Coscheduling's name, so like any rejected pod it
waits in the unschedulable pool for an event that may help (a node added, a pod
deleted) and its retries do not pile up backoff while nothing changes.

As v1.37 the algorithm follows that release's rules instead (pod_group_placement.py,
pod_group_cycle_37.py): the gang's feasibility is checked before and after each
member, and an unschedulable group runs the PodGroupPostFilter point once, which may
preempt for the whole group (pod_group_preemption.py). With TopologyAwareWorkloadScheduling
on, the group is tried placement by placement (pod_group_cycle_placements.py).

Nothing here awaits: like the single-pod cycle it runs on the loop from start to end.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import nullcontext

import structlog

from kpysched.cache.pod_groups import group_name
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.pod_group_tree import EntityKey, GroupTree, pod_group_key
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Status
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling.attempt import Attempt, Attempts, GroupOutcome, MemberResult
from kpysched.scheduling.binding_cycle import BindingCycle
from kpysched.scheduling.composite_cycle import TreeDecision, TreeOutcome
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.coscheduling_groups import CoschedulingGroups
from kpysched.scheduling.group_preemption import GroupPreemption as CoschedulingPreemption
from kpysched.scheduling.pod_group_cycle_37 import DecisionAs37
from kpysched.scheduling.pod_group_members import GroupMembers
from kpysched.scheduling.pod_group_results import LAST_CYCLES_KEPT, GroupResults
from kpysched.scheduling.pod_group_trial import POD_GROUP_UNSCHEDULABLE, MemberTrial

log = structlog.get_logger(__name__)

# v1.37 alpha: PodGroups under CompositePodGroups decided as one tree.
COMPOSITE_POD_GROUP = "CompositePodGroup"

# The plugin a held-back Coscheduling member is rejected by: its queueing hints say
# which events may help the group. (Named, not imported: the core imports no plugin.)
COSCHEDULING = "Coscheduling"


class PodGroupCycle:
    def __init__(self, context: CycleContext, attempts: Attempts, binding: BindingCycle,
                 coscheduling: CoschedulingGroups | None = None) -> None:
        self._context = context
        self._attempts = attempts
        self._members = GroupMembers(context, attempts)
        self._trial = MemberTrial(context, attempts)
        self._as_37_decision = DecisionAs37(context, self._trial)
        self._tree_decision = TreeDecision(context, self._trial)
        self._results = GroupResults(context, attempts, binding)
        # scheduler-plugins' PodGroups (a profile has Coscheduling), else None; their
        # members' informer feeds it too (the application connects it).
        self.coscheduling = coscheduling
        # As v1.37: groups whose last cycle wrote a fresh True and left members over,
        # retried at once; their next cycle judges by a copy not showing that True.
        self._stale_copy: set[str] = set()

    @property
    def last_cycles(self) -> OrderedDict[str, dict[str, str]]:
        """Each group's last cycle (result, message, time), for explain."""
        return self._results.last_cycles

    # --- which pods -----------------------------------------------------------------

    def run(self, first: QueuedPodInfo) -> None:
        """Schedule the group of `first` (just popped), with every member the queue holds."""
        members = [first]
        try:
            tree = self._tree(first)
            members = (self._members.take(first) if tree is None
                       else self._members.take_tree(first, tree))
            framework = self._members.framework(members, tree)
            if framework is None:
                return
            members = self._members.without_skipped(members)
            if members and tree is not None:
                self._tree_cycle(framework, tree, members)
            elif members:
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

    def _tree(self, first: QueuedPodInfo) -> GroupTree | None:
        """The tree of the member's PodGroup when it is decided as one: v1.37 with
        CompositePodGroup on, and the PodGroup under a CompositePodGroup."""
        pod = first.pod_info
        name = group_name(pod.pod)
        framework = self._context.frameworks.get(pod.pod.spec.scheduler_name)
        if (name is None or framework is None
                or not framework.handle.features.enabled(COMPOSITE_POD_GROUP)):
            return None
        tree = framework.handle.pod_group_tree(pod.namespace, name)
        return tree if tree is not None and tree.composite is not None else None

    # --- the cycle ---------------------------------------------------------------------

    def _tree_cycle(self, framework: Framework, tree: GroupTree,
                    members: list[QueuedPodInfo]) -> None:
        """A tree decided as one (composite_cycle.py); each PodGroup's members then
        bind or go back as a lone group's do, and each PodGroup gets its condition."""
        context = self._context
        started = time.perf_counter()
        attempts = [self._attempts.new(framework, member, started) for member in members]
        by_leaf: dict[EntityKey, list[Attempt]] = {}
        for attempt in attempts:
            pod = attempt.queued.pod_info
            by_leaf.setdefault(pod_group_key(pod.namespace, group_name(pod.pod) or ""),
                               []).append(attempt)
        try:
            context.cache.update_snapshot(context.snapshot)
            decided = self._tree_decision.decide(framework, tree, by_leaf)
        except Exception as error:
            log.exception("pod_group_cycle.crashed", group=str(tree.key))
            context.reset_snapshot()
            failure = Status.error(
                f"pod group scheduling cycle failed: {type(error).__name__}: {error}")
            decided = TreeOutcome(failure, {leaf.key: placement.complete(
                GroupOutcome([], failure), by_leaf.get(leaf.key, [])) for leaf in tree.leaves()})
        context.metrics.pod_group_algorithm_duration(time.perf_counter() - started)
        left_over: list[str] = []
        for leaf in tree.leaves():
            outcome = decided.leaves[leaf.key]
            leaf_attempts = by_leaf.get(leaf.key, [])
            held_back = Status.unschedulable(POD_GROUP_UNSCHEDULABLE, outcome.status.message())
            self._results.submit(leaf_attempts, outcome, _always(held_back), as_37=True)
            # As for a lone group: a PodGroup whose last cycle wrote a fresh True and
            # left members over is judged by a copy not showing that True (upstream's
            # immediate retry races the watch; in two runs of the same scenario
            # kube-scheduler v1.37.2 ended once True and once False).
            key = f"{leaf.key.namespace}/{leaf.key.name}"
            stale_copy = key in self._stale_copy
            self._stale_copy.discard(key)
            fresh = self._results.condition(framework, leaf.key.namespace, leaf.key.name,
                                            outcome.status, stale_copy=stale_copy)
            if outcome.status.ok and decided.status.ok:
                leaf_left = [attempt.queued.pod_info.uid for attempt, member
                             in zip(leaf_attempts, outcome.members, strict=True)
                             if member.permit is None]
                left_over += leaf_left
                if fresh and leaf_left and len(self._stale_copy) < LAST_CYCLES_KEPT:
                    self._stale_copy.add(key)
        root = GroupOutcome([], decided.status,
                            any(o.waiting_on_preemption for o in decided.leaves.values()))
        self._results.record_attempt(framework, tree.key.namespace, tree.key.name, root,
                                     started)
        if decided.status.ok and left_over:
            context.queue.activate_left_over(left_over)

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
        preemption = CoschedulingPreemption(context) if coscheduling is not None else None
        self._trial.preemption = preemption
        try:
            context.cache.update_snapshot(context.snapshot)
            group = groups.get(first.namespace, name).copy()
            with preemption or nullcontext():
                if self._as_37(framework, coscheduling):
                    outcome = self._as_37_decision.decide(framework, attempts, group, name)
                else:
                    outcome = self._trial.decide_as_36(framework, attempts, group)
            if preemption is not None and outcome.waiting_on_preemption:
                preemption.carry_out(framework.handle)
        except Exception as error:
            # A bug in the core must fail this group, not the loop.
            log.exception("pod_group_cycle.crashed", group=f"{first.namespace}/{name}")
            context.reset_snapshot()
            outcome = GroupOutcome([], Status.error(
                f"pod group scheduling cycle failed: {type(error).__name__}: {error}"))
        context.metrics.pod_group_algorithm_duration(time.perf_counter() - started)
        self._trial.preemption = None
        if coscheduling is not None:
            held_back = Status.unschedulable(
                coscheduling.held_back(first.namespace, name, outcome), plugin=COSCHEDULING)
            self._results.submit(attempts, outcome, lambda _: held_back)
            coscheduling.report(framework.profile_name, first.namespace, name, outcome)
            self._results.record_attempt(framework, first.namespace, name, outcome, started)
            return
        if self._as_37(framework, coscheduling):
            # Held back in the group's words, which name no Permit (upstream's
            # Unschedulable status with the group's message after its error).
            held_back = Status.unschedulable(POD_GROUP_UNSCHEDULABLE, outcome.status.message())
            self._results.submit(attempts, outcome, lambda _: held_back, as_37=True)
            key = f"{first.namespace}/{name}"
            stale_copy = key in self._stale_copy
            self._stale_copy.discard(key)
            fresh = self._results.report(framework, first.namespace, name, outcome, started,
                                 stale_copy=stale_copy)
            left_over = [attempt.queued.pod_info.uid for attempt, member
                         in zip(attempts, outcome.members, strict=True)
                         if member.permit is None]
            if outcome.status.ok and left_over:
                # v1.37's queue sends the members a placed group left over straight
                # back to the active queue, without their backoff.
                self._context.queue.activate_left_over(left_over)
                if fresh and len(self._stale_copy) < LAST_CYCLES_KEPT:
                    self._stale_copy.add(key)
            return
        self._results.submit(attempts, outcome, self._results.held_back_by_permit)
        self._results.report(framework, first.namespace, name, outcome, started)

    @staticmethod
    def _as_37(framework: Framework, coscheduling: CoschedulingGroups | None) -> bool:
        """Whether an upstream PodGroup's cycle follows v1.37's rules."""
        return (coscheduling is None and framework.handle.features.release
                >= placement.PLACEMENT_FEASIBLE_FROM)


def _always(status: Status) -> Callable[[MemberResult], Status]:
    """A held-back member's failure that is the same for every member."""
    return lambda _: status
