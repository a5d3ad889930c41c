"""The tree algorithm of CompositePodGroup (scheduling/composite_algorithm.py) with
fake steps: each leaf either places its members or fails; a composite group's
feasibility is GangScheduling's rule over its children (minGroupCount, 1 for basic).

The first tests port upstream v1.37.2's schedule_one_podgroup_test.go cases
TestCPGMinGroupCount_Internal, TestCPGHierarchicalScheduling_Internal,
TestCPGHierarchicalScheduling_ScheduleOnePodGroup and TestCPGBasicWithGangChildren_Internal
(which pods bind, which fail); the rest cover placements and failures handed down.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from kpysched.framework.placement import Placement
from kpysched.framework.pod_group_tree import EntityKey, GroupTree, composite_key, pod_group_key
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.composite_pod_groups import min_group_count
from kpysched.scheduling.attempt import GroupOutcome, MemberResult
from kpysched.scheduling.composite_algorithm import (
    Results,
    Undo,
    complete_results,
    decide_tree,
    successful_leaves,
)
from kpysched.scheduling.pod_group_placement import feasibility
from tests.unit.builders import make_composite_pod_group, make_pod_group

NS = "default"


def leaf(name: str) -> GroupTree:
    return GroupTree(pod_group_key(NS, name), pod_group=make_pod_group(name, 1, NS))


def composite(name: str, min_groups: int | None, *children: GroupTree) -> GroupTree:
    return GroupTree(composite_key(NS, name),
                     composite=make_composite_pod_group(name, min_groups, NS),
                     children=list(children))


def _member(ok: bool, placement: str) -> MemberResult:
    # Only the status is read by the algorithm; the attempt is never touched. The
    # nomination says which placement the member was tried in.
    return MemberResult(cast(Any, None),
                        SUCCESS if ok else Status.unschedulable("insufficient cpu"),
                        nominated=placement)


@dataclass
class FakeSteps:
    """Leaves named in `fits` place their members in any placement whose name is
    in fits[leaf] (None: every placement); composite groups named in `domains` are
    cut into those placements; `scores` rank placements by name."""

    fits: dict[str, set[str] | None]
    domains: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    errors: set[str] = field(default_factory=set)
    placement: str = "cluster"
    assumed: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def leaf(self, tree: GroupTree) -> tuple[GroupOutcome, list[Undo]]:
        name = tree.key.name
        self.log.append(f"{name}@{self.placement}")
        if name in self.errors:
            return GroupOutcome([], Status.error("boom")), []
        where = self.fits.get(name, set())
        ok = where is None or self.placement in where
        failed = Status.unschedulable("pod group is unschedulable", "minCount (1) cannot be "
                                      "satisfied: 0 scheduled, 0 remaining")
        outcome = GroupOutcome([_member(ok, self.placement)], SUCCESS if ok else failed)
        return outcome, self._assume(name) if ok else []

    def _assume(self, name: str) -> list[Undo]:
        self.assumed.append(name)
        return [lambda: self.assumed.remove(name)]

    def placements(self, tree: GroupTree) -> tuple[list[Placement], Status]:
        names = self.domains.get(tree.key.name, [self.placement])
        return [Placement(name, ()) for name in names], SUCCESS

    @contextmanager
    def within(self, placement: Placement) -> Iterator[None]:
        parent, self.placement = self.placement, placement.name
        try:
            yield
        finally:
            self.placement = parent

    def feasible(self, tree: GroupTree, scheduled: int, remaining: int) -> Status:
        assert tree.composite is not None
        return feasibility(min_group_count(tree.composite), scheduled, remaining)

    def score(self, tree: GroupTree, fitted: list[tuple[Placement, list[GroupOutcome]]]
              ) -> tuple[list[int], Status]:
        return [self.scores.get(placement.name, 0) for placement, _ in fitted], SUCCESS

    def assume(self, outcome: GroupOutcome) -> list[Undo]:
        self.log.append(f"again@{self.placement}")
        return self._assume("again")


def bound(root: GroupTree, results: Results) -> list[str]:
    """The leaves whose members would bind: successful under successful ancestors."""
    return sorted(result.tree.key.name for result in successful_leaves(root, results))


def status_of(results: Results, key: EntityKey) -> Status:
    return results[key].status


def test_min_group_count_two_of_three_children_bind_the_third_fails() -> None:
    """TestCPGMinGroupCount_Internal: root gang of 2 over pg1, pg2 (fit) and pg3."""
    root = composite("cpg-root", 2, leaf("pg1"), leaf("pg2"), leaf("pg3"))
    steps = FakeSteps({"pg1": None, "pg2": None})
    results = complete_results(root, decide_tree(root, steps))
    assert status_of(results, root.key).ok
    assert bound(root, results) == ["pg1", "pg2"]
    assert not status_of(results, pod_group_key(NS, "pg3")).ok
    assert steps.assumed == []  # every assumption undone


def test_hierarchy_of_three_levels() -> None:
    """TestCPGHierarchicalScheduling_Internal: root gang 2 over sub1 (gang 2: pg1, pg2,
    pg3 failing), sub2 (basic: pg4, pg5) and sub3 (gang 2: pg6, pg7 both failing)."""
    root = composite("cpg-root", 2,
                     composite("cpg-sub1", 2, leaf("pg1"), leaf("pg2"), leaf("pg3")),
                     composite("cpg-sub2", None, leaf("pg4"), leaf("pg5")),
                     composite("cpg-sub3", 2, leaf("pg6"), leaf("pg7")))
    steps = FakeSteps({name: None for name in ("pg1", "pg2", "pg4", "pg5")})
    results = complete_results(root, decide_tree(root, steps))
    assert bound(root, results) == ["pg1", "pg2", "pg4", "pg5"]
    for failed in ("pg3", "pg6", "pg7"):
        assert not status_of(results, pod_group_key(NS, failed)).ok
    # sub3 cannot make 2 once pg6 failed with one child left: pg7 is never tried.
    assert "pg7@cluster" not in steps.log
    # Every composite group goes through placements (its parent's, unconstrained).
    assert status_of(results, composite_key(NS, "cpg-sub3")).message() == (
        "pod group is unschedulable, 0/1 placements are available, first placement "
        "status: minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")


def test_each_child_a_gang_of_one_two_of_three_fit() -> None:
    """TestCPGHierarchicalScheduling_ScheduleOnePodGroup: p1 and p2's groups bind."""
    root = composite("cpg-root", 2, leaf("pg1"), leaf("pg2"), leaf("pg3"))
    results = complete_results(root, decide_tree(root, FakeSteps({"pg1": None, "pg2": None})))
    assert bound(root, results) == ["pg1", "pg2"]


def test_basic_root_lets_its_ready_gang_children_go_alone() -> None:
    """TestCPGBasicWithGangChildren_Internal: basic root, pg1 fits, pg2 does not."""
    root = composite("cpg-root", None, leaf("pg1"), leaf("pg2"))
    results = complete_results(root, decide_tree(root, FakeSteps({"pg1": None})))
    assert status_of(results, root.key).ok
    assert bound(root, results) == ["pg1"]


def test_one_child_short_binds_nothing_and_hands_the_failure_down() -> None:
    root = composite("root", 3, leaf("a"), leaf("b"), leaf("c"))
    results = complete_results(root, decide_tree(root, FakeSteps({"a": None, "b": None})))
    want = "pod group is unschedulable, 0/1 placements are available, first placement " \
           "status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    assert status_of(results, root.key).message() == want
    assert bound(root, results) == []
    # a and b fit on their own, but their parent failed: they take its words.
    assert status_of(results, pod_group_key(NS, "a")).message() == want
    assert status_of(results, pod_group_key(NS, "c")).code == Code.UNSCHEDULABLE


def test_children_are_tried_oldest_first_and_stop_once_the_gang_cannot_be_met() -> None:
    old = GroupTree(pod_group_key(NS, "z"),
                    pod_group=make_pod_group("z", 1, NS, created="2026-11-28T05:00:00Z"))
    new = GroupTree(pod_group_key(NS, "a"),
                    pod_group=make_pod_group("a", 1, NS, created="2026-11-28T05:00:09Z"))
    root = composite("root", 2, new, old)
    steps = FakeSteps({})
    complete_results(root, decide_tree(root, steps))
    assert steps.log == ["z@cluster"]  # z failed: 0 + 1 remaining < 2, a not tried


def test_parent_constraint_tries_each_domain_and_keeps_the_one_where_all_fit() -> None:
    root = composite("root", 2, leaf("a"), leaf("b"))
    steps = FakeSteps({"a": {"rack-1", "rack-2"}, "b": {"rack-2"}},
                      domains={"root": ["rack-1", "rack-2"]})
    results = complete_results(root, decide_tree(root, steps))
    assert status_of(results, root.key).ok
    assert bound(root, results) == ["a", "b"]
    assert steps.log == ["a@rack-1", "b@rack-1", "a@rack-2", "b@rack-2",
                         "again@cluster", "again@cluster"]
    assert steps.assumed == []


def test_several_domains_fit_the_best_score_wins_ties_to_the_first() -> None:
    root = composite("root", 1, leaf("a"))
    for scores, winner in (({"rack-1": 10, "rack-2": 90}, "rack-2"), ({}, "rack-1")):
        steps = FakeSteps({"a": None}, domains={"root": ["rack-1", "rack-2"]}, scores=scores)
        results = decide_tree(root, steps)
        assert status_of(results, root.key).ok
        outcome = results[pod_group_key(NS, "a")].outcome
        assert outcome is not None
        assert outcome.members[0].nominated == winner
        # The winner is assumed again in the parent's placement, then undone.
        assert steps.log[-1] == "again@cluster"
        assert steps.assumed == []


def test_no_domain_fits_keeps_the_first_domains_results() -> None:
    root = composite("root", 2, leaf("a"), leaf("b"))
    steps = FakeSteps({"a": {"rack-2"}}, domains={"root": ["rack-1", "rack-2"]})
    results = decide_tree(root, steps)
    assert status_of(results, root.key).message() == (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")
    # rack-1's: a failed there (b was not tried).
    assert not status_of(results, pod_group_key(NS, "a")).ok
    assert pod_group_key(NS, "b") not in results


def test_a_childs_error_fails_the_tree_with_upstreams_words() -> None:
    root = composite("root", 1, leaf("a"), leaf("b"))
    results = complete_results(root, decide_tree(root, FakeSteps({"b": None}, errors={"a"})))
    status = status_of(results, root.key)
    assert status.code == Code.ERROR
    assert status.message() == "composite pod group evaluation failed due to child error: boom"
    assert status_of(results, pod_group_key(NS, "b")).code == Code.ERROR


def test_success_with_nothing_placed_is_unschedulable() -> None:
    # A basic root whose only child is an empty composite: feasible, nothing placed.
    root = composite("root", None, composite("empty", 0))
    results = decide_tree(root, FakeSteps({}))
    assert status_of(results, root.key).message() == "pod group is unschedulable"
