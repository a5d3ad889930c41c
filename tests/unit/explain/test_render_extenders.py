"""`kpysched explain` shows what each scheduler extender said for each node: the nodes
its filter rejected with the reason, its scores, or how its call failed."""

from __future__ import annotations

from kpysched.decisions.record import Decision, ExtenderAnswer, Rejection
from kpysched.explain.render import render

URL = "http://gpu-extender:8888/scheduler"


def _decision() -> Decision:
    d = Decision("ns/p", "u", "kpysched", 1, "t", total_nodes=3, evaluated_nodes=3,
                 outcome="Unschedulable",
                 message="0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, "
                         "2 no free GPU.")
    d.reject("n1", Rejection("TaintToleration", ["node(s) had untolerated taint {a: b}"],
                             "UnschedulableAndUnresolvable"))
    for name in ("n2", "n3"):
        d.reject(name, Rejection("", ["no free GPU"], "Unschedulable"))
    d.extenders = [ExtenderAnswer(URL, "filter", failed={"n2": "no free GPU",
                                                         "n3": "no free GPU"}),
                   ExtenderAnswer("http://other", "filter", error="connection refused",
                                  skipped=True),
                   ExtenderAnswer("http://scorer", "prioritize", scores={"n2": 30, "n3": 90})]
    return d


def test_each_extenders_answer_is_shown() -> None:
    lines = render({"pod": "ns/p", "decisions": [_decision().to_json()]}).splitlines()
    assert f"Extender {URL} filter: rejected 2 node(s):" in lines
    assert any(line.split()[:4] == ["2", "no", "free", "GPU"] and line.endswith("n2, n3")
               for line in lines)
    assert ("Extender http://other filter: skipped (ignorable): connection refused" in lines)
    assert ("Extender http://scorer prioritize (score x weight x 10, in the totals): "
            "n3=90, n2=30") in lines


def test_an_extenders_rejections_are_counted_under_extender() -> None:
    lines = render({"pod": "ns/p", "decisions": [_decision().to_json()]}).splitlines()
    assert any(line.split()[:2] == ["Extender", "2"] and "no free GPU" in line
               for line in lines)


def test_a_preempt_answer_names_the_candidates_dropped() -> None:
    d = _decision()
    d.extenders = [ExtenderAnswer(URL, "preempt", failed={"n2": "not kept"})]
    lines = render({"pod": "ns/p", "decisions": [d.to_json()]}).splitlines()
    assert f"Extender {URL} preempt: rejected 1 candidate node(s):" in lines
