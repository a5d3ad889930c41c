"""Upstream's HTTPExtender.Filter: a nodeCacheCapable extender's NodeNames pick among
the nodes it was sent; otherwise the Nodes it returns become NodeInfos of their own,
without pods, and that is what the Score plugins score."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.builders import make_pod
from tests.unit.extenders.run import schedule_with
from tests.unit.extenders.server import FakeExtender, names_of, serving


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


def _echo(body: dict[str, Any]) -> tuple[int, Any]:
    if body["NodeNames"] is not None:
        return 200, {"NodeNames": body["NodeNames"]}
    return 200, {"Nodes": body["Nodes"]}


@pytest.mark.parametrize(("cache_capable", "scored_as_empty"), [
    pytest.param(True, False, id="node-names-keep-the-pods"),
    pytest.param(False, True, id="returned-nodes-are-scored-without-pods"),
])
async def test_what_the_score_plugins_see(extender: FakeExtender, cache_capable: bool,
                                          scored_as_empty: bool) -> None:
    extender.answers["filter"] = _echo
    busy = make_pod("busy").req(cpu="3").node("n1").obj()
    decisions: list[Any] = []
    await schedule_with([{"urlPrefix": extender.url, "filterVerb": "filter",
                          "nodeCacheCapable": cache_capable}],
                        busy, make_pod("p").req(cpu="100m").obj(), nodes=2,
                        decisions=decisions)
    (decision,) = [d for d in decisions if d["pod"] == "default/p"]
    totals = dict(zip(decision["feasible"], decision["totals"], strict=True))
    # n1 holds 3 of its 4 CPUs: only scored from the snapshot does it score lower.
    assert (totals["n1"] == totals["n2"]) is scored_as_empty


async def test_an_answer_without_the_field_its_kind_reads_keeps_no_node(
        extender: FakeExtender) -> None:
    # Not nodeCacheCapable: NodeNames alone is not read (upstream reads Nodes).
    extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
    decisions: list[Any] = []
    await schedule_with([{"urlPrefix": extender.url, "filterVerb": "filter"}],
                        make_pod("p").req(cpu="100m").obj(), nodes=2, decisions=decisions)
    assert decisions[-1]["outcome"] == "Unschedulable"
    assert decisions[-1]["message"].startswith("0/2 nodes are available")


async def test_the_nodes_a_filter_returned_are_sent_on_as_returned(
        extender: FakeExtender) -> None:
    def relabel(body: dict[str, Any]) -> tuple[int, Any]:
        items = body["Nodes"]["items"]
        for item in items:
            item["metadata"]["labels"] = {"seen-by": "extender"}
        return 200, {"Nodes": {"metadata": {}, "items": items}}

    extender.answers["filter"] = relabel
    extender.answers["prioritize"] = lambda body: (200, [
        {"Host": name, "Score": 1} for name in names_of(body)])
    await schedule_with([{"urlPrefix": extender.url, "filterVerb": "filter",
                          "prioritizeVerb": "prioritize", "weight": 1}],
                        make_pod("p").req(cpu="100m").obj(), nodes=2)
    (prioritized,) = [body for verb, body in extender.requests if verb == "prioritize"]
    assert {item["metadata"]["labels"]["seen-by"]
            for item in prioritized["Nodes"]["items"]} == {"extender"}


@pytest.mark.parametrize(("cache_capable", "chosen"), [
    pytest.param(True, "n1", id="cached-node-infos-prefer-the-empty-node"),
    pytest.param(False, "n0", id="fresh-node-infos-prefer-the-bigger-node"),
])
async def test_a_loaded_big_node_against_an_empty_small_one(
        extender: FakeExtender, cache_capable: bool, chosen: str) -> None:
    # The differential scenario of 17a26ba: n0 has 8 CPUs, 6 of them used; n1 has 4,
    # none used. Scored without its pods (upstream, full nodes), n0 looks emptier.
    extender.answers["filter"] = _echo
    load = make_pod("load").req(cpu="6").node("n0").obj()
    recording = await schedule_with(
        [{"urlPrefix": extender.url, "filterVerb": "filter",
          "nodeCacheCapable": cache_capable}],
        load, make_pod("p").req(cpu="2").obj(), node_cpus={"n0": "8", "n1": "4"})
    assert [body["target"]["name"] for body in recording.sent("POST", "/binding")
            if body["metadata"]["name"] == "p"] == [chosen]
