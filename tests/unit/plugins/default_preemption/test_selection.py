"""DefaultPreemption's pure rules and args: PDB accounting with upstream's
preemption_test.go TestFilterVictimsWithPDBViolation cases (single-pod victims),
pickOneNodeForPreemption, MoreImportantPod / GetEarliestPodStartTime, and
validation_pluginargs_test.go TestValidateDefaultPreemptionArgs (v1.36.4)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from kpysched.plugins.default_preemption.selection import (
    Candidate,
    aggregate_errors,
    earliest_start_of_top_priority,
    more_important_pod,
    pick_one_node,
    rfc3339_nanos,
    sort_by_default_importance,
    sort_by_importance,
    split_by_pdb_violation,
    terminating_by_preemption,
)
from tests.unit.builders import FakeHandle, make_pod

NOW = 4 * 10**18  # 2096: later than every start time below


def info(name: str, namespace: str = "default", priority: int = 0, start: str | None = None,
         **labels: str) -> PodInfo:
    built = make_pod(name, namespace).priority(priority)
    for key, value in labels.items():
        built.label(key, value)
    built.obj().status.start_time = start
    return built.info()


def budget(selector: api.LabelSelector | None, allowed: int = 0, disrupted: Sequence[str] = (),
           namespace: str = "default") -> api.PodDisruptionBudget:
    return api.PodDisruptionBudget(
        metadata=api.ObjectMeta(namespace=namespace),
        spec=api.PodDisruptionBudgetSpec(selector=selector),
        status=api.PodDisruptionBudgetStatus(
            disruptions_allowed=allowed, disrupted_pods={p: "2024-01-01T00:00:00Z"
                                                         for p in disrupted}))


def labels(**match: str) -> api.LabelSelector:
    return api.LabelSelector(match_labels=match)


NO_MATCH = info("p1", "", app="foo")
MATCH = info("p1", app="foo")
MATCH2 = info("p2", app="foo")
MULTI = info("p1", app="foo", tier="backend")

PDB_CASES = [
    pytest.param([], [], [], [], id="no victims, no PDBs"),
    pytest.param([NO_MATCH], [budget(labels(app="bar"))], [], [NO_MATCH],
                 id="victim with no matching PDBs"),
    pytest.param([MATCH], [budget(labels(app="foo"), 1)], [], [MATCH],
                 id="victim matching PDB, adequate DisruptionsAllowed"),
    pytest.param([MATCH], [budget(labels(app="foo"), 0)], [MATCH], [],
                 id="victim matching PDB, no DisruptionsAllowed"),
    pytest.param([MATCH, MATCH2], [budget(labels(app="foo"), 1)], [MATCH2], [MATCH],
                 id="multiple victims matching the same PDB"),
    pytest.param([MATCH], [budget(labels(app="foo"), 0, ["p1"])], [], [MATCH],
                 id="pod in DisruptedPods is ignored"),
    pytest.param([MATCH], [budget(api.LabelSelector(), 0)], [], [MATCH],
                 id="PDB with empty selector"),
    pytest.param([MULTI], [budget(labels(app="foo"), 1), budget(labels(tier="backend"), 0)],
                 [MULTI], [], id="Multiple PDBs"),
    pytest.param([MATCH], [budget(None, 0)], [], [MATCH], id="kpysched: PDB without selector"),
    pytest.param([MATCH], [budget(labels(app="foo"), 0, namespace="other")], [], [MATCH],
                 id="kpysched: PDB in another namespace"),
    pytest.param([info("p1")], [budget(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="app", operator="DoesNotExist")]), 0)], [],
                 [info("p1")], id="kpysched: pod without labels matches no PDB"),
    pytest.param([MATCH], [budget(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="app", operator="Gt", values=["1"])]), 0)], [], [MATCH],
                 id="kpysched: invalid selector matches nothing"),
    pytest.param([MATCH, MATCH2], [budget(labels(app="foo"), 0), budget(labels(app="foo"), 5)],
                 [MATCH, MATCH2], [], id="kpysched: every matching PDB is charged"),
]


@pytest.mark.parametrize("first_violation_ends", [False, True], ids=["v1.36", "v1.37"])
@pytest.mark.parametrize(("pods", "pdbs", "violating", "non_violating"), PDB_CASES)
def test_split_by_pdb_violation(pods: list[PodInfo], pdbs: list[api.PodDisruptionBudget],
                                violating: list[PodInfo], non_violating: list[PodInfo],
                                first_violation_ends: bool) -> None:
    """The table agrees for both releases' accounting (upstream's v1.36 table of
    filterPodsWithPDBViolation and v1.37's of FilterVictimsWithPDBViolation)."""
    got_violating, got_non_violating = split_by_pdb_violation(
        pods, pdbs, first_violation_ends=first_violation_ends)
    assert [p.key for p in got_violating] == [p.key for p in violating]
    assert [p.key for p in got_non_violating] == [p.key for p in non_violating]


@pytest.mark.parametrize(("first_violation_ends", "violating", "non_violating"), [
    (False, ["default/p1", "default/p2"], []),
    (True, ["default/p1"], ["default/p2"]),
], ids=["v1.36: every budget p1 matches is charged",
        "v1.37: p1's first violated budget ends its charging"])
def test_a_victim_matching_two_budgets(first_violation_ends: bool, violating: list[str],
                                       non_violating: list[str]) -> None:
    both = info("p1", app="foo", tier="backend")
    backend_only = info("p2", tier="backend")
    pdbs = [budget(labels(app="foo"), 0), budget(labels(tier="backend"), 1)]
    got = split_by_pdb_violation([both, backend_only], pdbs,
                                 first_violation_ends=first_violation_ends)
    assert ([p.key for p in got[0]], [p.key for p in got[1]]) == (violating, non_violating)


# --- ordering and start times ------------------------------------------------------------

@pytest.mark.parametrize(("text", "nanos"), [
    pytest.param("1970-01-01T00:00:00Z", 0, id="epoch"),
    pytest.param("1970-01-01T00:00:00.000000005Z", 5, id="nanoseconds"),
    pytest.param("2024-03-01T12:30:15.5Z", 1709296215_500_000_000, id="fraction"),
    pytest.param("2024-03-01T14:30:15+02:00", 1709296215_000_000_000, id="offset"),
    pytest.param("not a time", None, id="garbage"),
])
def test_rfc3339_nanos(text: str, nanos: int | None) -> None:
    assert rfc3339_nanos(text) == nanos


@pytest.mark.parametrize(("first", "second", "expected"), [
    pytest.param(info("a", priority=2), info("b", priority=1), True, id="higher priority"),
    pytest.param(info("a", priority=1), info("b", priority=2), False, id="lower priority"),
    pytest.param(info("a", start="2024-01-01T00:00:00Z"), info("b", start="2024-01-02T00:00:00Z"),
                 True, id="older at equal priority"),
    pytest.param(info("a", start="2024-01-02T00:00:00Z"), info("b", start="2024-01-01T00:00:00Z"),
                 False, id="newer at equal priority"),
    pytest.param(info("a", start="2024-01-01T00:00:00Z"), info("b"), True,
                 id="started beats not started (now)"),
    pytest.param(info("a"), info("b"), False, id="neither started: equal"),
])
def test_more_important_pod(first: PodInfo, second: PodInfo, expected: bool) -> None:
    assert more_important_pod(first, second, NOW) is expected


def test_sort_by_importance_is_stable_for_ties() -> None:
    pods = [info("a"), info("b", priority=5), info("c"), info("d", priority=5)]
    ordered = sort_by_importance(pods, lambda x, y: more_important_pod(x, y, NOW))
    assert [p.name for p in ordered] == ["b", "d", "a", "c"]


@given(st.lists(st.tuples(st.sampled_from((-5, 0, 5)),
                          st.sampled_from((None, "1970-01-01T00:00:01Z",
                                           "1970-01-01T00:00:02Z"))), max_size=8))
def test_sort_by_default_importance_orders_as_the_comparisons_do(
        drawn: list[tuple[int, str | None]]) -> None:
    pods = [info(f"p{i}", priority=priority, start=start)
            for i, (priority, start) in enumerate(drawn)]
    by_comparisons = sort_by_importance(pods, lambda x, y: more_important_pod(x, y, NOW))
    assert [p.name for p in sort_by_default_importance(pods, NOW)] == \
        [p.name for p in by_comparisons]


def test_earliest_start_of_top_priority() -> None:
    victims = [info("a", priority=5, start="1970-01-01T00:00:03Z"),
               info("b", priority=1, start="1970-01-01T00:00:01Z"),
               info("c", priority=5, start="1970-01-01T00:00:02Z")]
    assert earliest_start_of_top_priority(victims, NOW) == 2 * 10**9
    assert earliest_start_of_top_priority([info("x")], NOW) == NOW


def test_terminating_by_preemption() -> None:
    pod = make_pod("p").terminating()
    pod.obj().status.conditions = [
        api.PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    assert terminating_by_preemption(pod.info())
    pod.obj().status.conditions = [
        api.PodCondition(type="DisruptionTarget", status="True", reason="EvictionByEvictionAPI"),
        api.PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    assert not terminating_by_preemption(pod.info())  # only the first one counts
    alive = make_pod("q")
    alive.obj().status.conditions = [
        api.PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    assert not terminating_by_preemption(alive.info())


# --- pickOneNodeForPreemption --------------------------------------------------------------

def cand(name: str, *victims: tuple[int, str | None], violations: int = 0) -> Candidate:
    return Candidate(name, tuple(info(f"{name}-{i}", priority=priority, start=start)
                                 for i, (priority, start) in enumerate(victims)), violations)


T1, T2, T3 = "1970-01-01T00:00:01Z", "1970-01-01T00:00:02Z", "1970-01-01T00:00:03Z"

PICK = [
    pytest.param([cand("a", (1, T1), violations=2), cand("b", (9, T1), violations=1)], "b",
                 id="fewest PDB violations"),
    pytest.param([cand("a", (5, T1)), cand("b", (3, T1), (3, T1))], "b",
                 id="lowest highest-victim priority"),
    pytest.param([cand("a", (5, T1), (4, T1)), cand("b", (5, T1), (1, T1))], "b",
                 id="smallest priority sum"),
    pytest.param([cand("a", (-5, T1), (-5, T1)), cand("b", (-5, T1))], "b",
                 id="priority sum counts negative priorities as positive offsets"),
    pytest.param([cand("a", (5, T1), (0, T1)), cand("b", (5, T1), (0, T1), (0, T1))], "a",
                 id="each victim adds to the offset sum"),
    pytest.param([cand("a", (5, T1)), cand("b", (5, T3))], "b",
                 id="latest start of the top-priority victims"),
    pytest.param([cand("a", (5, T2), (1, T3)), cand("b", (5, T3), (1, T1))], "b",
                 id="start time looks at top-priority victims only"),
    pytest.param([cand("a", (5, T1)), cand("b", (5, None))], "b",
                 id="a victim that has not started counts as starting now"),
    pytest.param([cand("a", (5, T1)), cand("b", (5, T1))], "a", id="then the first"),
]


@pytest.mark.parametrize(("candidates", "expected"), PICK)
def test_pick_one_node(candidates: list[Candidate], expected: str) -> None:
    assert pick_one_node(candidates, NOW).name == expected


@pytest.mark.parametrize(("messages", "expected"), [
    pytest.param(["a"], "a", id="one"),
    pytest.param(["a", "a"], "a", id="duplicates collapse"),
    pytest.param(["a", "b", "a"], "[a, b]", id="distinct, bracketed"),
])
def test_aggregate_errors(messages: list[str], expected: str) -> None:
    assert aggregate_errors(messages) == expected


# --- args ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "message"), [
    pytest.param({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}, None,
                 id="valid args (default)"),
    pytest.param({"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
                 "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
                 id="negative minCandidateNodesPercentage"),
    pytest.param({"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
                 "minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
                 id="minCandidateNodesPercentage over 100"),
    pytest.param({"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
                 "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
                 id="negative minCandidateNodesAbsolute"),
    pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
                 "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time "
                 "as minCandidateNodesAbsolute; minCandidateNodesAbsolute: Invalid value: 0: "
                 "cannot be zero at the same time as minCandidateNodesPercentage",
                 id="all zero"),
    pytest.param({"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
                 "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]; "
                 "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
                 id="both negative"),
    pytest.param({"minCandidateNodesPercentage": "10"}, "minCandidateNodesPercentage",
                 id="kpysched: strings are not numbers"),
    pytest.param({"minCandidateNodes": 1}, "minCandidateNodes", id="kpysched: unknown field"),
])
def test_args_validation(raw: Mapping[str, object], message: str | None) -> None:
    if message is None:
        DefaultPreemptionArgs.model_validate(raw)
        return
    with pytest.raises(pydantic.ValidationError) as raised:
        DefaultPreemptionArgs.model_validate(raw)
    assert message in str(raised.value)


@pytest.mark.parametrize("raw", [
    pytest.param({}, id="absent"),
    pytest.param({"minCandidateNodesPercentage": None, "minCandidateNodesAbsolute": None},
                 id="null"),
])
def test_args_defaults(raw: Mapping[str, object]) -> None:
    args = DefaultPreemptionArgs.model_validate(raw)
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)


@pytest.mark.parametrize(("percentage", "absolute", "nodes", "expected"), [
    pytest.param(10, 100, 50, 50, id="never more than the nodes"),
    pytest.param(10, 100, 5000, 500, id="percentage above the absolute floor"),
    pytest.param(10, 100, 999, 100, id="absolute floor"),
    pytest.param(40, 1, 5, 2, id="percentage rounds down"),
    pytest.param(0, 3, 10, 3, id="percentage off"),
    pytest.param(1, 0, 50, 0, id="absolute off: can round down to none, as upstream"),
])
def test_offset_and_num_candidates(percentage: int, absolute: int, nodes: int,
                                   expected: int) -> None:
    plugin = DefaultPreemption(
        DefaultPreemptionArgs(minCandidateNodesPercentage=percentage,
                              minCandidateNodesAbsolute=absolute),
        FakeHandle(), rng=random.Random(1))  # type: ignore[arg-type]
    offset, count = plugin.offset_and_num_candidates(nodes)
    assert 0 <= offset < nodes
    assert count == expected
