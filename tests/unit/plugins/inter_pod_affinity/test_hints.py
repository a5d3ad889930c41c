"""InterPodAffinity's queueing hints, with upstream's Test_isSchedulableAfterPodChange and
Test_isSchedulableAfterNodeChange (interpodaffinity/plugin_test.go)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ASSIGNED_POD_ADD, NODE_ADD
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for
from tests.unit.plugins.inter_pod_affinity.test_plugin import plugin, req, t_exists, t_in, term

PLUGIN = plugin(Snapshot())
POD_HINT = hint_for(PLUGIN, ASSIGNED_POD_ADD)
NODE_HINT = hint_for(PLUGIN, NODE_ADD)

SECURITY = t_in("service", "region", "securityscan", "value2")


def pod(uid: str = "", *, node: str = "", nominated: str = "",
        labels: Mapping[str, str] | None = None,
        required: Sequence[api.PodAffinityTerm] = (),
        required_anti: Sequence[api.PodAffinityTerm] = ()) -> PodInfo:
    """upstream's st.MakePod(): empty namespace, the uid as given (empty if not)."""
    built = api.Pod(metadata=api.ObjectMeta(name=uid or "p", uid=uid,
                                            labels=dict(labels or {})))
    built.spec.node_name = node
    built.status.nominated_node_name = nominated
    if required or required_anti:
        built.spec.affinity = api.Affinity()
        if required:
            built.spec.affinity.pod_affinity = api.PodAffinity(
                required_during_scheduling_ignored_during_execution=list(required))
        if required_anti:
            built.spec.affinity.pod_anti_affinity = api.PodAffinity(
                required_during_scheduling_ignored_during_execution=list(required_anti))
    return PodInfo.of(built)


WANTS = pod("p", required=[SECURITY])
HATES = pod("p", required_anti=[SECURITY])
BOTH_KEYS = pod("p", required=[t_exists("aaa", "hostname"), t_exists("bbb", "hostname")])


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(WANTS, None, pod("other", node="fake-node", labels={"service": "securityscan"}),
                 QUEUE, id="add a pod which matches the pod affinity"),
    pytest.param(WANTS, None, pod("other", labels={"service": "securityscan"}), SKIP,
                 id="add an un-scheduled pod"),
    pytest.param(WANTS, None, pod("other", node="fake-node", labels={"aaa": "a"}), SKIP,
                 id="add a pod which doesn't match the pod affinity"),
    pytest.param(WANTS, pod("other", node="fake-node", labels={"aaa": "a"}),
                 pod("other", node="fake-node", labels={"service": "securityscan"}), QUEUE,
                 id="update a pod from non-match to match pod affinity"),
    pytest.param(WANTS, pod("other", node="fake-node", labels={"service": "value2"}),
                 pod("other", node="fake-node", labels={"service": "securityscan"}), SKIP,
                 id="the updating pod matches target pod's affinity both before and after"),
    pytest.param(WANTS, pod("other", labels={"aaa": "a"}),
                 pod("other", labels={"service": "securityscan"}), SKIP,
                 id="update an un-scheduled pod"),
    pytest.param(WANTS, pod("other", node="fake-node", labels={"service": "securityscan"}),
                 pod("other", node="fake-node", labels={"aaa": "a"}), SKIP,
                 id="update a pod from match to non-match the pod affinity"),
    pytest.param(BOTH_KEYS, pod("other", node="fake-node", labels={"aaa": "a"}),
                 pod("other", node="fake-node", labels={"service": "securityscan"}), SKIP,
                 id="update a pod from match to non-match pod's affinity - multiple terms"),
    pytest.param(BOTH_KEYS, pod("other", node="fake-node", labels={"aaa": "a"}),
                 pod("other", node="fake-node", labels={"aaa": "", "bbb": ""}), QUEUE,
                 id="update a pod from non-match to match pod's affinity - multiple terms"),
    pytest.param(pod("p", labels={"foo": "baz"}), pod("p", labels={"foo": "bar"}),
                 pod("p", labels={"foo": "baz"}), QUEUE, id="updated pod is the target pod"),
    pytest.param(HATES, pod("other", node="fake-node", labels={"service": "securityscan"}),
                 pod("other", node="fake-node", labels={"service": "aaaa"}), QUEUE,
                 id="modify pod label from satisfying pod anti-affinity to not satisfying"),
    pytest.param(HATES, pod("other", node="fake-node", labels={"service": "bbb"}),
                 pod("other", node="fake-node", labels={"service": "securityscan"}), SKIP,
                 id="modify pod label from not satisfying pod anti-affinity to satisfying"),
    pytest.param(HATES, pod("other", node="fake-node", labels={"aaa": "a"}), None, SKIP,
                 id="delete a pod which doesn't match pod's anti-affinity"),
    pytest.param(HATES, pod("other", node="fake-node", labels={"service": "securityscan"}),
                 None, QUEUE, id="delete a pod which matches pod's anti-affinity"),
    pytest.param(pod(labels={"service": "securityscan"}),
                 pod(node="fake-node", required_anti=[SECURITY]), None, QUEUE,
                 id="delete a pod with anti-affinity that matches pending pod"),
    pytest.param(pod(labels={"service": "foo"}),
                 pod(node="fake-node", required_anti=[SECURITY]), None, SKIP,
                 id="delete a pod with anti-affinity that doesn't match pending pod"),
    pytest.param(pod(labels={"service": "foo"}, required_anti=[SECURITY]),
                 pod(node="fake-node", labels={"service": "foo"}, required_anti=[SECURITY]),
                 None, SKIP, id="delete a pod which neither matches nor is matched"),
    pytest.param(HATES, pod(nominated="fake-node", labels={"aaa": "a"}), None, SKIP,
                 id="delete a nominated pod which doesn't match pod's anti-affinity"),
    pytest.param(HATES, pod(nominated="fake-node", labels={"service": "securityscan"}), None,
                 QUEUE, id="delete a nominated pod which matches pod's anti-affinity"),
    # Beyond upstream's table: a required selector that does not parse is an error.
    pytest.param(pod("p", required=[term(req("service", "In"), topology="region")]), None,
                 pod("other", node="fake-node"), ERROR, id="unparsable required term"),
])
def test_schedulable_after_pod_change(target: PodInfo, old: object, new: object,
                                      expected: Expected) -> None:
    check(POD_HINT, target, old, new, expected)


SCAN_OR_WEB = [SECURITY, t_in("app", "region", "web")]


# Upstream v1.37's new Test_isSchedulableAfterAssignedPodChange cases: a target pod with
# two anti-affinity terms, the other pod matching only one. v1.36 hears it only when the
# pod matched both terms (podMatchesAllAffinityTerms), v1.37 when it matched any.
@pytest.mark.parametrize(("target", "old", "new", "v36", "v37"), [
    pytest.param(pod("p", required_anti=SCAN_OR_WEB),
                 pod("other", node="fake-node", labels={"service": "securityscan", "app": "bar"}),
                 pod("other", node="fake-node", labels={"service": "foo", "app": "bar"}),
                 SKIP, QUEUE,
                 id="modify pod label to change it from matching only one of target pod's "
                    "anti-affinity terms to matching none"),
    pytest.param(pod("p", required_anti=SCAN_OR_WEB),
                 pod("other", node="fake-node", labels={"service": "securityscan", "app": "bar"}),
                 pod("other", node="fake-node", labels={"service": "foo", "app": "web"}),
                 SKIP, SKIP,
                 id="modify pod label but it still matches one of target pod's anti-affinity "
                    "terms"),
    pytest.param(pod("p", required_anti=SCAN_OR_WEB),
                 pod("other", node="fake-node", labels={"service": "securityscan"}), None,
                 SKIP, QUEUE,
                 id="delete a pod which matches only one of target pod's anti-affinity terms"),
    pytest.param(pod("p", labels={"service": "securityscan"}),
                 pod("other", node="fake-node", required_anti=SCAN_OR_WEB), None,
                 SKIP, QUEUE,
                 id="delete a pod with anti-affinity that matches pending pod on only one term"),
    pytest.param(pod("p", required_anti=SCAN_OR_WEB),
                 pod("other", node="fake-node", labels={"service": "securityscan", "app": "web"}),
                 None, QUEUE, QUEUE, id="delete a pod which matches both anti-affinity terms"),
])
def test_anti_affinity_terms_any_from_v1_37(target: PodInfo, old: object, new: object,
                                            v36: Expected, v37: Expected) -> None:
    for release, expected in ((36, v36), (37, v37)):
        hint = hint_for(plugin(Snapshot(), release=release), ASSIGNED_POD_ADD)
        check(hint, target, old, new, expected)


def node(**labels: str) -> api.Node:
    return make_node("node-a").labels(labels).obj()


ZONE_AFFINITY = pod("p", required=[t_in("service", "zone", "securityscan", "value2")])
ZONE_ANTI = pod("p", required_anti=[term(req("another", "In", "label"), topology="zone")])


@pytest.mark.parametrize(("target", "old", "new", "expected"), [
    pytest.param(ZONE_AFFINITY, None, node(zone="zone1"), QUEUE,
                 id="add a new node with matched pod affinity topologyKey"),
    pytest.param(WANTS, None, node(zone="zone1"), SKIP,
                 id="add a new node without matched topologyKey"),
    pytest.param(ZONE_AFFINITY, node(aaa="a"), node(aaa="b"), SKIP,
                 id="update node label but not topologyKey"),
    pytest.param(ZONE_AFFINITY, node(zone="zone1"),
                 node(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP,
                 id="update node label that isn't related to the pod affinity"),
    pytest.param(ZONE_AFFINITY, node(zone="zone1"), node(zone="zone2"), QUEUE,
                 id="update node with different affinity topologyKey value"),
    pytest.param(ZONE_AFFINITY, node(aaa="a"), node(zone="zone1"), QUEUE,
                 id="update node to have the affinity topology label"),
    pytest.param(ZONE_ANTI, None, node(zone="zone1"), QUEUE,
                 id="add a new node with matched pod anti-affinity topologyKey"),
    pytest.param(ZONE_ANTI, None, node(), QUEUE,
                 id="add a new node without matched pod anti-affinity topologyKey"),
    pytest.param(ZONE_ANTI, node(zone="zone1"),
                 node(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP,
                 id="update node label that isn't related to the pod anti-affinity"),
    pytest.param(ZONE_ANTI, node(zone="zone1"), node(zone="zone2"), QUEUE,
                 id="update node with different anti-affinity topologyKey value"),
    pytest.param(ZONE_ANTI, node(aaa="a"), node(zone="zone1"), SKIP,
                 id="update node to have the anti-affinity topology label"),
    pytest.param(ZONE_ANTI, node(zone="zone1"), node(aaa="a"), QUEUE,
                 id="update node label not to have anti-affinity topology label"),
])
def test_schedulable_after_node_change(target: PodInfo, old: object, new: object,
                                       expected: Expected) -> None:
    check(NODE_HINT, target, old, new, expected)
