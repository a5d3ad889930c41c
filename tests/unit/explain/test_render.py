"""kpysched.explain.render: the tables `kpysched explain` prints."""

from __future__ import annotations

from typing import Any

from kpysched.decisions.record import (
    Decision,
    PluginScores,
    Preemption,
    PreemptionCandidate,
    Rejection,
)
from kpysched.explain.render import render


def body(*decisions: Decision) -> dict[str, Any]:
    return {"pod": "ns/p", "decisions": [d.to_json() for d in decisions]}


def pending() -> Decision:
    d = Decision("ns/p", "u1", "kpysched", 2, "2026-01-01T00:00:00.000Z", total_nodes=6,
                 evaluated_nodes=6, outcome="Unschedulable",
                 message="0/6 nodes are available: 4 Insufficient cpu, 1 Insufficient "
                         "memory, 2 node(s) had untolerated taint {a: b}.")
    for name in ("n1", "n2", "n3"):
        d.reject(name, Rejection("NodeResourcesFit", ["Insufficient cpu"], "Unschedulable"))
    d.reject("n4", Rejection("NodeResourcesFit", ["Insufficient cpu", "Insufficient memory"],
                             "Unschedulable"))
    for name in ("n5", "n6"):
        d.reject(name, Rejection("TaintToleration", ["node(s) had untolerated taint {a: b}"],
                                 "UnschedulableAndUnresolvable"))
    return d


def test_nodes_grouped_by_plugin_and_reason_with_counts_and_examples() -> None:
    text = render(body(pending()))
    assert "Attempt 2 at 2026-01-01T00:00:00.000Z: Unschedulable" in text
    assert "0/6 nodes are available" in text
    lines = text.splitlines()
    assert any(line.split()[:4] == ["NodeResourcesFit", "4", "Insufficient", "cpu"]
               and "n1, n2, n3 (+1 more)" in line for line in lines)
    assert any(line.split()[:3] == ["NodeResourcesFit", "1", "Insufficient"]
               and line.rstrip().endswith("n4") for line in lines)
    assert any(line.split()[:2] == ["TaintToleration", "2"] and "n5, n6" in line
               for line in lines)


def test_nodes_outside_pre_filter_set_are_counted_not_named() -> None:
    d = Decision("ns/p", "u", "kpysched", 1, "t", total_nodes=5, outcome="Unschedulable",
                 pre_filter_nodes=["n1"],
                 absent_reason="node(s) didn't satisfy plugin(s) [NodeAffinity]")
    d.reject("n1", Rejection("NodePorts", ["node(s) didn't have free ports"],
                             "Unschedulable"))
    text = render(body(d))
    row = next(line for line in text.splitlines() if line.split()[:2] == ["PreFilter", "4"])
    assert row.split()[1] == "4" and "4 nodes" in row
    assert "PreFilter narrowed the 5 nodes to 1: n1" in text


def scheduled() -> Decision:
    d = Decision("ns/p", "u", "kpysched", 1, "t", total_nodes=4, evaluated_nodes=4,
                 feasible=["a", "b", "c"], totals=[149, 208, 208], ties=["b", "c"],
                 node="c", outcome="Bound")
    d.scores = [PluginScores("NodeResourcesFit", 1, [50, 70, 70], [50, 70, 70]),
                PluginScores("TaintToleration", 3, [0, 1, 1], [33, 46, 46])]
    d.reject("d", Rejection("NodeAffinity", ["node(s) didn't match"], "Unschedulable"))
    return d


def test_top_scored_nodes_with_weighted_columns_totals_and_ties() -> None:
    text = render(body(scheduled()), top=2)
    lines = text.splitlines()
    header = next(line for line in lines if line.strip().startswith("NODE "))
    assert "NodeResourcesFit(x1)" in header and "TaintToleration(x3)" in header
    rows = lines[lines.index(header) + 1:lines.index(header) + 3]
    assert [row.split()[0] for row in rows] == ["b", "c"]  # top 2, ties first by name
    assert rows[1].split()[1:5] == ["70", "138", "208", "chosen,"]
    assert rows[1].rstrip().endswith("chosen, tie") and rows[0].rstrip().endswith("tie")
    assert "2 nodes tie at the top score 208" in text
    assert "on node c" in text


def test_single_feasible_node_says_scoring_was_skipped() -> None:
    d = Decision("ns/p", "u", "kpysched", 1, "t", total_nodes=1, evaluated_nodes=1,
                 feasible=["n1"], node="n1", outcome="Bound")
    assert "Score: only n1 fits; nothing to compare" in render(body(d))


def test_preemption_names_candidates_victims_and_criterion() -> None:
    d = pending()
    d.preemption = Preemption([PreemptionCandidate("n1", ["ns/low-1", "ns/low-2"], 0),
                               PreemptionCandidate("n2", ["ns/low-3"], 0)],
                              "n2", "fewest victims")
    d.nominated_node = "n2"
    text = render(body(d))
    assert "chose n2 by fewest victims" in text
    assert "Nominated node: n2" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("n2 (chosen)"))
    assert row.split()[-1] == "ns/low-3"
    assert "ns/low-1, ns/low-2" in text


def test_earlier_attempts_listed_and_shown_in_full_with_all() -> None:
    first, second = pending(), scheduled()
    first.attempt, second.attempt = 1, 2
    short = render(body(first, second))
    assert "Earlier attempts kept (1; --all shows them in full):" in short
    assert "attempt 1 at" in short and "NodeResourcesFit(x1)" in short
    full = render(body(first, second), every_attempt=True)
    assert "Attempt 1 at" in full and "Attempt 2 at" in full


def test_no_decision() -> None:
    assert render({"pod": "ns/x", "decisions": []}) == \
        "No scheduling decision is kept for pod ns/x.\n"


def test_a_pod_never_tried_shows_where_it_waits_and_what_would_move_it() -> None:
    queue = {"queue": "gated", "attempts": 0, "gatedBy": "SchedulingGates",
             "waitingSince": "2026-11-27T12:00:00Z", "movedByFlushAt": "2026-11-27T12:05:00Z",
             "requeueOn": [{"plugin": "SchedulingGates",
                            "event": "PodUpdatePodSchedulingGatesEliminated",
                            "text": "a pod loses its last scheduling gate"}]}
    text = render({"pod": "ns/x", "decisions": [], "queue": queue})
    assert text.splitlines() == [
        "Queue: held back before the queue (PreEnqueue); 0 attempt(s) so far",
        "  gated by plugin SchedulingGates",
        "  waiting since 2026-11-27T12:00:00Z; moved back at the latest at "
        "2026-11-27T12:05:00Z (podMaxInUnschedulablePodsDuration)",
        "  tried again when (as the rejecting plugins' queueing hints decide):",
        "    SchedulingGates: a pod loses its last scheduling gate "
        "(PodUpdatePodSchedulingGatesEliminated)",
        "No scheduling decision is kept for pod ns/x.",
    ]


def test_the_queue_comes_before_the_last_attempt() -> None:
    queue = {"queue": "backoff", "attempts": 2, "backoffUntil": "2026-11-27T12:00:02Z",
             "rejectedBy": ["NodeResourcesFit"]}
    answer = {**body(pending()), "queue": queue}
    lines = render(answer).splitlines()
    assert lines[:4] == ["Queue: backing off after a failed attempt; 2 attempt(s) so far",
                         "  backoff ends at 2026-11-27T12:00:02Z",
                         "  rejected by: NodeResourcesFit", ""]
    assert lines[4].startswith("Pod ")
