"""The bodies of upstream's extender protocol (k8s.io/kube-scheduler/extender/v1): Go's
untagged field names and nulls, read back case-insensitively."""

from __future__ import annotations

import json

import pytest

from kpysched.extenders import wire
from kpysched.extenders.errors import ExtenderError
from tests.unit.builders import make_node, make_pod


def test_args_carry_names_or_a_node_list_and_null_for_the_other() -> None:
    pod = wire.encode_pod(make_pod("p").obj())
    bodies = wire.NodeBodies()
    nodes = [make_node("n1").obj(), make_node("n2").obj()]
    by_names = json.loads(wire.extender_args(pod, None, ["n1", "n2"], bodies))
    assert by_names["Nodes"] is None and by_names["NodeNames"] == ["n1", "n2"]
    whole = json.loads(wire.extender_args(pod, nodes, None, bodies))
    assert whole["NodeNames"] is None
    assert [item["metadata"]["name"] for item in whole["Nodes"]["items"]] == ["n1", "n2"]
    assert whole["Pod"]["metadata"]["name"] == "p"


def test_a_node_is_encoded_once_while_unchanged_and_forgotten_when_unused() -> None:
    bodies = wire.NodeBodies()
    node = make_node("n1").obj()
    first = bodies.encoded(node)
    assert bodies.encoded(node) is first
    assert bodies.encoded(make_node("n1").obj()) is not first  # an update: encoded anew
    for index in range(300):  # many other nodes come and go; n1 is not sent meanwhile
        bodies.encoded(make_node(f"other-{index}").obj())
    assert len(bodies) < 300


@pytest.mark.parametrize("body", [
    pytest.param(b'{"NodeNames": ["a"], "FailedNodes": {"b": "why"}}', id="go-names"),
    pytest.param(b'{"nodenames": ["a"], "failedNodes": {"b": "why"}}', id="any-case"),
])
def test_filter_results_are_read_case_insensitively(body: bytes) -> None:
    result = wire.decode_filter_result(body)
    assert (result.node_names, result.nodes, result.failed) == (["a"], None, {"b": "why"})


def test_returned_nodes_are_decoded_into_node_objects() -> None:
    result = wire.decode_filter_result(
        b'{"Nodes": {"items": [{"metadata": {"name": "n1", "labels": {"a": "b"}}}]}}')
    assert result.node_names is None and result.nodes is not None
    (body,) = result.nodes
    assert json.loads(body) == {"metadata": {"name": "n1", "labels": {"a": "b"}}}
    node = wire.decode_node(body)
    assert (node.metadata.name, node.metadata.labels) == ("n1", {"a": "b"})


@pytest.mark.parametrize("body", [b"not json", b'{"NodeNames": "a"}', b"[1]",
                                  b'{"Nodes": {"items": 3}}'])
def test_a_malformed_answer_is_an_extender_error(body: bytes) -> None:
    with pytest.raises(ExtenderError):
        wire.decode_filter_result(body)


def test_preemption_and_binding_bodies() -> None:
    pod = make_pod("victim").obj()
    meta = json.loads(wire.preemption_args(b"{}", {"n1": ([pod], 1)}, True))
    assert meta == {"Pod": {}, "NodeNameToVictims": None, "NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": pod.metadata.uid}], "NumPDBViolations": 1}}}
    whole = json.loads(wire.preemption_args(b"{}", {"n1": ([pod], 0)}, False))
    assert whole["NodeNameToMetaVictims"] is None
    assert whole["NodeNameToVictims"]["n1"]["Pods"][0]["metadata"]["name"] == "victim"
    assert json.loads(wire.binding_args("p", "ns", "u", "n1")) == {
        "PodName": "p", "PodNamespace": "ns", "PodUID": "u", "Node": "n1"}
    assert wire.decode_host_priorities(b'[{"Host": "n1", "Score": 7}]') == [("n1", 7)]
