"""A tree of pod groups decided as one (v1.37's alpha CompositePodGroup; upstream's
podGroupSchedulingRecursiveAlgorithm and compositePodGroupSchedulingPlacementAlgorithm).

The root of a workload's tree is a CompositePodGroup; its leaves are PodGroups. The
tree is decided in one snapshot, depth first, children oldest first:

- A leaf PodGroup runs its own algorithm (placement by placement, as a lone group
  does) inside the placement its parent is being tried in; the members of the
  placement it chose stay assumed, so the groups tried after it see them.
- A composite group is tried in each placement its PlacementGenerate point cuts from
  its parent's (one per domain of its topology constraint, or its parent's whole).
  Inside one, its children are tried in turn, and its PlacementFeasible point
  (GangScheduling's rule, counting children: minGroupCount for a gang, 1 for basic)
  is asked before the first and after each; once it cannot be met, the children not
  reached are not tried. A feasible result that is still waiting is Unschedulable.
  Every assumption of a placement is undone before the next; no placement fitting is
  "0/N placements are available, first placement status: ...", the first placement's
  results kept for the members' words; several fitting are ranked by PlacementScore
  over the members all their leaves placed, and the winner's successful leaves are
  assumed again.
- Failures flow down: a child that succeeded under a parent that failed takes the
  parent's status, so nothing of a failed subtree binds (complete_results).

The steps that touch the snapshot and the plugins are given (CompositeSteps), so this
module holds only the order and the bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Protocol

from kpysched.framework.placement import Placement
from kpysched.framework.pod_group_tree import EntityKey, GroupTree
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.scheduling.attempt import GroupOutcome
from kpysched.scheduling.pod_group_cycle_placements import none_available
from kpysched.scheduling.pod_group_trial import POD_GROUP_UNSCHEDULABLE

Undo = Callable[[], None]


@dataclass(slots=True)
class SubtreeResult:
    """How one group of the tree fared; a leaf's members are in `outcome`."""

    tree: GroupTree
    status: Status
    any_scheduled: bool = False
    outcome: GroupOutcome | None = None


Results = dict[EntityKey, SubtreeResult]


class CompositeSteps(Protocol):
    def leaf(self, tree: GroupTree) -> tuple[GroupOutcome, list[Undo]]:
        """A leaf PodGroup's algorithm inside the current placement; the members placed
        in the placement it chose are left assumed, each with its undo."""
        ...

    def placements(self, tree: GroupTree) -> tuple[list[Placement], Status]:
        """The composite group's PlacementGenerate point within the current placement."""
        ...

    def within(self, placement: Placement) -> AbstractContextManager[None]:
        """The snapshot restricted to `placement` while the context lasts."""
        ...

    def feasible(self, tree: GroupTree, scheduled: int, remaining: int) -> Status:
        """The composite group's PlacementFeasible point, counting children."""
        ...

    def score(self, tree: GroupTree,
              fitted: list[tuple[Placement, list[GroupOutcome]]]) -> tuple[list[int], Status]:
        """The PlacementScore point's weighted totals, one per fitted placement, each
        given the outcomes of the leaves that placement placed."""
        ...

    def assume(self, outcome: GroupOutcome) -> list[Undo]:
        """Assume again, in the snapshot, the members `outcome` placed."""
        ...


def _undo_all(undo: list[Undo]) -> None:
    for step in reversed(undo):
        step()
    undo.clear()


def _unschedulable(status: Status) -> Status:
    return Status.unschedulable(POD_GROUP_UNSCHEDULABLE, *status.reasons, plugin=status.plugin)


def decide_tree(root: GroupTree, steps: CompositeSteps) -> Results:
    """Every group of the tree tried (upstream's runRootSchedulingAlgorithm for a
    composite root); every assumption is undone before it returns. A root that
    succeeded with no member placed is Unschedulable."""
    results: Results = {}
    undo: list[Undo] = []
    try:
        result = _recurse(root, steps, results, undo)
    finally:
        _undo_all(undo)
    if result.status.ok and not result.any_scheduled:
        result.status = Status.unschedulable(POD_GROUP_UNSCHEDULABLE)
    return results


def _recurse(tree: GroupTree, steps: CompositeSteps, results: Results,
             undo: list[Undo]) -> SubtreeResult:
    if tree.composite is None:
        outcome, placed = steps.leaf(tree)
        undo.extend(placed)
        result = SubtreeResult(tree, outcome.status,
                               any(member.status.ok for member in outcome.members), outcome)
        results[tree.key] = result
        return result
    return _in_placements(tree, steps, results, undo)


def _in_placements(tree: GroupTree, steps: CompositeSteps, results: Results,
                   undo: list[Undo]) -> SubtreeResult:
    placements, status = steps.placements(tree)
    if not status.ok:
        results[tree.key] = SubtreeResult(tree, status)
        return results[tree.key]
    first: Results | None = None
    fitted: list[tuple[Placement, Results]] = []
    for placement in placements:
        subtree: Results = {}
        tried: list[Undo] = []
        with steps.within(placement):
            try:
                result = _children_in_turn(tree, steps, subtree, tried)
            finally:
                _undo_all(tried)
        if result.status.code == Code.ERROR:
            results[tree.key] = result
            return result
        if first is None:
            first = subtree
        if result.status.ok:
            fitted.append((placement, subtree))
    if not fitted:
        assert first is not None  # a generator that succeeds gives a placement
        root = first[tree.key]
        root.status = none_available(len(placements), root.status)
        # The first placement's results whole: each member keeps its own words.
        results.update(first)
        return root
    chosen = 0
    if len(fitted) > 1:
        totals, status = steps.score(tree, [
            (placement, [leaf.outcome for leaf in successful_leaves(tree, subtree)
                         if leaf.outcome is not None])
            for placement, subtree in fitted])
        if not status.ok:
            results[tree.key] = SubtreeResult(tree, status)
            return results[tree.key]
        chosen = max(range(len(totals)), key=lambda index: (totals[index], -index))
    best = fitted[chosen][1]
    for leaf in successful_leaves(tree, best):
        if leaf.outcome is not None:
            undo.extend(steps.assume(leaf.outcome))
    results.update(best)
    return best[tree.key]


def _children_in_turn(tree: GroupTree, steps: CompositeSteps, results: Results,
                      undo: list[Undo]) -> SubtreeResult:
    """Upstream's compositePodGroupSchedulingDefaultAlgorithm: the children in turn,
    the group's feasibility asked before the first and after each."""
    children = tree.child_groups()
    scheduled, remaining = 0, len(children)
    status = steps.feasible(tree, scheduled, remaining)
    any_scheduled = False
    if status.code not in (Code.UNSCHEDULABLE, Code.ERROR):
        for child in children:
            child_result = _recurse(child, steps, results, undo)
            if child_result.status.code == Code.ERROR:
                status = Status.error("composite pod group evaluation failed due to child "
                                      f"error: {child_result.status.message()}")
                any_scheduled = False
                break
            any_scheduled = any_scheduled or child_result.any_scheduled
            remaining -= 1
            if child_result.status.ok:
                scheduled += 1
            status = steps.feasible(tree, scheduled, remaining)
            if status.code in (Code.UNSCHEDULABLE, Code.ERROR):
                break
    if status.code == Code.WAIT:
        status = _unschedulable(status)
    if not status.ok:
        _undo_all(undo)
        any_scheduled = False
    results[tree.key] = SubtreeResult(tree, status, any_scheduled)
    return results[tree.key]


def successful_leaves(root: GroupTree, results: Results) -> Iterator[SubtreeResult]:
    """The leaves that succeeded under ancestors that all succeeded, with members
    tried (upstream's successfulLeafResults); a subtree without a result is skipped."""
    result = results.get(root.key)
    if result is None or not result.status.ok:
        return
    for child in root.children:
        yield from successful_leaves(child, results)
    if result.outcome is not None and result.outcome.members:
        yield result


def complete_results(root: GroupTree, results: Results) -> Results:
    """Every group of the tree given a result, a parent's failure handed down to the
    children that succeeded under it or were never reached (upstream's
    completeCompositePodGroupAlgorithmResultMap); such a child has no outcome."""
    _hand_down(root, results, SUCCESS)
    return results


def _hand_down(tree: GroupTree, results: Results, parent: Status) -> None:
    result = results.get(tree.key)
    if result is None or (not parent.ok and result.status.ok):
        # A failure is the parent's very status, shared (upstream's pointer): what is
        # appended to it later shows in each group that shares it. A success is a
        # copy: SUCCESS is one object for every caller.
        result = SubtreeResult(tree, parent if not parent.ok
                               else replace(parent, reasons=list(parent.reasons)))
        results[tree.key] = result
    for child in tree.child_groups():
        _hand_down(child, results, result.status)
