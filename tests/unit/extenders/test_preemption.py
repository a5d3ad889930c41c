"""DefaultPreemption asks the extenders that support preemption which candidates and
victims to keep (upstream's Evaluator.callExtenders and HTTPExtender.ProcessPreemption),
through the handle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.builders import make_pod
from tests.unit.extenders.run import failed_scheduling, schedule_with
from tests.unit.extenders.server import FakeExtender, serving

NO_ROOM = "0/1 nodes are available: 1 Insufficient cpu."


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


def _pods() -> list[Any]:
    low = make_pod("low").req(cpu="1").priority(0).node("n1").obj()
    high = make_pod("high").req(cpu="1").priority(100).obj()
    return [low, high]


def _keep_all(body: dict[str, Any]) -> tuple[int, Any]:
    if body["NodeNameToMetaVictims"] is not None:
        return 200, {"NodeNameToMetaVictims": body["NodeNameToMetaVictims"]}
    return 200, {"NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": pod["metadata"]["uid"]} for pod in victims["Pods"]],
               "NumPDBViolations": victims["NumPDBViolations"]}
        for node, victims in body["NodeNameToVictims"].items()}}


@pytest.mark.parametrize("cache_capable", [pytest.param(True, id="meta-victims"),
                                           pytest.param(False, id="whole-victims")])
async def test_the_victims_the_extender_keeps_are_preempted(
        extender: FakeExtender, cache_capable: bool) -> None:
    extender.answers["preempt"] = _keep_all
    low, high = _pods()
    recording = await schedule_with([{"urlPrefix": extender.url, "preemptVerb": "preempt",
                                      "nodeCacheCapable": cache_capable}],
                                    low, high, node_cpu="1")
    ((verb, body),) = extender.requests
    assert verb == "preempt" and body["Pod"]["metadata"]["name"] == "high"
    if cache_capable:
        assert body["NodeNameToVictims"] is None
        assert body["NodeNameToMetaVictims"] == {
            "n1": {"Pods": [{"UID": low.metadata.uid}], "NumPDBViolations": 0}}
    else:
        assert body["NodeNameToMetaVictims"] is None
        assert [pod["metadata"]["name"] for pod in body["NodeNameToVictims"]["n1"]["Pods"]] \
            == ["low"]
    assert recording.sent("DELETE", "/pods/low") != []


@pytest.mark.parametrize(("answer", "ignorable", "message"), [
    # Unschedulable: DynamicResources' PostFilter reason comes first, as upstream's.
    pytest.param(lambda body: (200, {"NodeNameToMetaVictims": {}}), False,
                 "no new claims to deallocate, preemption: no candidate node for preemption",
                 id="no-candidate-left"),
    pytest.param(lambda body: (500, None), False,
                 "preemption: failed preempt with extender at URL {url}/preempt, code 500",
                 id="error"),
    pytest.param(lambda body: (200, {"NodeNameToMetaVictims": {"n1": {"Pods": []}}}), False,
                 'preemption: expected at least one victim pod on node "n1"', id="no-victims"),
    pytest.param(lambda body: (200, {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "stranger"}]}}}), False,
                 "preemption: extender: {url} claims to preempt pod (UID: &{{stranger}}) on "
                 "node: n1, but the pod is not found on that node", id="unknown-victim"),
])
async def test_an_extender_that_keeps_no_candidate_stops_the_preemption(
        extender: FakeExtender, answer: Any, ignorable: bool, message: str) -> None:
    extender.answers["preempt"] = answer
    recording = await schedule_with([{"urlPrefix": extender.url, "preemptVerb": "preempt",
                                      "ignorable": ignorable}], *_pods(), node_cpu="1")
    assert recording.sent("DELETE", "/pods/low") == []
    assert failed_scheduling(recording) == [
        f"{NO_ROOM} {message.format(url=extender.url)}"]


async def test_the_decision_record_says_which_candidates_an_extender_dropped(
        extender: FakeExtender) -> None:
    extender.answers["preempt"] = lambda body: (200, {"NodeNameToMetaVictims": {}})
    decisions: list[Any] = []
    await schedule_with([{"urlPrefix": extender.url, "preemptVerb": "preempt"}], *_pods(),
                        node_cpu="1", decisions=decisions)
    (said,) = decisions[-1]["extenders"]
    assert (said["extender"], said["verb"], said["failed"]) == (
        extender.url, "preempt",
        {"n1": "not kept as a preemption candidate by the extender"})


async def test_an_ignorable_extenders_failure_leaves_the_candidates(
        extender: FakeExtender) -> None:
    extender.answers["preempt"] = lambda body: (500, None)
    recording = await schedule_with([{"urlPrefix": extender.url, "preemptVerb": "preempt",
                                      "ignorable": True}], *_pods(), node_cpu="1")
    assert recording.sent("DELETE", "/pods/low") != []
