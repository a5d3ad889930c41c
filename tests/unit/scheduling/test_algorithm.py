"""Algorithm.schedule and Diagnosis, against upstream's schedulePod / findNodesThatFitPod /
numFeasibleNodesToFind (pkg/scheduler/schedule_one.go) and FitError.Error
(pkg/scheduler/framework/types.go)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import NodeRows
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.algorithm import (
    Algorithm,
    ScheduleResult,
    _first_passing,
    num_feasible_nodes_to_find,
)
from tests.unit.builders import NodeBuilder, make_node, make_pod, make_snapshot
from tests.unit.framework.fake_plugins import Script, SharedHandle, build, fake

FILTER_A = fake("FilterA", "preFilter", "filter")
FILTER_B = fake("FilterB", "filter")
SCORE = fake("Score", "preScore", "score")


def nodes(*names: str) -> list[NodeInfo]:
    return [make_node(name).capacity(cpu="4", memory="8Gi", pods="110").info()
            for name in names]


def numbered(count: int) -> list[NodeInfo]:
    return nodes(*(f"n{i:04d}" for i in range(count)))


def pod() -> PodInfo:
    return make_pod("p").req(cpu="100m").info()


def schedule(algorithm: Algorithm, framework: Framework, snapshot: Snapshot,
             info: PodInfo | None = None) -> ScheduleResult | Diagnosis | Status:
    return algorithm.schedule(framework, CycleState(), info or pod(), snapshot)


def result(outcome: ScheduleResult | Diagnosis | Status) -> ScheduleResult:
    assert isinstance(outcome, ScheduleResult), outcome
    return outcome


def diagnosis(outcome: ScheduleResult | Diagnosis | Status) -> Diagnosis:
    assert isinstance(outcome, Diagnosis), outcome
    return outcome


def filtered(log: list[str]) -> list[str]:
    return [entry.split(":", 1)[1] for entry in log if ".filter:" in entry]


# --- numFeasibleNodesToFind ------------------------------------------------------------------


@pytest.mark.parametrize(("percentage", "num_nodes", "expected"), [
    pytest.param(0, 10, 10, id="not set and nodes number not more than 50"),
    pytest.param(40, 10, 10, id="set and nodes number not more than 50"),
    pytest.param(0, 1000, 420, id="not set and nodes number more than 50"),
    pytest.param(40, 1000, 400, id="set and nodes number more than 50"),
    pytest.param(0, 6000, 300, id="not set and nodes number more than 50*125"),
    pytest.param(40, 6000, 2400, id="set and nodes number more than 50*125"),
    pytest.param(0, 99, 99, id="under the minimum of 100: all nodes"),
    pytest.param(0, 100, 100, id="adaptive 50% of 100 is raised to the minimum"),
    pytest.param(0, 5000, 500, id="adaptive 10%"),
    pytest.param(0, 10000, 500, id="adaptive floored at 5%"),
    pytest.param(1, 1000, 100, id="explicit 1% raised to the minimum"),
    pytest.param(100, 1000, 1000, id="explicit 100%"),
    pytest.param(0, 0, 0, id="no nodes"),
])
def test_num_feasible_nodes_to_find(percentage: int, num_nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, num_nodes) == expected


# --- FitError message ------------------------------------------------------------------------


def statuses(*reasons: str) -> dict[str, Status]:
    return {f"node{i + 1}": Status.unschedulable(reason) for i, reason in enumerate(reasons)}


PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
F1 = "Node(s) failed Filter plugin FalseFilter-1"
F2 = "Node(s) failed Filter plugin FalseFilter-2"
POST = "Error running PostFilter plugin FailedPostFilter"


# Upstream's TestFitError_Error, row by row, plus sorting cases.
@pytest.mark.parametrize(("diag", "message"), [
    pytest.param(Diagnosis(3, statuses(PRE, PRE, PRE), pre_filter_msg=PRE),
                 f"0/3 nodes are available: {PRE}.", id="nodes failed Prefilter plugin"),
    pytest.param(Diagnosis(3, statuses(PRE, PRE, PRE), pre_filter_msg=PRE, post_filter_msg=POST),
                 f"0/3 nodes are available: {PRE}. {POST}",
                 id="nodes failed Prefilter plugin and the preemption also failed"),
    pytest.param(Diagnosis(3, statuses(F1, F1, F1)), f"0/3 nodes are available: 3 {F1}.",
                 id="nodes failed one Filter plugin with an empty PostFilterMsg"),
    pytest.param(Diagnosis(3, statuses(F1, F1, F1), post_filter_msg=POST),
                 f"0/3 nodes are available: 3 {F1}. {POST}",
                 id="nodes failed one Filter plugin with a non-empty PostFilterMsg"),
    pytest.param(Diagnosis(3, statuses(F1, F1, F2)),
                 f"0/3 nodes are available: 1 {F2}, 2 {F1}.",
                 id="nodes failed two Filter plugins with an empty PostFilterMsg"),
    pytest.param(Diagnosis(3, statuses(F1, F1, F2), post_filter_msg=POST),
                 f"0/3 nodes are available: 1 {F2}, 2 {F1}. {POST}",
                 id="nodes failed two Filter plugins with a non-empty PostFilterMsg"),
    pytest.param(Diagnosis(1, statuses("Node failed Permit plugin Permit-1")),
                 "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
                 id="failed to Permit on node"),
    pytest.param(Diagnosis(12, statuses(*(["Insufficient cpu"] * 10 + ["Too many pods"] * 2))),
                 "0/12 nodes are available: 10 Insufficient cpu, 2 Too many pods.",
                 id="histogram sorted as strings (10 before 2)"),
    pytest.param(Diagnosis(2, {"a": Status.unschedulable("Insufficient cpu",
                                                         "Insufficient memory"),
                               "b": Status.unschedulable("Insufficient memory")}),
                 "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory.",
                 id="every reason of a status counts"),
    pytest.param(Diagnosis(3, statuses(F1, F2, F1), post_filter_msg=(
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming "
        "pod.")),
                 f"0/3 nodes are available: 1 {F2}, 2 {F1}. preemption: 0/3 nodes are "
                 "available: 3 No preemption victims found for incoming pod.",
                 id="preemption message appended as is"),
])
def test_diagnosis_message(diag: Diagnosis, message: str) -> None:
    assert diag.message() == message


# --- schedule --------------------------------------------------------------------------------


def test_picks_the_best_scoring_node() -> None:
    framework = build({"filter": ["FilterA"], "preScore": ["Score"], "score": ["Score"]},
                      FILTER_A, SCORE, scripts={"Score": Script(scores={"n2": 90, "n3": 40})})
    outcome = result(schedule(Algorithm(rng=random.Random(1)), framework,
                              make_snapshot(*nodes("n1", "n2", "n3"))))
    assert (outcome.node_name, outcome.evaluated_nodes, outcome.feasible_nodes) == ("n2", 3, 3)


def test_random_tie_break_among_the_top_scores() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"Score": Script(scores={"n1": 50, "n2": 80, "n3": 80})})
    snapshot = make_snapshot(*nodes("n1", "n2", "n3"))
    chosen = Counter(result(schedule(Algorithm(rng=random.Random(seed)), framework,
                                      snapshot)).node_name for seed in range(40))
    assert set(chosen) == {"n2", "n3"}


def test_tie_break_is_reproducible_with_a_seeded_rng() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE)
    snapshot = make_snapshot(*nodes("n1", "n2", "n3", "n4"))
    first, second = Algorithm(rng=random.Random(42)), Algorithm(rng=random.Random(42))
    picks = [(result(schedule(first, framework, snapshot)).node_name,
              result(schedule(second, framework, snapshot)).node_name) for _ in range(10)]
    assert all(a == b for a, b in picks)
    # The pick is the one choice() would make from the tied names in feasible order.
    ties = ["n1", "n2", "n3", "n4"]
    for seed in range(20):
        picked = result(schedule(Algorithm(rng=random.Random(seed)), framework, snapshot))
        assert picked.node_name == random.Random(seed).choice(ties)


def test_single_feasible_node_skips_scoring() -> None:
    log: list[str] = []
    framework = build({"filter": ["FilterA"], "preScore": ["Score"], "score": ["Score"]},
                      FILTER_A, SCORE, scripts={
                          "FilterA": Script(log=log, reject={
                              "n1": Status.unschedulable("no"), "n3": Status.unschedulable("no")}),
                          "Score": Script(log=log)})
    outcome = result(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3"))))
    assert (outcome.node_name, outcome.evaluated_nodes, outcome.feasible_nodes) == ("n2", 3, 1)
    assert not [entry for entry in log if entry.startswith("Score.")]


def test_without_score_plugins_the_first_feasible_node_is_taken() -> None:
    # Upstream: no score plugins (and no extenders) means numNodesToFind = 1.
    log: list[str] = []
    framework = build({"filter": ["FilterA"]}, FILTER_A, scripts={"FilterA": Script(log=log)})
    snapshot = make_snapshot(*nodes("n1", "n2", "n3"))
    algorithm = Algorithm(rng=random.Random(0))
    first = result(schedule(algorithm, framework, snapshot))
    assert (first.node_name, first.evaluated_nodes, first.feasible_nodes) == ("n1", 1, 1)
    assert filtered(log) == ["n1"]
    assert result(schedule(algorithm, framework, snapshot)).node_name == "n2"


def test_rotating_start_index_is_fair_across_cycles() -> None:
    # Upstream's TestFairEvaluationForNodes: 500 nodes, 30% -> 150 per cycle.
    log: list[str] = []
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"FilterA": Script(log=log)})
    all_nodes = numbered(500)
    snapshot = make_snapshot(*all_nodes)
    algorithm = Algorithm(percentage_of_nodes_to_score=30, rng=random.Random(0))
    to_find = num_feasible_nodes_to_find(30, 500)
    assert to_find == 150
    for cycle in range(2 * (500 // to_find + 1)):
        log.clear()
        outcome = result(schedule(algorithm, framework, snapshot))
        assert outcome.feasible_nodes == to_find
        seen = filtered(log)
        assert len(seen) == to_find
        assert seen[0] == all_nodes[cycle * to_find % 500].name


def test_profile_percentage_overrides_the_global_one() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE, percentage=30)
    outcome = result(schedule(Algorithm(percentage_of_nodes_to_score=100,
                                        rng=random.Random(0)), framework,
                              make_snapshot(*numbered(500))))
    assert outcome.feasible_nodes == 150


def test_rejected_nodes_count_as_evaluated_and_move_the_start_index() -> None:
    log: list[str] = []
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"FilterA": Script(log=log, reject={
                          "n1": Status.unschedulable("no")})})
    snapshot = make_snapshot(*nodes("n1", "n2", "n3", "n4"))
    algorithm = Algorithm(rng=random.Random(0))
    outcome = result(schedule(algorithm, framework, snapshot))
    assert (outcome.evaluated_nodes, outcome.feasible_nodes) == (4, 3)
    log.clear()
    schedule(algorithm, framework, snapshot)
    assert filtered(log) == ["n1", "n2", "n3", "n4"]  # 4 processed: back at the start


def test_pre_filter_result_narrows_the_nodes() -> None:
    log: list[str] = []
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA"], "score": ["Score"]},
                      FILTER_A, SCORE, scripts={"FilterA": Script(
                          log=log, pre_filter_nodes={"n2", "n3", "ghost"})})
    outcome = result(schedule(Algorithm(rng=random.Random(0)), framework,
                              make_snapshot(*nodes("n1", "n2", "n3"))))
    assert outcome.node_name in {"n2", "n3"}
    assert sorted(filtered(log)) == ["n2", "n3"]
    assert outcome.evaluated_nodes == 2


def test_nodes_outside_the_pre_filter_result_are_reported() -> None:
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA", "FilterB"]},
                      FILTER_A, FILTER_B, scripts={
                          "FilterA": Script(pre_filter_nodes={"n1"}),
                          "FilterB": Script(reject={"n1": Status.unschedulable("Too many pods")})})
    outcome = diagnosis(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3"))))
    assert outcome.message() == (
        "0/3 nodes are available: 1 Too many pods, "
        "2 node(s) didn't satisfy plugin(s) [FilterA].")
    assert outcome.unschedulable_plugins == {"FilterA", "FilterB"}


def test_start_index_wraps_over_all_nodes_after_narrowing() -> None:
    # Upstream: nextStartNodeIndex = (index + processed) % len(allNodes), also when a
    # PreFilterResult narrowed the nodes that were processed.
    log: list[str] = []
    narrowing = build({"preFilter": ["FilterA"], "filter": ["FilterA"], "score": ["Score"]},
                      FILTER_A, SCORE, scripts={"FilterA": Script(pre_filter_nodes={"n1", "n2"})})
    plain = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                  scripts={"FilterA": Script(log=log)})
    snapshot = make_snapshot(*nodes("n1", "n2", "n3", "n4", "n5"))
    algorithm = Algorithm(rng=random.Random(0))
    result(schedule(algorithm, narrowing, snapshot))
    result(schedule(algorithm, plain, snapshot))
    assert filtered(log)[0] == "n3"


def test_pre_filter_rejection_is_a_diagnosis_for_every_node() -> None:
    log: list[str] = []
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA"]}, FILTER_A, scripts={
        "FilterA": Script(log=log, pre_filter=Status.unresolvable("pod has unbound claims"))})
    outcome = diagnosis(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2"))))
    assert outcome.message() == "0/2 nodes are available: pod has unbound claims."
    every_node = outcome.statuses(["n1", "n2"])  # what PostFilter (preemption) reads
    assert set(every_node) == {"n1", "n2"}
    assert all(s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in every_node.values())
    assert outcome.unschedulable_plugins == {"FilterA"}
    assert filtered(log) == []


def test_pre_filter_error_is_returned() -> None:
    framework = build({"preFilter": ["FilterA"]}, FILTER_A,
                      scripts={"FilterA": Script(pre_filter=Status.error("boom"))})
    outcome = schedule(Algorithm(), framework, make_snapshot(*nodes("n1")))
    assert isinstance(outcome, Status)
    assert outcome.code == Code.ERROR


def test_filter_error_is_returned() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"FilterA": Script(reject={"n2": Status.error("boom")})})
    outcome = schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3")))
    assert isinstance(outcome, Status)
    assert (outcome.code, outcome.plugin) == (Code.ERROR, "FilterA")


def test_filter_rejections_make_the_diagnosis() -> None:
    framework = build({"filter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B, scripts={
        "FilterA": Script(reject={"n1": Status.unresolvable("node(s) had untolerated taint(s)")}),
        "FilterB": Script(reject={"n2": Status.unschedulable("Insufficient cpu"),
                                  "n3": Status.unschedulable("Insufficient cpu")})})
    outcome = diagnosis(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3"))))
    assert outcome.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.")
    assert outcome.unschedulable_plugins == {"FilterA", "FilterB"}
    assert outcome.node_to_status["n1"].plugin == "FilterA"
    assert outcome.node_to_status["n2"].code == Code.UNSCHEDULABLE


def test_no_nodes_at_all() -> None:
    framework = build({"filter": ["FilterA"]}, FILTER_A)
    outcome = schedule(Algorithm(), framework, Snapshot())
    assert not isinstance(outcome, ScheduleResult)
    assert outcome.message() == "no nodes available to schedule pods"


def test_score_error_is_returned() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"Score": Script(score_status=Status.error("boom"))})
    outcome = schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2")))
    assert isinstance(outcome, Status)
    assert outcome.code == Code.ERROR


# --- with the in-tree plugins ----------------------------------------------------------------

IN_TREE_PROFILE = {
    "preFilter": ["NodeResourcesFit"],
    "filter": ["NodeUnschedulable", "TaintToleration", "NodeResourcesFit"],
    "preScore": ["TaintToleration", "NodeResourcesFit"],
    "score": ["TaintToleration", "NodeResourcesFit"],
}


def in_tree_framework() -> Framework:
    return build(IN_TREE_PROFILE, weights={"TaintToleration": 3, "NodeResourcesFit": 1})


def test_in_tree_plugins_choose_the_least_allocated_node() -> None:
    busy = make_node("busy").capacity(cpu="8", memory="16Gi", pods="110").info(
        make_pod("load").req(cpu="6", memory="12Gi"))
    idle = make_node("idle").capacity(cpu="8", memory="16Gi", pods="110").info()
    small = make_node("small").capacity(cpu="500m", memory="16Gi", pods="110").info()
    outcome = result(schedule(Algorithm(rng=random.Random(0)), in_tree_framework(),
                              make_snapshot(busy, idle, small),
                              make_pod("p").req(cpu="1", memory="1Gi").info()))
    assert (outcome.node_name, outcome.feasible_nodes) == ("idle", 2)


def test_in_tree_fit_error_message() -> None:
    small = [make_node(f"small{i:02d}").capacity(cpu="1", memory="16Gi", pods="110").info()
             for i in range(10)]
    tainted = [make_node(f"tainted{i}").capacity(cpu="64", memory="64Gi", pods="110")
               .taint("dedicated", "gpu").info() for i in range(2)]
    outcome = diagnosis(schedule(Algorithm(), in_tree_framework(),
                                 make_snapshot(*small, *tainted),
                                 make_pod("p").req(cpu="2", memory="1Gi").info()))
    assert outcome.message() == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s).")
    assert outcome.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}


def test_rows_the_vector_verdict_rejected_report_their_first_failing_plugin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """When nothing fits, each node's reason is the first plugin in profile order that
    rejects it (a per-node plugin before a vector one included), while a vector plugin
    that passed a node is not asked again for it."""
    from kpysched.plugins.taint_toleration import TaintToleration

    asked: list[str] = []
    plain_filter = TaintToleration.filter

    def counting(self: TaintToleration, state: CycleState, pod: PodInfo,
                 node: NodeInfo) -> Status:
        asked.append(node.name)
        return plain_filter(self, state, pod, node)

    monkeypatch.setattr(TaintToleration, "filter", counting)
    framework = build({"preFilter": ["NodePorts", "NodeResourcesFit"],
                       "filter": ["NodeUnschedulable", "TaintToleration", "NodePorts",
                                  "NodeResourcesFit"]})

    def small(name: str) -> NodeBuilder:
        return make_node(name).capacity(cpu="1", memory="16Gi", pods="110")

    snapshot = make_snapshot(
        small("a-small").info(),
        small("tainted-small").taint("dedicated", "gpu").info(),
        small("port-taken-small").info(make_pod("web").host_port(80)),
        small("small").info(),
        small("cordoned-tainted").unschedulable().taint("dedicated", "gpu").info())
    outcome = diagnosis(schedule(Algorithm(), framework, snapshot,
                                 make_pod("p").req(cpu="2").host_port(80).info()))
    assert {name: status.plugin for name, status in outcome.node_to_status.items()} == {
        "a-small": "NodeResourcesFit",
        "tainted-small": "TaintToleration", "port-taken-small": "NodePorts",
        "small": "NodeResourcesFit", "cordoned-tainted": "NodeUnschedulable"}
    # Recorded in the snapshot's row order, whichever way each reason was found.
    assert list(outcome.node_to_status) == [info.name for info in snapshot.node_infos]
    assert outcome.message() == (
        "0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod "
        "ports, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
        "2 Insufficient cpu.")
    # TaintToleration's vector form judges tainted rows per node itself (one call each).
    # Beyond that, only the row its verdict rejected first asks it again for the reason;
    # the full chain would have asked it for every row NodeUnschedulable passed.
    assert sorted(asked) == ["cordoned-tainted", "tainted-small", "tainted-small"]


def test_rows_short_of_resources_get_their_reasons_without_a_per_node_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """When every plugin before NodeResourcesFit judged a row by vector, Fit states its
    reasons for all such rows at once: the same diagnosis, no per-node Fit call."""
    from kpysched.plugins.node_resources import NodeResourcesFit

    def must_not_run(*_: object) -> Status:
        raise AssertionError("NodeResourcesFit.filter ran per node")

    monkeypatch.setattr(NodeResourcesFit, "filter", must_not_run)
    small = [make_node(f"small{i:02d}").capacity(cpu="1", memory="16Gi", pods="110").info()
             for i in range(10)]
    full = make_node("full").capacity(cpu="64", memory="64Gi", pods="1").info(make_pod("x"))
    tainted = make_node("tainted").capacity(cpu="64", memory="64Gi", pods="110") \
        .taint("dedicated", "gpu").info()
    outcome = diagnosis(schedule(Algorithm(), in_tree_framework(),
                                 make_snapshot(*small, full, tainted),
                                 make_pod("p").req(cpu="2", memory="1Gi").info()))
    assert outcome.message() == (
        "0/12 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint(s), "
        "10 Insufficient cpu.")
    assert outcome.node_to_status["small00"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert outcome.node_to_status["full"].code == Code.UNSCHEDULABLE


def test_a_fitting_nominated_node_is_taken_without_scoring() -> None:
    log: list[str] = []
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE,
                      scripts={"FilterA": Script(log=log),
                               "Score": Script(log=log, scores={"n1": 100})})
    info = make_pod("p").req(cpu="100m").info()
    info.pod.status.nominated_node_name = "n3"
    outcome = result(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3")),
                              info))
    assert (outcome.node_name, outcome.evaluated_nodes, outcome.feasible_nodes) == ("n3", 1, 1)
    assert filtered(log) == ["n3"]
    assert not [entry for entry in log if entry.startswith("Score.")]


def test_a_nominated_node_that_no_longer_fits_falls_back_to_all_nodes() -> None:
    framework = build({"filter": ["FilterA"], "score": ["Score"]}, FILTER_A, SCORE, scripts={
        "FilterA": Script(reject={"n3": Status.unschedulable("Insufficient cpu")}),
        "Score": Script(scores={"n1": 100})})
    info = make_pod("p").req(cpu="100m").info()
    info.pod.status.nominated_node_name = "n3"
    outcome = result(schedule(Algorithm(), framework, make_snapshot(*nodes("n1", "n2", "n3")),
                              info))
    assert (outcome.node_name, outcome.feasible_nodes) == ("n1", 2)


def test_a_rejected_node_with_a_nominated_pod_reports_the_two_pass_chain() -> None:
    """When nothing fits, a node holding a nominated pod that outranks the incoming one
    is judged with that pod added (here it takes the port first), the others by their
    vector reasons; the diagnosis stays in row order."""
    handle = SharedHandle()
    framework = build({"preFilter": ["NodePorts", "NodeResourcesFit"],
                       "filter": ["NodePorts", "NodeResourcesFit"]}, handle=handle)
    small = [make_node(f"small{i}").capacity(cpu="1", memory="16Gi", pods="110").info()
             for i in range(4)]
    handle.nominated["small2"] = [make_pod("nominated").priority(100).host_port(80).info()]
    handle.nominated["small3"] = [make_pod("lower").priority(-1).host_port(80).info()]
    outcome = diagnosis(schedule(Algorithm(), framework, make_snapshot(*small),
                                 make_pod("p").req(cpu="2").host_port(80).info()))
    assert list(outcome.node_to_status) == ["small0", "small1", "small2", "small3"]
    assert {name: status.plugin for name, status in outcome.node_to_status.items()} == {
        "small0": "NodeResourcesFit", "small1": "NodeResourcesFit",
        "small2": "NodePorts", "small3": "NodeResourcesFit"}
    assert outcome.unschedulable_plugins == {"NodePorts", "NodeResourcesFit"}


# --- the vector path's rotating window -------------------------------------------------------
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(0, 39), st.integers(1, 45))
def test_first_passing_rows_follow_the_rotating_order(passes: list[bool], start: int,
                                                      wanted: int) -> None:
    # Reference: walk the rows from `start`, wrapping, as the per-node pass does.
    count = len(passes)
    start %= count
    walk = [(start + step) % count for step in range(count)]
    taken = [row for row in walk if passes[row]][:wanted]
    examined = walk.index(taken[-1]) + 1 if len(taken) == wanted else count

    rows, through = _first_passing(np.array(passes), start, wanted)

    assert rows.tolist() == taken
    assert through == examined


@pytest.mark.parametrize("start", [0, 4000])
def test_first_passing_rows_hold_only_themselves(start: int) -> None:
    # A recorded decision keeps these rows: they must not pin the index array of every
    # passing row (5000 here) behind a 100-row view.
    rows, _ = _first_passing(np.ones(5000, dtype=bool), start, 100)

    assert rows.base is None
    assert rows.nbytes == 100 * rows.itemsize


def test_node_rows_reads_the_snapshot_rows_it_names() -> None:
    infos = numbered(6)
    names = tuple(info.name for info in infos)
    view = NodeRows(infos, names, np.array([4, 1, 5], dtype=np.int64))

    assert len(view) == 3
    assert view[0] is infos[4] and view[-1] is infos[5]
    assert list(view) == [infos[4], infos[1], infos[5]]
    assert list(view[1:]) == [infos[1], infos[5]]
    assert view.names_of(np.array([2, 0])) == ["n0005", "n0004"]
    row_names = view.names()
    assert len(row_names) == 3 and row_names[1] == "n0001"
    assert row_names == ["n0004", "n0001", "n0005"] and list(row_names[:2]) == ["n0004", "n0001"]
