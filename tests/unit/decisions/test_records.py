"""Decision records as the algorithm and the framework fill them in (kpysched.decisions),
and the bounded store; the explain renderer's Filter counts against Diagnosis.message()."""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from typing import Any

import msgspec
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import RowNames
from kpysched.decisions.record import Decision, compact, compact_within
from kpysched.decisions.store import DecisionStore
from kpysched.explain.render import filter_counts
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.algorithm import Algorithm, ScheduleResult
from tests.unit.builders import make_node, make_pod, make_snapshot
from tests.unit.framework.fake_plugins import Script, build, fake

FILTER_A = fake("FilterA", "preFilter", "filter")
SCORE_A = fake("ScoreA", "score")
SCORE_B = fake("ScoreB", "score")
NORMALIZING = fake("Normalizing", "score", "normalize")


def nodes(*names: str, cpu: str = "4") -> list[NodeInfo]:
    return [make_node(name).capacity(cpu=cpu, memory="8Gi", pods="110").info()
            for name in names]


def record(framework: Framework, infos: list[NodeInfo], pod: PodInfo | None = None,
           seed: int = 0) -> tuple[ScheduleResult | Diagnosis | Status, Decision]:
    state = CycleState()
    state.decision = Decision("default/p", "uid", "test-scheduler", 1, "now")
    outcome = Algorithm(rng=random.Random(seed)).schedule(
        framework, state, pod or make_pod("p").req(cpu="100m").info(), make_snapshot(*infos))
    return outcome, state.decision


def test_scheduled_pod_records_feasible_nodes_weighted_scores_totals_and_ties() -> None:
    framework = build({"filter": ["FilterA"], "score": ["ScoreA", "ScoreB"]},
                      FILTER_A, SCORE_A, SCORE_B, weights={"ScoreA": 1, "ScoreB": 3},
                      scripts={"FilterA": Script(reject={"n4": Status.unschedulable("no")}),
                               "ScoreA": Script(scores={"n1": 10, "n2": 40, "n3": 70}),
                               "ScoreB": Script(scores={"n1": 50, "n2": 40, "n3": 30})})
    outcome, decision = record(framework, nodes("n1", "n2", "n3", "n4"))
    assert isinstance(outcome, ScheduleResult)
    by_node = dict(zip(decision.feasible, range(len(decision.feasible)), strict=True))
    assert set(by_node) == {"n1", "n2", "n3"}
    assert decision.rejected["n4"].plugin == "FilterA"
    assert decision.rejected["n4"].reasons == ["no"]
    assert [(s.plugin, s.weight) for s in decision.scores] == [("ScoreA", 1), ("ScoreB", 3)]
    totals = dict(zip(decision.feasible, decision.totals, strict=True))
    assert totals == {"n1": 160, "n2": 160, "n3": 160}
    for scores in decision.scores:
        assert len(scores.raw) == len(scores.normalized) == len(decision.feasible)
    for node, index in by_node.items():
        assert sum(s.normalized[index] * s.weight for s in decision.scores) == totals[node]
    assert sorted(decision.ties) == ["n1", "n2", "n3"]
    assert outcome.node_name in decision.ties


def test_the_chosen_node_is_the_single_top_total() -> None:
    framework = build({"filter": ["FilterA"], "score": ["ScoreA"]}, FILTER_A, SCORE_A,
                      weights={"ScoreA": 2},
                      scripts={"ScoreA": Script(scores={"n1": 10, "n2": 90, "n3": 40})})
    outcome, decision = record(framework, nodes("n1", "n2", "n3"))
    assert isinstance(outcome, ScheduleResult) and outcome.node_name == "n2"
    assert decision.ties == ["n2"]
    assert dict(zip(decision.feasible, decision.totals, strict=True))["n2"] == 180
    assert list(decision.scores[0].raw) == list(decision.scores[0].normalized)  # no ScoreExtensions


def test_unschedulable_counts_equal_the_failed_scheduling_message() -> None:
    """Real plugins, each node failing a different one (or two reasons on one node)."""
    framework = build({"preFilter": ["NodeResourcesFit"],
                       "filter": ["NodeUnschedulable", "TaintToleration", "NodeAffinity",
                                  "NodeResourcesFit"]})
    infos = [
        *nodes("small-1", "small-2", cpu="2"),
        make_node("tainted").capacity(cpu="8", memory="8Gi", pods="110")
        .taint("dedicated", "gpu").info(),
        make_node("cordoned").capacity(cpu="8", memory="8Gi", pods="110")
        .unschedulable().info(),
        make_node("tiny").capacity(cpu="1", memory="1Mi", pods="110").info(),
    ]
    pod = make_pod("p").req(cpu="6", memory="1Gi").info()
    outcome, decision = record(framework, infos, pod)
    assert isinstance(outcome, Diagnosis)
    assert {name: r.plugin for name, r in decision.rejected.items()} == {
        "small-1": "NodeResourcesFit", "small-2": "NodeResourcesFit",
        "tainted": "TaintToleration", "cordoned": "NodeUnschedulable",
        "tiny": "NodeResourcesFit"}
    assert decision.rejected["tiny"].reasons == ["Insufficient cpu", "Insufficient memory"]
    assert _counts(decision) == _message_counts(outcome.message())


def test_nodes_outside_the_pre_filter_result_count_as_the_message_does() -> None:
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA", "FilterB"]},
                      FILTER_A, fake("FilterB", "filter"), scripts={
                          "FilterA": Script(pre_filter_nodes={"n1"}),
                          "FilterB": Script(reject={"n1": Status.unschedulable("Too many pods")})})
    outcome, decision = record(framework, nodes("n1", "n2", "n3"))
    assert isinstance(outcome, Diagnosis)
    assert decision.pre_filter_nodes == ["n1"]
    assert _counts(decision) == _message_counts(outcome.message()) == Counter({
        "Too many pods": 1, "node(s) didn't satisfy plugin(s) [FilterA]": 2})


def test_pre_filter_rejection_is_recorded_as_the_message() -> None:
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA"]}, FILTER_A, scripts={
        "FilterA": Script(pre_filter=Status.unresolvable("pod has unbound claims"))})
    outcome, decision = record(framework, nodes("n1", "n2"))
    assert isinstance(outcome, Diagnosis)
    assert decision.pre_filter_message == "pod has unbound claims"
    assert decision.rejected == {}


def _counts(decision: Decision) -> Counter[str]:
    counts: Counter[str] = Counter()
    for (_, reason), (count, _) in filter_counts(decision.to_json()).items():
        counts[reason] += count
    return counts


def _message_counts(message: str) -> Counter[str]:
    body = message.split(" nodes are available: ", 1)[1].rstrip(".")
    return Counter({m[2]: int(m[1]) for m in
                    (re.match(r"(\d+) (.+)", part) for part in body.split(", ")) if m})


# --- the store -------------------------------------------------------------------------------


def decision(pod: str, attempt: int = 1) -> Decision:
    return Decision(f"default/{pod}", pod, "p", attempt, "now")


def test_store_keeps_the_last_capacity_decisions_oldest_evicted_first() -> None:
    store = DecisionStore(3)
    for attempt, pod in enumerate(["a", "b", "a", "c", "d"], start=1):
        store.add(decision(pod, attempt))
    assert len(store) == 3
    assert store.for_pod("default", "b") == []  # the oldest pod went first
    assert [d["attempt"] for d in store.for_pod("default", "a")] == [3]
    assert [d["attempt"] for d in store.for_pod("default", "c")] == [4]
    assert [d["attempt"] for d in store.for_pod("default", "d")] == [5]


def test_store_of_capacity_zero_keeps_nothing() -> None:
    store = DecisionStore(0)
    store.add(decision("a"))
    assert len(store) == 0 and store.for_pod("default", "a") == []


def test_store_update_is_seen_by_readers() -> None:
    store = DecisionStore(5)
    kept = decision("a")
    store.add(kept)
    store.update(kept, outcome="Bound", node="n1")
    assert store.for_pod("default", "a")[0] | {} == kept.to_json()
    assert store.for_pod("default", "a")[0]["outcome"] == "Bound"


def test_store_reads_from_another_thread_while_written() -> None:
    store = DecisionStore(50)
    stop = threading.Event()
    seen: list[int] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(len(store.for_pod("default", "hot")))

    reader = threading.Thread(target=read)
    reader.start()
    for attempt in range(2000):
        store.add(decision("hot", attempt))
    stop.set()
    reader.join()
    assert len(store) == 50 and max(seen, default=0) <= 50


def test_rejections_are_grouped_by_verdict_and_expand_per_node_in_json() -> None:
    from kpysched.decisions.record import Decision, record_rejections
    from kpysched.framework.diagnosis import Diagnosis
    from kpysched.framework.status import Status

    diagnosis = Diagnosis(4)
    for name in ("a", "b", "c"):
        diagnosis.node_to_status[name] = Status.unschedulable("Insufficient cpu",
                                                              plugin="NodeResourcesFit")
    diagnosis.node_to_status["d"] = Status.unresolvable("node(s) were unschedulable",
                                                        plugin="NodeUnschedulable")
    decision = Decision("ns/p", "u", "kpysched", 1, "t")
    record_rejections(decision, diagnosis)
    # One shared verdict per group, the nodes as a list of names.
    assert [(g.rejection.plugin, g.nodes) for g in decision.rejections] == [
        ("NodeResourcesFit", ["a", "b", "c"]), ("NodeUnschedulable", ["d"])]
    rejected = decision.to_json()["rejected"]
    assert rejected["b"] == {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"],
                             "code": "Unschedulable"}
    assert rejected["d"]["code"] == "UnschedulableAndUnresolvable"
    assert set(rejected) == {"a", "b", "c", "d"}


def _reference_groups(node_to_status: dict[str, object]) -> list[tuple[object, list[str]]]:
    """Group names by (plugin, reasons, code), keys in order of first appearance."""
    groups: dict[object, list[str]] = {}
    for name, status in node_to_status.items():
        key = (status.plugin, tuple(status.reasons), status.code.label)  # type: ignore[attr-defined]
        groups.setdefault(key, []).append(name)
    return list(groups.items())


@given(st.lists(st.tuples(st.integers(0, 11), st.booleans()), min_size=1, max_size=40))
def test_rejection_groups_keep_first_appearance_order_shared_or_not(
        picks: list[tuple[int, bool]]) -> None:
    """Nodes may share Status objects (vector reasons) or carry equal but distinct ones;
    either way a group is one (plugin, reasons, code), nodes in diagnosis order."""
    from kpysched.decisions.record import record_rejections

    shared = [Status.unschedulable(f"reason {i}", plugin=f"P{i % 3}") for i in range(12)]
    diagnosis = Diagnosis(len(picks))
    for n, (which, fresh) in enumerate(picks):
        diagnosis.node_to_status[f"node-{n}"] = (
            Status.unschedulable(f"reason {which}", plugin=f"P{which % 3}") if fresh
            else shared[which])
    decision = Decision("ns/p", "u", "kpysched", 1, "t")
    record_rejections(decision, diagnosis)
    got = [((g.rejection.plugin, tuple(g.rejection.reasons), g.rejection.code), g.nodes)
           for g in decision.rejections]
    assert got == _reference_groups(diagnosis.node_to_status)


def test_feasible_nodes_found_by_the_vector_path_are_recorded_by_name() -> None:
    # In-tree vector Filters find the feasible rows; the record names them lazily.
    framework = build({"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"],
                       "preScore": ["NodeResourcesFit"], "score": ["NodeResourcesFit"]})
    infos = nodes("n1", "n2", "n3") + nodes("tiny", cpu="50m")
    outcome, decision = record(framework, infos)
    assert isinstance(outcome, ScheduleResult)
    assert isinstance(decision.feasible, RowNames)
    assert sorted(decision.feasible) == ["n1", "n2", "n3"]
    found = decision.to_json()
    assert isinstance(found["feasible"], list) and sorted(found["feasible"]) == ["n1", "n2", "n3"]
    assert msgspec.json.decode(msgspec.json.encode(found))["feasible"] == found["feasible"]
    assert dict(zip(found["feasible"], found["totals"], strict=True)).keys() == {"n1", "n2", "n3"}
    assert outcome.node_name in found["ties"] and set(found["ties"]) <= {"n1", "n2", "n3"}
    assert isinstance(found["ties"], list) and list(decision.ties) == found["ties"]


def test_kept_score_vectors_take_the_narrowest_type_that_holds_them() -> None:
    for values, kept_type in (([-5, 0, 100, 32767], np.int16), ([-32769, 0], np.int32),
                              ([0, 2**31 - 1], np.int32), ([0, 2**31], np.int64),
                              ([-(2**31) - 1], np.int64)):
        original = np.array(values, dtype=np.int64)
        kept = compact(original)
        assert kept.dtype == kept_type, values
        assert kept.tolist() == values and kept is not original
    assert compact(np.zeros(0, dtype=np.int64)).tolist() == []


@given(st.lists(st.integers(-(2**40), 2**40), max_size=30), st.integers(0, 2**33),
       st.integers(0, 2**33))
def test_kept_vectors_within_known_bounds_are_what_compact_keeps(
        values: list[int], below: int, above: int) -> None:
    """compact_within (bounds the caller knows, no scan when int16 holds them) against
    compact (which scans): same type, same values, a copy, for any bounds that hold."""
    original = np.array(values, dtype=np.int64)
    low = (min(values) if values else 0) - below
    high = (max(values) if values else 0) + above
    kept, scanned = compact_within(original, low, high), compact(original)
    assert kept.dtype == scanned.dtype
    assert kept.tolist() == scanned.tolist() == values and kept is not original


def _halve(scores: list[Any]) -> Status:
    for score in scores:
        score.score //= 2
    return Status()


def test_raw_scores_are_kept_apart_only_for_a_plugin_that_normalises() -> None:
    """A normalising plugin's raw scores are the ones before Normalize; the next plugin's
    (no ScoreExtensions) raw scores are its own values, not the previous plugin's."""
    framework = build({"score": ["Normalizing", "ScoreA"]}, NORMALIZING, SCORE_A,
                      weights={"Normalizing": 1, "ScoreA": 1},
                      scripts={"Normalizing": Script(scores={"n1": 80, "n2": 20},
                                                     normalize=_halve),
                               "ScoreA": Script(scores={"n1": 7, "n2": 9})})
    _, decision = record(framework, nodes("n1", "n2"))
    index = {node: position for position, node in enumerate(decision.feasible)}
    normalizing, plain = decision.scores
    assert [normalizing.raw[index[n]] for n in ("n1", "n2")] == [80, 20]
    assert [normalizing.normalized[index[n]] for n in ("n1", "n2")] == [40, 10]
    assert [plain.raw[index[n]] for n in ("n1", "n2")] == [7, 9]
    assert list(plain.raw) == list(plain.normalized)
    found = decision.to_json()["scores"]
    assert found[1]["raw"] == found[1]["normalized"]


def test_totals_past_int16_bounds_keep_the_type_compact_picks() -> None:
    """Weights whose bound passes int16 (100 x 400) while the totals do not: the record
    keeps them as compact would (int16), and a total past int16 widens them."""
    for scores, kept_type in (({"n1": 10, "n2": 20}, np.int16),
                              ({"n1": 100, "n2": 20}, np.int32)):
        framework = build({"score": ["ScoreA"]}, SCORE_A, weights={"ScoreA": 400},
                          scripts={"ScoreA": Script(scores=scores)})
        _, decision = record(framework, nodes("n1", "n2"))
        totals = dict(zip(decision.feasible, decision.totals, strict=True))
        assert totals == {node: 400 * value for node, value in scores.items()}
        assert isinstance(decision.totals, np.ndarray) and decision.totals.dtype == kept_type
