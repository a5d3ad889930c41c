"""node_update_event, against upstream's NodeSchedulingPropertiesChange
(TestNodeSchedulingPropertiesChange in pkg/scheduler/framework/events_test.go)."""

from __future__ import annotations

import pytest

from kpysched.event_handlers import node_update_event
from kpysched.framework.events import ActionType, ClusterEvent, Resource
from kpysched.objects import api
from tests.unit.builders import NodeBuilder, make_node

A = ActionType


def base() -> NodeBuilder:
    return make_node("n").capacity({"cpu": "1000m", "memory": "100m", "example.com/foo": "1"})


def annotated(builder: NodeBuilder, **annotations: str) -> api.Node:
    node = builder.obj()
    node.metadata.annotations = dict(annotations)
    return node


@pytest.mark.parametrize(("old", "new", "action"), [
    pytest.param(base().obj(), base().obj(), None, id="no specific change applied"),
    pytest.param(base().unschedulable().obj(), base().obj(), A.UPDATE_NODE_TAINT,
                 id="node became schedulable"),
    pytest.param(base().obj(), base().unschedulable().obj(), None,
                 id="node became unschedulable: nothing can newly fit"),
    pytest.param(base().obj(),
                 make_node("n").capacity({"cpu": "1000m", "memory": "100m",
                                          "example.com/foo": "2"}).obj(),
                 A.UPDATE_NODE_ALLOCATABLE, id="only node allocatable changed"),
    pytest.param(base().label("foo", "fuz").obj(), base().label("foo", "bar").obj(),
                 A.UPDATE_NODE_LABEL, id="only node label changed"),
    pytest.param(base().taint("node.kubernetes.io/unschedulable", "foo").obj(),
                 base().taint("node.kubernetes.io/unschedulable", "").obj(),
                 A.UPDATE_NODE_TAINT, id="only node taint changed"),
    pytest.param(base().taint("a").obj(), base().obj(), A.UPDATE_NODE_TAINT,
                 id="taint removed"),
    pytest.param(annotated(base(), foo="fuz"), annotated(base(), foo="bar"),
                 A.UPDATE_NODE_ANNOTATION, id="only node annotation changed"),
    pytest.param(base().taint("node.kubernetes.io/unschedulable", "foo").obj(),
                 base().label("foo", "bar").taint("node.kubernetes.io/unschedulable", "").obj(),
                 A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT,
                 id="both node label and node taint changed"),
    pytest.param(base().obj(), base().image(10, "nginx").obj(), None,
                 id="images are not a scheduling property here"),
])
def test_node_update_event(old: api.Node, new: api.Node, action: ActionType | None) -> None:
    event = node_update_event(old, new)
    if action is None:
        assert event is None
    else:
        assert event is not None
        assert (event.resource, event.action) == (Resource.NODE, action)


def test_node_update_event_is_heard_by_matching_registrations() -> None:
    event = node_update_event(base().label("zone", "a").obj(), base().label("zone", "b").obj())
    assert event is not None
    assert ClusterEvent(Resource.NODE, A.UPDATE_NODE_LABEL).matches(event)
    assert ClusterEvent(Resource.NODE, A.ADD | A.UPDATE_NODE_LABEL).matches(event)
    assert not ClusterEvent(Resource.NODE, A.UPDATE_NODE_TAINT).matches(event)
    assert event.queue_label() == "NodeUpdate"
