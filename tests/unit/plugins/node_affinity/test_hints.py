"""NodeAffinity's queueing hint, with upstream's Test_isSchedulableAfterNodeChange
(node_affinity_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import NODE_ADD
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_affinity import NodeAffinityArgs
from kpysched.plugins.node_affinity import plugin as na
from tests.unit.builders import FakeHandle, expr, make_node, make_pod, term
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

ENFORCED = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]}}


def affinity_pod() -> PodInfo:
    return make_pod("p").required(term(expr("foo", "In", "bar"))).info()


def node(**labels: str) -> api.Node:
    return make_node("n").labels(labels).obj()


def resized(**labels: str) -> api.Node:
    """An unrelated change: capacity set (upstream's Capacity(nil))."""
    return make_node("n").capacity(pods="32").labels(labels).obj()


@pytest.mark.parametrize(("added", "target", "old", "new", "expected"), [
    pytest.param(None, affinity_pod(), None, "not-a-node", ERROR, id="backoff-wrong-new-object"),
    pytest.param(None, affinity_pod(), "not-a-node", node(), ERROR,
                 id="backoff-wrong-old-object"),
    pytest.param(None, affinity_pod(), None, node(), SKIP, id="skip-queue-on-add"),
    pytest.param(None, affinity_pod(), None, node(foo="bar"), QUEUE, id="queue-on-add"),
    pytest.param(None, affinity_pod(), node(), resized(), SKIP, id="skip-unrelated-changes"),
    pytest.param(None, affinity_pod(), node(), node(k="v"), SKIP,
                 id="skip-unrelated-changes-on-labels"),
    pytest.param(None, affinity_pod(), node(foo="bar"), node(k="v"), SKIP,
                 id="skip-labels-changes-on-node-from-suitable-to-unsuitable"),
    pytest.param(None, affinity_pod(), node(), node(foo="bar"), QUEUE,
                 id="queue-on-labels-change-makes-pod-schedulable"),
    pytest.param(None, affinity_pod(), node(foo="bar"), resized(foo="bar"), SKIP,
                 id="skip-unrelated-change-that-keeps-pod-schedulable"),
    pytest.param(ENFORCED, affinity_pod(), None, node(), SKIP,
                 id="skip-queue-on-add-scheduler-enforced-node-affinity"),
    pytest.param(ENFORCED, affinity_pod(), None, node(foo="bar"), QUEUE,
                 id="queue-on-add-scheduler-enforced-node-affinity"),
    # Beyond upstream's table: spec.nodeSelector counts too, and an unparsable term that
    # leaves no match is an error (upstream's LazyErrorNodeSelector), not a no.
    pytest.param(None, make_pod("p").node_selector(zone="a").info(), node(zone="b"),
                 node(zone="a"), QUEUE, id="queue-on-node-selector-now-matching"),
    pytest.param(None, make_pod("p").node_selector(zone="a").info(), None, node(zone="b"), SKIP,
                 id="skip-on-node-selector-not-matching"),
    pytest.param(None, make_pod("p").required(term(expr("foo", "Gt", "x"))).info(), None,
                 node(foo="bar"), ERROR, id="error-on-unparsable-term"),
])
def test_schedulable_after_node_change(added: dict[str, object] | None, target: PodInfo,
                                       old: object, new: object, expected: Expected) -> None:
    raw = {} if added is None else {"addedAffinity": added}
    plugin = na.new(NodeAffinityArgs.model_validate(raw), FakeHandle())
    check(hint_for(plugin, NODE_ADD), target, old, new, expected)
