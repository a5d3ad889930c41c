"""PodTopologySpread's queueing hints, with upstream's Test_isSchedulableAfterNodeChange
and Test_isSchedulableAfterPodChange (podtopologyspread/plugin_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ASSIGNED_POD_ADD, NODE_ADD
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import pod_topology_spread as pts
from tests.unit.builders import FakeHandle, PodBuilder, label_selector, make_node, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

PLUGIN = pts.new(pts.PodTopologySpreadArgs.model_validate({"defaultingType": "List"}),
                 FakeHandle())
POD_HINT = hint_for(PLUGIN, ASSIGNED_POD_ADD)
NODE_HINT = hint_for(PLUGIN, NODE_ADD)

FOO = label_selector(exists=["foo"])
BAR = label_selector(exists=["bar"])


def spread(*keys: str, honor_taints: bool | None = None) -> PodInfo:
    """The rejected pod: labelled foo, one hard constraint per topology key (the first
    selecting foo, any second one bar, as upstream's cases do)."""
    builder = make_pod("p").uid("p").label("foo")
    for index, key in enumerate(keys):
        policy = None
        if index == 0 and honor_taints is not None:
            policy = "Honor" if honor_taints else "Ignore"
        builder.spread(1, key, selector=FOO if index == 0 else BAR, taints_policy=policy)
    return builder.info()


def node(*taints: str, **labels: str) -> api.Node:
    builder = make_node("node-a").labels(labels)
    for key in taints:
        builder.taint(key, "bbb")
    return builder.obj()


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(spread("zone"), node(zone="zone1"), node(zone="zone2"), QUEUE,
                 id="node updates label which matches topologyKey"),
    pytest.param(spread("zone"), node(foo="bar1"), node(foo="bar2"), SKIP,
                 id="node that doesn't match topologySpreadConstraints updates non-related label"),
    pytest.param(spread("zone", "node"), node(zone="zone1", node="node1", foo="bar"),
                 node(zone="zone1", node="node1"), SKIP,
                 id="node that match topologySpreadConstraints adds non-related label"),
    pytest.param(spread("zone"), None, node(foo="bar"), SKIP,
                 id="create node with non-related labels"),
    pytest.param(spread("zone"), None, node(zone="zone1"), QUEUE,
                 id="create node with related labels"),
    pytest.param(spread("zone"), node(foo="bar"), None, SKIP,
                 id="delete node with non-related labels"),
    pytest.param(spread("zone"), node(zone="zone1"), None, QUEUE,
                 id="delete node with related labels"),
    pytest.param(spread("zone", "node"), None, node(zone="zone1"), SKIP,
                 id="add node with related labels that only match one constraint"),
    pytest.param(spread("zone", "node"), None, node(zone="zone1", node="node1"), QUEUE,
                 id="add node with related labels that match all constraints"),
    pytest.param(spread("zone", "node"), node(zone="zone1"), node(zone="zone1"), SKIP,
                 id="update node with related labels that only match one constraint"),
    pytest.param(spread("zone", "node"), node(zone="zone1", node="node1"),
                 node(zone="zone1", node="node2"), QUEUE,
                 id="update node with related labels that match all constraints"),
    pytest.param(spread("zone", "node"), node("aaa", zone="zone1", node="node1"),
                 node("ccc", zone="zone1", node="node1"), QUEUE,
                 id="update node with different taints that match all constraints"),
    pytest.param(spread("zone", "node"), node("aaa", node="node1"), node("ccc", node="node1"),
                 SKIP, id="update node with different taints that only match one constraint"),
])
def test_schedulable_after_node_change(target: PodInfo, old: object, new: object,
                                       expected: Expected) -> None:
    check(NODE_HINT, target, old, new, expected)


def other(uid: str = "p2", *, node: str = "", nominated: str = "", namespace: str = "default",
          **labels: str) -> PodInfo:
    builder = make_pod(uid, namespace).uid(uid)
    if node:
        builder.node(node)
    for key, value in labels.items():
        builder.label(key, value)
    built = builder.obj()
    built.status.nominated_node_name = nominated
    return PodInfo.of(built)


def itself(*tolerations: str, **labels: str) -> PodInfo:
    builder: PodBuilder = make_pod("p").uid("p")
    for key, value in labels.items():
        builder.label(key, value)
    for key in tolerations:
        builder.toleration(key, operator="Exists")
    return builder.info()


ON = "fake-node"


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(spread("zone"), None, other(node=ON, foo=""), QUEUE,
                 id="add pod with labels match topologySpreadConstraints selector"),
    pytest.param(spread("zone"), None, other(foo=""), SKIP, id="add un-scheduled pod"),
    pytest.param(spread("zone"), other(bar=""), other(foo=""), SKIP,
                 id="update un-scheduled pod"),
    pytest.param(spread("zone"), other(foo=""), None, SKIP, id="delete un-scheduled pod"),
    pytest.param(spread("zone"), None, other(node=ON, namespace="fake-namespace", foo=""), SKIP,
                 id="add pod with different namespace"),
    pytest.param(spread("zone"), None, other(node=ON, bar=""), SKIP,
                 id="add pod with labels don't match topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(node=ON, foo=""), None, QUEUE,
                 id="delete pod with labels that match topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(nominated=ON, bar=""), None, SKIP,
                 id="delete nominated pod with labels that don't match the selector"),
    pytest.param(spread("zone"), other(nominated=ON, foo=""), None, QUEUE,
                 id="delete nominated pod with labels that match the selector"),
    pytest.param(spread("zone"), other(node=ON, bar=""), None, SKIP,
                 id="delete pod with labels that don't match topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(node=ON, foo="", bar="bar1"),
                 other(node=ON, foo="", bar="bar2"), SKIP, id="update pod's non-related label"),
    pytest.param(spread("zone"), other(node=ON), other(node=ON, foo=""), QUEUE,
                 id="add pod's label that matches topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(node=ON, foo=""), other(node=ON), QUEUE,
                 id="delete pod label that matches topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(node=ON, foo="foo1"), other(node=ON, foo="foo2"), SKIP,
                 id="change pod's label that matches topologySpreadConstraints selector"),
    pytest.param(spread("zone"), other(node=ON, foo="", bar="bar1"),
                 other(node=ON, foo="", bar="bar2"), SKIP,
                 id="change pod's label that doesn't match topologySpreadConstraints selector"),
    pytest.param(spread("zone", "node"), other(node=ON, foo=""),
                 other(node=ON, foo="", bar="bar2"), QUEUE,
                 id="add pod's label that matches the selector with multi constraints"),
    pytest.param(spread("zone", "node"), other(node=ON, foo=""),
                 other(node=ON, foo="", baz=""), SKIP,
                 id="change pod's label that doesn't match the selector with multi constraints"),
    pytest.param(spread("zone", "node"), other(node=ON, foo="", bar=""),
                 other(node=ON, foo="", bar="bar2"), SKIP,
                 id="change pod's label that match the selector with multi constraints"),
    pytest.param(spread("zone", "node", honor_taints=True), itself(foo=""),
                 itself("node.kubernetes.io/unschedulable", foo=""), QUEUE,
                 id="the unschedulable Pod with NodeTaintsPolicy:Honor got a new toleration"),
    pytest.param(spread("zone", "node", honor_taints=False), itself(foo=""),
                 itself("node.kubernetes.io/unschedulable", foo=""), SKIP,
                 id="the unschedulable Pod without NodeTaintsPolicy:Honor got a new toleration"),
    pytest.param(spread("zone", "node", honor_taints=False), itself(), itself(foo=""), QUEUE,
                 id="the unschedulable Pod has got a new label matching the selector"),
    pytest.param(spread("zone", "node", honor_taints=False), itself(), itself(unrelated=""),
                 SKIP, id="the unschedulable Pod has got a new unrelated label"),
    # Beyond upstream's table: a selector that does not parse is an error.
    pytest.param(make_pod("p").uid("p").spread(1, "zone", selector=api.LabelSelector(
        match_expressions=[api.LabelSelectorRequirement(key="foo", operator="In")])).info(),
        None, other(node=ON, foo=""), ERROR, id="unparsable selector"),
])
def test_schedulable_after_pod_change(target: PodInfo, old: object, new: object,
                                      expected: Expected) -> None:
    check(POD_HINT, target, old, new, expected)
