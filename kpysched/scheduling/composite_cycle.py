"""A tree of pod groups decided in one cycle (v1.37's alpha CompositePodGroup).

When the popped member's PodGroup sits under a CompositePodGroup, the cycle takes the
members waiting in every PodGroup of the tree and decides the tree from its root
(composite_algorithm.py), with the steps below on the cycle's snapshot:

- a leaf PodGroup runs v1.37's placement algorithm (pod_group_cycle_placements.py)
  inside the placement its parent is tried in, its members each with a fresh cycle
  state; the members of the placement it chose are assumed and Reserved again so the
  groups after it see them;
- a CompositePodGroup's placements come from the PlacementGenerate point (its own
  topology constraint), its feasibility from GangScheduling's rule over its children
  (when the profile has GangScheduling), its placements' ranking from PlacementScore
  over the members of all its leaves.

An Unschedulable root then runs PodGroupPostFilter once for the tree:
DynamicResources does nothing for a composite group, DefaultPreemption preempts for
every member of the tree at the root's priority, in the CompositePodGroup's name.
Its words are appended to the status of every group of the tree, as upstream appends
them to each group's result (a child that took its parent's failure shares that
status, so it gets them once per sharer, as upstream's do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.placement import Placement, PodGroupAssignments, PodGroupInfo
from kpysched.framework.pod_group_tree import EntityKey, GroupTree
from kpysched.framework.runtime import Framework
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.composite_pod_groups import min_group_count
from kpysched.objects.pod import PodInfo
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling.attempt import Attempt, GroupOutcome, MemberResult
from kpysched.scheduling.binding_cycle import assumed_copy
from kpysched.scheduling.composite_algorithm import (
    Results,
    Undo,
    complete_results,
    decide_tree,
)
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.pod_group_cycle_placements import (
    decide_in_placements,
    fresh,
    proposed,
    scheduled_members,
)
from kpysched.scheduling.pod_group_preemption import (
    CLUSTER,
    Assignment,
    GroupPreemption,
    preempt_for_group,
)
from kpysched.scheduling.pod_group_trial import MemberTrial
from kpysched.scheduling.preemption_sink import ImmediatePreemption


@dataclass(slots=True)
class TreeOutcome:
    """The root's status and each PodGroup's outcome (every waiting member in it)."""

    status: Status
    leaves: dict[EntityKey, GroupOutcome]


class _TreeSteps:
    """composite_algorithm.CompositeSteps on the cycle's snapshot."""

    def __init__(self, framework: Framework, context: CycleContext, trial: MemberTrial,
                 attempts: dict[EntityKey, list[Attempt]],
                 groups: dict[EntityKey, PodGroupState]) -> None:
        self._framework = framework
        self._context = context
        self._trial = trial
        self._attempts = attempts
        self._groups = groups
        self._placement: Placement | None = None  # None: the whole cluster
        self._leaf_of = {attempt.queued.pod_info.uid: key
                         for key, members in attempts.items() for attempt in members}
        self._gang = any(p.NAME == placement.GANG_SCHEDULING
                         for p in framework.permit_plugins)

    def leaf(self, tree: GroupTree) -> tuple[GroupOutcome, list[Undo]]:
        group = self._groups[tree.key]
        attempts = [fresh(attempt, None) for attempt in self._attempts.get(tree.key, [])]

        def try_member(attempt: Attempt, undo: list[Callable[[], None]]) -> MemberResult:
            return self._trial.try_member(self._framework, attempt, group, undo, as_37=True)

        outcome = decide_in_placements(self._framework, self._context, attempts, group,
                                       tree.pod_group, tree.key.name, try_member,
                                       parent=self._placement, namespace=tree.key.namespace,
                                       root=False)
        if not outcome.status.ok:
            return outcome, []
        try:
            return outcome, self._assume(outcome, group)
        except _AssumeFailedError as failed:
            outcome.status = Status.error(f"failed to assume the subtree: {failed}")
            return outcome, []

    def _info(self, tree: GroupTree) -> PodGroupInfo:
        merged = PodGroupState()
        for leaf in tree.leaves():
            for pod in self._groups[leaf.key].placed_pods():
                merged.assume(pod)
        return PodGroupInfo(tree.key.namespace, tree.key.name, None, merged,
                            scheduled_members(self._context, merged), composite=tree.composite)

    def placements(self, tree: GroupTree) -> tuple[list[Placement], Status]:
        nodes = (self._context.snapshot.node_infos if self._placement is None
                 else self._placement.nodes)
        return self._framework.run_placement_generate(self._info(tree), nodes)

    @contextmanager
    def within(self, inside: Placement) -> Iterator[None]:
        parent, self._placement = self._placement, inside
        try:
            yield
        finally:
            self._placement = parent

    def feasible(self, tree: GroupTree, scheduled: int, remaining: int) -> Status:
        if not self._gang or tree.composite is None:
            return SUCCESS
        return placement.feasibility(min_group_count(tree.composite), scheduled, remaining)

    def score(self, tree: GroupTree, fitted: list[tuple[Placement, list[GroupOutcome]]]
              ) -> tuple[list[int], Status]:
        assignments = [PodGroupAssignments(where, tuple(
            assignment for outcome in outcomes for assignment in proposed(outcome)))
            for where, outcomes in fitted]
        return self._framework.run_placement_score(self._info(tree), assignments)

    def assume(self, outcome: GroupOutcome) -> list[Undo]:
        member = next((m for m in outcome.members if m.status.ok), None)
        if member is None:
            return []
        key = self._leaf_of[member.attempt.queued.pod_info.uid]
        return self._assume(outcome, self._groups[key])

    def _assume(self, outcome: GroupOutcome, group: PodGroupState) -> list[Undo]:
        """Upstream's assumeSubtreeWithRevert for one PodGroup: every member placed is
        assumed in the snapshot and the group's copy, and Reserved."""
        undo: list[Undo] = []
        framework, snapshot = self._framework, self._context.snapshot
        nominator = self._context.queue.nominator
        for member in outcome.members:
            if not member.status.ok or member.result is None or not member.result.node_name:
                continue
            state, pod = member.attempt.state, member.attempt.queued.pod_info
            node = member.result.node_name
            assumed = assumed_copy(pod, node)
            restore = snapshot.assume_pod(assumed, node)
            group.assume(assumed)
            # As a member's trial does: assumed, it no longer holds room as nominated.
            nominator.delete(pod.uid)

            def revert(state: CycleState = state, assumed: PodInfo = assumed, node: str = node,
                       restore: Callable[[], None] = restore, pod: PodInfo = pod) -> None:
                framework.run_unreserve(state, assumed, node)
                restore()
                group.forget(pod.uid)
                if pod.pod.status.nominated_node_name:
                    nominator.add(pod, pod.pod.status.nominated_node_name)

            undo.append(revert)
            status = framework.run_reserve(state, assumed, node)
            if not status.ok:
                for step in reversed(undo):
                    step()
                raise _AssumeFailedError(status.message())
        return undo


class _AssumeFailedError(Exception):
    """A member placed could not be Reserved again (upstream: the subtree's Error)."""


class TreeDecision:
    def __init__(self, context: CycleContext, trial: MemberTrial) -> None:
        self._context = context
        self._trial = trial

    def decide(self, framework: Framework, tree: GroupTree,
               attempts: dict[EntityKey, list[Attempt]]) -> TreeOutcome:
        results = self._algorithm(framework, tree, attempts)
        root = results[tree.key].status
        complete_results(tree, results)
        leaves = {leaf.key: _leaf_outcome(results, leaf, attempts.get(leaf.key, []))
                  for leaf in tree.leaves()}
        if root.code == Code.UNSCHEDULABLE:
            every = [a for members in attempts.values() for a in members]
            after, nominations = placement.post_filter(
                framework, every, lambda: self._preempt(framework, tree, attempts),
                constrained=True)
            for result in results.values():
                if after.code == Code.ERROR:
                    result.status = after
                else:
                    result.status.reasons.append(after.message())
            for leaf in tree.leaves():
                outcome = leaves[leaf.key]
                outcome.status = results[leaf.key].status
                if after.ok:
                    outcome.waiting_on_preemption = True
                    for member in outcome.members:
                        member.nominated = (nominations or {}).get(
                            member.attempt.queued.pod_info.uid)
            root = results[tree.key].status
        return TreeOutcome(root, leaves)

    def _algorithm(self, framework: Framework, tree: GroupTree,
                   attempts: dict[EntityKey, list[Attempt]]) -> Results:
        groups = self._context.cache.pod_groups
        assert groups is not None
        copies = {leaf.key: groups.get(leaf.key.namespace, leaf.key.name).copy()
                  for leaf in tree.leaves()}
        steps = _TreeSteps(framework, self._context, self._trial, attempts, copies)
        return decide_tree(tree, steps)

    def _preempt(self, framework: Framework, tree: GroupTree,
                 attempts: dict[EntityKey, list[Attempt]]) -> GroupPreemption:
        """DefaultPreemption's PodGroupPostFilter for the tree, at the root's priority."""
        composite = tree.composite
        assert composite is not None
        context, handle = self._context, framework.handle
        members = [a.queued.pod_info for group in attempts.values() for a in group]
        priority = composite.spec.priority or 0
        found = preempt_for_group(
            framework, context.snapshot, priority, members, handle.pod_group, handle.pdbs(),
            lambda: self._schedule_again(framework, tree, attempts),
            composites=handle.composite_pod_group, root=composite)
        if found.status.ok and found.victims:
            sink = context.preemptions
            assert isinstance(sink, ImmediatePreemption), "no Coscheduling trial here"
            sink.preempt_for_group(composite, handle.features.release, members, priority,
                                   CLUSTER, found.victims, placement.DEFAULT_PREEMPTION)
        return found

    def _schedule_again(self, framework: Framework, tree: GroupTree,
                        attempts: dict[EntityKey, list[Attempt]]
                        ) -> tuple[list[Assignment], Status]:
        """The tree's algorithm once more on the snapshot as preemption left it, every
        member with a fresh cycle state: each member any group placed, and the root's
        status."""
        again = {key: [Attempt(framework, a.queued, CycleState(), a.started, a.pod)
                       for a in group] for key, group in attempts.items()}
        results = self._algorithm(framework, tree, again)
        placed = [Assignment(m.attempt.queued.pod_info, m.result.node_name, m.attempt.state)
                  for result in results.values() if result.outcome is not None
                  for m in result.outcome.members if m.status.ok and m.result is not None]
        return placed, results[tree.key].status


def _leaf_outcome(results: Results, leaf: GroupTree,
                  attempts: list[Attempt]) -> GroupOutcome:
    """The PodGroup's outcome over the cycle's own attempts: its members as its chosen
    placement left them (their cycle states handed over), or, when it was not tried
    or its parent failed, every member failing with its status."""
    result = results[leaf.key]
    outcome = result.outcome
    if outcome is None or outcome.status is not result.status:
        return placement.complete(GroupOutcome([], result.status), attempts)
    by_uid = {a.queued.pod_info.uid: a for a in attempts}
    for member in outcome.members:
        original = by_uid[member.attempt.queued.pod_info.uid]
        original.state = member.attempt.state
        member.attempt = original
    return outcome
