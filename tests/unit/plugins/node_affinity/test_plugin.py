"""NodeAffinity, with cases from upstream's node_affinity_test.go."""

from __future__ import annotations

import pydantic
import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import PreFilterResult
from kpysched.framework.status import Code, Status
from kpysched.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from kpysched.plugins.node_affinity import plugin as na
from tests.unit.builders import FakeHandle, PodBuilder, expr, make_node, make_pod, term
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter, run_scores

R = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def plugin(added: dict[str, object] | None = None) -> NodeAffinity:
    raw = {} if added is None else {"addedAffinity": added}
    return na.new(NodeAffinityArgs.model_validate(raw), FakeHandle())


def name_in(*names: str) -> object:
    return expr("metadata.name", "In", *names)


FILTER_CASES = [
    pytest.param(make_pod().node_selector(foo="bar"), {}, R, id="missing labels"),
    pytest.param(make_pod().node_selector(foo="bar"), {"foo": "bar"}, None, id="same labels"),
    pytest.param(make_pod().node_selector(foo="bar"), {"foo": "bar", "baz": "blah"}, None,
                 id="node labels are superset"),
    pytest.param(make_pod().node_selector(foo="bar", baz="blah"), {"foo": "bar"}, R,
                 id="node labels are subset"),
    pytest.param(make_pod().required(term(expr("foo", "In", "bar", "value2"))), {"foo": "bar"},
                 None, id="matchExpressions In matches"),
    pytest.param(make_pod().required(term(expr("kernel-version", "Gt", "0204"))),
                 {"kernel-version": "0206"}, None, id="matchExpressions Gt matches"),
    pytest.param(make_pod().required(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
                 {"mem-type": "DDR3"}, None, id="matchExpressions NotIn matches"),
    pytest.param(make_pod().required(term(expr("GPU", "Exists"))), {"GPU": "NVIDIA-GRID-K1"},
                 None, id="matchExpressions Exists matches"),
    pytest.param(make_pod().required(term(expr("foo", "In", "value1", "value2"))),
                 {"foo": "bar"}, R, id="affinity that doesn't match the node's labels"),
    pytest.param(make_pod().required(term()), {"foo": "bar"}, R,
                 id="empty term matches no objects"),
    pytest.param(make_pod().required(), {"foo": "bar"}, R, id="no terms match no objects"),
    pytest.param(make_pod().required(term(expr("foo", "Exists"), expr("foo", "In", "bar"))),
                 {"foo": "bar"}, None, id="expressions ANDed that match"),
    pytest.param(make_pod().required(term(expr("foo", "Exists"), expr("foo", "In", "value"))),
                 {"foo": "bar"}, R, id="expressions ANDed that don't match"),
    pytest.param(make_pod().required(term(expr("foo", "In", "bar", "value2")),
                                     term(expr("diffkey", "In", "wrong", "value2"))),
                 {"foo": "bar"}, None, id="terms ORed"),
    pytest.param(make_pod().node_selector(foo="bar").required(term(expr("foo", "Exists"))),
                 {"foo": "bar"}, None, id="affinity and nodeSelector both match"),
    pytest.param(make_pod().node_selector(foo="bar").required(term(expr("foo", "Exists"))),
                 {"foo": "barrrrrr"}, R, id="affinity matches but nodeSelector doesn't"),
    pytest.param(make_pod().required(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
                 {"foo": "bar"}, R, id="an invalid value makes the term match nothing"),
    pytest.param(make_pod().required(term(expr("foo", "Exists", "bar"))), {"foo": "bar"}, R,
                 id="Exists with values does not parse"),
    pytest.param(make_pod().required(term(fields=[name_in("node1")])), {}, None,
                 id="matchFields In matches"),
    pytest.param(make_pod().required(term(fields=[name_in("node2")])), {}, R,
                 id="matchFields In does not match"),
    pytest.param(make_pod().required(term(fields=[name_in("node2")]),
                                     term(expr("foo", "In", "bar"))), {"foo": "bar"}, None,
                 id="two terms: matchFields does not match but matchExpressions does"),
    pytest.param(make_pod().required(term(expr("foo", "In", "bar"), fields=[name_in("node2")])),
                 {"foo": "bar"}, R, id="one term: matchFields does not match"),
    pytest.param(make_pod().required(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
                 {"foo": "bar"}, None, id="one term: both match"),
    pytest.param(make_pod().required(term(fields=[expr("metadata.name", "In", "node1", "x")])),
                 {}, R, id="matchFields In needs exactly one value"),
]


@pytest.mark.parametrize(("pod", "labels", "code"), FILTER_CASES)
@pytest.mark.parametrize("pre_filter", [True, False], ids=["prefilter", "no-prefilter"])
def test_filter(pod: PodBuilder, labels: dict[str, str], code: Code | None,
                pre_filter: bool) -> None:
    node = make_node("node1").labels(labels).info()
    affinity = plugin()
    if pre_filter:
        status = run_filter(affinity, pod.info(), node)
    else:
        status = affinity.filter(CycleState(), pod.info(), node)
    if code is None:
        assert status.ok, status
    else:
        assert (status.code, status.reasons, status.plugin) == (code, [na.REASON_POD], na.NAME)


@pytest.mark.parametrize(("pod", "result", "code", "reasons"), [
    pytest.param(make_pod(), None, Code.SKIP, [], id="no affinity skips"),
    pytest.param(make_pod().preferred(1, term(expr("foo", "Exists"))), None, Code.SKIP, [],
                 id="only preferred affinity skips"),
    pytest.param(make_pod().node_selector(foo="bar"), None, Code.SUCCESS, [],
                 id="nodeSelector alone"),
    pytest.param(make_pod().required(term(expr("foo", "Exists"))), None, Code.SUCCESS, [],
                 id="no node names"),
    pytest.param(make_pod().required(term(fields=[name_in("node1")])), {"node1"}, Code.SUCCESS,
                 [], id="one node name"),
    pytest.param(make_pod().required(term(fields=[name_in("node1")]),
                                     term(fields=[name_in("node2")])),
                 {"node1", "node2"}, Code.SUCCESS, [], id="two terms of node names"),
    pytest.param(make_pod().required(term(fields=[name_in("node1")]),
                                     term(expr("foo", "Exists"))),
                 None, Code.SUCCESS, [], id="a term without names admits every node"),
    pytest.param(make_pod().required(term(fields=[name_in("node1"), name_in("node2")])),
                 None, R, [na.REASON_CONFLICT], id="conflicting matchFields requirements"),
    pytest.param(make_pod().required(term(fields=[expr("metadata.name", "NotIn", "node1")])),
                 None, Code.SUCCESS, [], id="NotIn does not narrow"),
])
def test_pre_filter(pod: PodBuilder, result: set[str] | None, code: Code,
                    reasons: list[str]) -> None:
    narrowed, status = plugin().pre_filter(CycleState(), pod.info(), [])
    assert (status.code, status.reasons) == (code, reasons)
    assert narrowed == (None if result is None else PreFilterResult(result))


ADDED_REQUIRED = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}


@pytest.mark.parametrize(("pod", "labels", "reason"), [
    pytest.param(make_pod().required(term(expr("foo", "In", "bar"))),
                 {"foo": "bar", "zone": "foo"}, None, id="matches added and pod affinity"),
    pytest.param(make_pod().required(term(expr("foo", "In", "bar"))),
                 {"foo": "baz", "zone": "foo"}, na.REASON_POD,
                 id="matches added affinity but not the pod's"),
    pytest.param(make_pod(), {"zone": "bar"}, na.REASON_ENFORCED,
                 id="doesn't match added affinity"),
])
def test_added_affinity_filter(pod: PodBuilder, labels: dict[str, str],
                               reason: str | None) -> None:
    affinity = plugin(ADDED_REQUIRED)
    node = make_node("node1").labels(labels).info()
    _, pre_status = affinity.pre_filter(CycleState(), pod.info(), [node])
    assert pre_status.code == Code.SUCCESS  # added affinity keeps the plugin from skipping
    status = run_filter(affinity, pod.info(), node)
    if reason is None:
        assert status.ok
    else:
        assert (status.code, status.reasons) == (R, [reason])


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def affinity1(pod: PodBuilder) -> PodBuilder:
    return pod.preferred(2, term(expr("foo", "In", "bar")))


def affinity2(pod: PodBuilder) -> PodBuilder:
    return (pod.preferred(2, term(expr("foo", "In", "bar")))
            .preferred(4, term(expr("key", "In", "value")))
            .preferred(5, term(expr("foo", "In", "bar"), expr("key", "In", "value"),
                               expr("az", "In", "az1"))))


AFFINITY1_ADDED = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 2, "preference": {"matchExpressions": [
        {"key": "foo", "operator": "In", "values": ["bar"]}]}}]}
KEY_VALUE_ADDED = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 3, "preference": {"matchExpressions": [
        {"key": "key", "operator": "In", "values": ["value"]}]}}]}

SCORE_CASES = [
    pytest.param(affinity1(make_pod()), [LABEL4, LABEL2, LABEL3], None, [0, 0, 0],
                 id="no node matches preferred terms"),
    pytest.param(affinity1(make_pod()), [LABEL1, LABEL2, LABEL3], None, [100, 0, 0],
                 id="only node1 matches"),
    pytest.param(affinity2(make_pod()), [LABEL1, LABEL5, LABEL2], None, [18, 100, 36],
                 id="all nodes match with different priorities"),
    pytest.param(make_pod(), [LABEL1, LABEL2], AFFINITY1_ADDED, [100, 0], id="added affinity"),
    pytest.param(affinity1(make_pod()), [LABEL1, LABEL2, LABEL5], KEY_VALUE_ADDED, [40, 60, 100],
                 id="added affinity and pod affinity"),
    pytest.param(make_pod().preferred(0, term(expr("foo", "Exists"))), [LABEL1, LABEL2], None,
                 [0, 0], id="zero weight counts nothing"),
]


@pytest.mark.parametrize(("pod", "labels", "added", "expected"), SCORE_CASES)
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_score(pod: PodBuilder, labels: list[dict[str, str]], added: dict[str, object] | None,
               expected: list[int], pre_score: bool) -> None:
    nodes = [make_node(f"node{i + 1}").labels(node_labels).info()
             for i, node_labels in enumerate(labels)]
    assert run_scores(plugin(added), pod.info(), nodes, pre_score=pre_score) == expected


def test_pre_score_skips_without_preferred_terms() -> None:
    result = run_scores(plugin(), make_pod().info(), [make_node("n").info()])
    assert isinstance(result, Status)
    assert result.code == Code.SKIP


def test_pre_score_rejects_a_broken_preferred_term() -> None:
    pod = make_pod().preferred(2, term(expr("invalid key", "In", "bar")))
    result = run_scores(plugin(), pod.info(), [make_node("n").info()])
    assert isinstance(result, Status)
    assert result.code == Code.ERROR
    assert "invalid key" in result.message()


def test_args_decode_camel_case() -> None:
    args = NodeAffinityArgs.model_validate({"addedAffinity": ADDED_REQUIRED})
    assert args.added_affinity is not None
    required = args.added_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    assert required.node_selector_terms[0].match_expressions[0].key == "zone"
    assert NodeAffinityArgs().added_affinity is None


def _added_term(requirement: dict[str, object], key: str = "matchExpressions"
                ) -> dict[str, object]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {key: [requirement]}]}}


@pytest.mark.parametrize(("added", "message"), [
    pytest.param(_added_term({"key": "foo", "operator": "Equals", "values": ["x"]}),
                 "Unsupported value", id="unknown operator"),
    pytest.param(_added_term({"key": "foo", "operator": "In"}), "values set can't be empty",
                 id="In without values"),
    pytest.param(_added_term({"key": "foo", "operator": "Exists", "values": ["x"]}),
                 "values set must be empty", id="Exists with values"),
    pytest.param(_added_term({"key": "foo", "operator": "Gt", "values": ["1.5"]}),
                 "must be an integer", id="Gt with a non-integer"),
    pytest.param(_added_term({"key": "a b", "operator": "Exists"}), "name part must consist",
                 id="bad key"),
    pytest.param(_added_term({"key": "metadata.name", "operator": "Exists"}, "matchFields"),
                 "Unsupported value", id="matchFields operator"),
    pytest.param({"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "foo", "operator": "In", "values": ["a b"]}]}}]},
        "a label value must", id="bad preferred value"),
    pytest.param({"requiredDuringSchedulingIgnoredDuringExecution": "zone"}, "Expected",
                 id="wrong shape"),
    # Found by tests/unit/fuzz: misspelt fields were dropped without a word, as the API
    # structs drop them; upstream decodes args strictly.
    pytest.param({"requiredDuringSchedulingIgnoredDuringExecutio": {}},
                 'unknown field "requiredDuringSchedulingIgnoredDuringExecutio"',
                 id="unknown field"),
    pytest.param(_added_term({"key": "foo", "operator": "Exists", "valuez": []}),
                 r"requiredDuringSchedulingIgnoredDuringExecution\.nodeSelectorTerms\[0\]\."
                 r'matchExpressions\[0\]: unknown field "valuez"', id="nested unknown field"),
])
def test_invalid_args(added: dict[str, object], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        NodeAffinityArgs.model_validate({"addedAffinity": added})


def test_spec_and_events() -> None:
    assert na.SPEC.name == "NodeAffinity"
    assert na.SPEC.extension_points() == ["preFilter", "filter", "preScore", "score"]
    assert registered(plugin()) == [
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), True)]
