"""NodeDeclaredFeatures' queueing hints, with upstream's TestEnqueueExtensionsNodeUpdate and
TestEnqueueExtensionsPodUpdate (nodedeclaredfeatures_test.go), reached through the
plugin's registrations. Upstream's "Infer returns error" case (a nil scheduler version)
has no counterpart: kpysched's version is a constant."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kpysched.framework.cluster_events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    QueueingHintFn,
    Resource,
)
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_declared_features import features as ft
from kpysched.plugins.node_declared_features import plugin as ndf
from tests.unit.builders import make_node, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

V = ft.Version.parse
POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL)
NODE_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE)
TARGET = make_pod("test-pod").uid("123").info()


def node(*features: str) -> api.Node:
    built = make_node("node-1").obj()
    built.status.declared_features = list(features)
    return built


def node_hint() -> QueueingHintFn:
    plugin = ndf.NodeDeclaredFeatures(registry=(), version=V("1.35.0"))
    return hint_for(plugin, NODE_UPDATE)


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(None, node("FeatureA"), QUEUE, id="Node Add with feature"),
    pytest.param(node(), node("FeatureA"), QUEUE, id="Node Update (Features Added)"),
    pytest.param(node("FeatureA"), node("FeatureA"), SKIP,
                 id="Node Update (Features Unchanged)"),
    # Beyond upstream's table: upstream compares the lists in order.
    pytest.param(node("FeatureA", "FeatureB"), node("FeatureB", "FeatureA"), QUEUE,
                 id="Node Update (Features reordered)"),
    pytest.param(node("FeatureA"), node(), QUEUE, id="Node Update (Features removed)"),
    pytest.param(None, "not-a-node", ERROR, id="error-wrong-new-object"),
])
def test_schedulable_after_node_change(old: object, new: object, expected: Expected) -> None:
    check(node_hint(), TARGET, old, new, expected)


def answers(*results: bool) -> Callable[[api.PodSpec], bool]:
    """Upstream's mock feature: answers in turn, one per inference (old pod, then new)."""
    pending = list(results)

    def needed_by(spec: api.PodSpec) -> bool:
        if len(pending) == 1:
            return pending[0]
        return pending.pop(0)
    return needed_by


def pod_hint(needed_by: Callable[[api.PodSpec], bool]) -> QueueingHintFn:
    plugin = ndf.NodeDeclaredFeatures(registry=(ft.Feature("TestFeature", needed_by),),
                                      version=V("1.35.0"))
    return hint_for(plugin, POD_UPDATE)


def target_pod(**labels: str) -> PodInfo:
    builder = make_pod("test-pod").uid("123")
    for key, value in labels.items():
        builder.label(key, value)
    return builder.info()


def other_pod(**labels: str) -> PodInfo:
    builder = make_pod("another-test-pod").uid("456")
    for key, value in labels.items():
        builder.label(key, value)
    return builder.info()


@pytest.mark.parametrize(("needed_by", "old", "new", "expected"), [
    pytest.param(answers(False, True), target_pod(), target_pod(foo="bar"), QUEUE,
                 id="Pod Update adds requirement"),
    pytest.param(answers(True, False), target_pod(foo="bar"), target_pod(), QUEUE,
                 id="Pod Update removes requirement"),
    pytest.param(answers(False), target_pod(), target_pod(), SKIP,
                 id="Pod Update with no change in requirements"),
    pytest.param(answers(False), other_pod(foo="bar"), other_pod(), SKIP,
                 id="Updated pod not the same as target pod"),
    # Beyond upstream's table.
    pytest.param(answers(True, True), target_pod(), target_pod(foo="bar"), SKIP,
                 id="Pod Update keeps its requirement"),
    pytest.param(answers(False), None, target_pod(), ERROR, id="error-missing-old-pod"),
    pytest.param(answers(False), "not-a-pod", target_pod(), ERROR,
                 id="error-wrong-old-object"),
])
def test_schedulable_after_pod_update(needed_by: Callable[[api.PodSpec], bool], old: object,
                                      new: object, expected: Expected) -> None:
    check(pod_hint(needed_by), TARGET, old, new, expected)


def test_pod_update_with_the_registry_of_v1_36_4() -> None:
    """Beyond upstream's table: the real features, past a feature's max version."""
    plain = target_pod()
    restarting = make_pod("test-pod").uid("123").obj()
    restarting.spec.containers = [api.Container(
        name="c", restart_policy="Never",
        restart_policy_rules=[api.ContainerRestartRule(action="RestartAllContainers")])]
    hint = hint_for(ndf.NodeDeclaredFeatures(), POD_UPDATE)
    check(hint, TARGET, plain, PodInfo.of(restarting), QUEUE)
    check(hint, TARGET, plain, target_pod(foo="bar"), SKIP)
    retired = ndf.NodeDeclaredFeatures(
        registry=(ft.Feature("Old", lambda spec: bool(spec.containers), V("1.30.0")),),
        version=V("1.35.0"))
    check(hint_for(retired, POD_UPDATE), TARGET, plain, PodInfo.of(restarting), SKIP)


def test_registrations() -> None:
    plugin = ndf.NodeDeclaredFeatures()
    assert [(r.event, r.hint is not None) for r in plugin.events_to_register()] == [
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
         True),
        (ClusterEvent(Resource.POD, ActionType.UPDATE), True),
    ]
    assert hint_for(plugin, NODE_ADD) is ndf.schedulable_after_node_change
