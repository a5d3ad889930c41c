"""TaintToleration, with cases from upstream's taint_toleration_test.go."""

from __future__ import annotations

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins import taint_toleration as tt
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter, run_scores

Taint = tuple[str, str, str]


def plugin() -> tt.TaintToleration:
    return tt.new(None, FakeHandle())


def pod_with(*tolerations: tuple[str, str, str, str]) -> PodBuilder:
    """Tolerations as (key, operator, value, effect)."""
    pod = make_pod()
    for key, operator, value, effect in tolerations:
        pod.toleration(key=key, operator=operator, value=value, effect=effect)
    return pod


def node_with(name: str, *taints: Taint) -> NodeInfo:
    node = make_node(name)
    for key, value, effect in taints:
        node.taint(key, value, effect)
    return node.info()


FILTER_CASES = [
    pytest.param(pod_with(), [("dedicated", "user1", "NoSchedule")], False,
                 id="no tolerations, tainted node"),
    pytest.param(pod_with(("dedicated", "", "user1", "NoSchedule")),
                 [("dedicated", "user1", "NoSchedule")], True, id="dedicated node for user1"),
    pytest.param(pod_with(("dedicated", "Equal", "user2", "NoSchedule")),
                 [("dedicated", "user1", "NoSchedule")], False, id="dedicated node for user2"),
    pytest.param(pod_with(("foo", "Exists", "", "NoSchedule")), [("foo", "bar", "NoSchedule")],
                 True, id="operator Exists tolerates the taint"),
    pytest.param(pod_with(("dedicated", "Equal", "user2", "NoSchedule"),
                          ("foo", "Exists", "", "NoSchedule")),
                 [("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")], True,
                 id="all taints tolerated"),
    pytest.param(pod_with(("foo", "Equal", "bar", "PreferNoSchedule")),
                 [("foo", "bar", "NoSchedule")], False, id="toleration effect does not match"),
    pytest.param(pod_with(("foo", "Equal", "bar", "")), [("foo", "bar", "NoSchedule")], True,
                 id="empty toleration effect matches all effects"),
    pytest.param(pod_with(("dedicated", "Equal", "user2", "NoSchedule")),
                 [("dedicated", "user1", "PreferNoSchedule")], True,
                 id="PreferNoSchedule taints are not filtered"),
    pytest.param(pod_with(), [("dedicated", "user1", "PreferNoSchedule")], True,
                 id="no tolerations, only a PreferNoSchedule taint"),
    pytest.param(pod_with(), [("gone", "", "NoExecute")], False, id="NoExecute taint filters"),
    pytest.param(pod_with(("", "Exists", "", "")),
                 [("a", "b", "NoSchedule"), ("c", "", "NoExecute")], True,
                 id="empty key with Exists tolerates everything"),
    pytest.param(pod_with(("node.example.com/priority-level", "Gt", "750", "NoSchedule")),
                 [("node.example.com/priority-level", "950", "NoSchedule")], False,
                 id="Gt tolerations need an alpha feature gate (off)"),
]


@pytest.mark.parametrize(("pod", "taints", "fits"), FILTER_CASES)
def test_filter(pod: PodBuilder, taints: list[Taint], fits: bool) -> None:
    status = run_filter(plugin(), pod.info(), node_with("nodeA", *taints))
    if fits:
        assert status.ok
    else:
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) had untolerated taint(s)"], tt.NAME)


SCORE_CASES = [
    pytest.param(pod_with(("foo", "Equal", "bar", "PreferNoSchedule")),
                 [[("foo", "bar", "PreferNoSchedule")], [("foo", "blah", "PreferNoSchedule")]],
                 [100, 0], id="tolerated taints score higher than intolerable ones"),
    pytest.param(pod_with(("cpu-type", "Equal", "arm64", "PreferNoSchedule"),
                          ("disk-type", "Equal", "ssd", "PreferNoSchedule")),
                 [[], [("cpu-type", "arm64", "PreferNoSchedule")],
                  [("cpu-type", "arm64", "PreferNoSchedule"),
                   ("disk-type", "ssd", "PreferNoSchedule")]],
                 [100, 100, 100], id="how many tolerated taints does not matter"),
    pytest.param(pod_with(("foo", "Equal", "bar", "PreferNoSchedule")),
                 [[], [("cpu-type", "arm64", "PreferNoSchedule")],
                  [("cpu-type", "arm64", "PreferNoSchedule"),
                   ("disk-type", "ssd", "PreferNoSchedule")]],
                 [100, 50, 0], id="the more intolerable taints the lower the score"),
    pytest.param(pod_with(("cpu-type", "Equal", "arm64", "NoSchedule"),
                          ("disk-type", "Equal", "ssd", "NoSchedule")),
                 [[], [("cpu-type", "arm64", "NoSchedule")],
                  [("cpu-type", "arm64", "PreferNoSchedule"),
                   ("disk-type", "ssd", "PreferNoSchedule")]],
                 [100, 100, 0], id="only PreferNoSchedule taints and tolerations count"),
    pytest.param(pod_with(), [[], [("cpu-type", "arm64", "PreferNoSchedule")]], [100, 0],
                 id="no taints and tolerations: lands on the untainted node"),
    pytest.param(pod_with(("cpu-type", "", "arm64", "")),
                 [[("cpu-type", "arm64", "PreferNoSchedule")], [("x", "", "PreferNoSchedule")]],
                 [100, 0], id="a toleration without effect counts"),
]


@pytest.mark.parametrize(("pod", "taints", "expected"), SCORE_CASES)
def test_score(pod: PodBuilder, taints: list[list[Taint]], expected: list[int]) -> None:
    nodes = [node_with(f"node{i}", *node_taints) for i, node_taints in enumerate(taints)]
    assert run_scores(plugin(), pod.info(), nodes) == expected


def test_score_without_pre_score_is_an_error() -> None:
    _, status = plugin().score(CycleState(), make_pod().info(), node_with("n"))
    assert status.code == Code.ERROR


def test_spec_and_events() -> None:
    assert tt.SPEC.name == "TaintToleration"
    assert tt.SPEC.args_model is None
    assert tt.SPEC.extension_points() == ["filter", "preScore", "score"]
    assert registered(plugin()) == [
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), True),
        (ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATIONS), True),
    ]
