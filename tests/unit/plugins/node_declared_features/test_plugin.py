"""NodeDeclaredFeatures, with upstream's tables: the plugin's (nodedeclaredfeatures_test.go),
the inference library's (component-helpers nodedeclaredfeatures framework_test.go and the
per-feature tests) and the node update extraction (events_test.go), all of v1.36.4.

Upstream's "plugin disabled" rows have no counterpart: kpysched refuses to start with
the NodeDeclaredFeatures gate off. Queueing-hint rows wait for kpysched's hints.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from kpysched.framework.cluster_events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    Resource,
    pod_update_events,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api
from kpysched.plugins.node_declared_features import features as ft
from kpysched.plugins.node_declared_features import plugin as ndf
from kpysched.scheduling.event_handlers import node_update_event
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter

V = ft.Version.parse


def always(spec: api.PodSpec) -> bool:
    return True


def never(spec: api.PodSpec) -> bool:
    return False


def has_pod_resources(spec: api.PodSpec) -> bool:
    return spec.resources is not None


def restart_all_rule() -> api.ContainerRestartRule:
    return api.ContainerRestartRule(action="RestartAllContainers")


def restart_all_container(name: str = "container") -> api.Container:
    return api.Container(name=name, image="image", restart_policy="Never",
                         restart_policy_rules=[restart_all_rule()])


def plain(name: str) -> api.Container:
    return api.Container(name=name, image="image")


# --- the features of v1.36.4 ------------------------------------------------------------

@pytest.mark.parametrize(("spec", "needed"), [
    pytest.param(api.PodSpec(init_containers=[restart_all_container()],
                             containers=[plain("name")]), True,
                 id="init container with rules"),
    pytest.param(api.PodSpec(init_containers=[plain("name")],
                             containers=[restart_all_container()]), True,
                 id="regular container with rules"),
    pytest.param(api.PodSpec(init_containers=[plain("name")], containers=[plain("name2")]),
                 False, id="no rules"),
    # Beyond upstream's table.
    pytest.param(api.PodSpec(containers=[api.Container(
        name="c", restart_policy="Never",
        restart_policy_rules=[api.ContainerRestartRule(action="Restart")])]), False,
                 id="a rule restarting only its own container"),
    pytest.param(api.PodSpec(containers=[api.Container(
        name="c", restart_policy="Never",
        restart_policy_rules=[api.ContainerRestartRule(action="Restart"),
                              restart_all_rule()])]), True,
                 id="second rule restarts all"),
])
def test_restart_all_containers_inference(spec: api.PodSpec, needed: bool) -> None:
    assert ft.required_for_scheduling(spec, V("1.36.4")) == (
        {ft.RESTART_ALL_CONTAINERS} if needed else set())


@pytest.mark.parametrize(("host_network", "host_users", "needed"), [
    pytest.param(True, False, True, id="host network in a user namespace"),
    pytest.param(True, None, False, id="host network, hostUsers unset"),
    pytest.param(True, True, False, id="host network, host users"),
    pytest.param(False, False, False, id="user namespace without host network"),
])
def test_user_namespaces_host_network_inference(host_network: bool, host_users: bool | None,
                                                needed: bool) -> None:
    spec = api.PodSpec(host_network=host_network, host_users=host_users,
                       containers=[plain("c")])
    assert ft.required_for_scheduling(spec, V("1.36.4")) == (
        {ft.USER_NAMESPACES_HOST_NETWORK} if needed else set())


def test_registry_is_upstreams() -> None:
    assert sorted(f.name for f in ft.REGISTRY) == [
        "ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport"]
    assert all(f.max_version is None for f in ft.REGISTRY)


def test_resize_features_are_never_needed_to_schedule() -> None:
    spec = api.PodSpec(
        resources=api.ResourceRequirements(requests={"cpu": "500m"}),
        init_containers=[api.Container(name="i", resources=api.ResourceRequirements(
            requests={"cpu": "1"}))],
        containers=[plain("c")])
    assert ft.required_for_scheduling(spec, V("1.36.4")) == set()


# --- InferForPodScheduling (framework_test.go) ---------------------------------------------

WITH_POD_RESOURCES = api.PodSpec(resources=api.ResourceRequirements(requests={"cpu": "500m"}))


@pytest.mark.parametrize(("max_version", "spec", "target", "expected"), [
    pytest.param(None, WITH_POD_RESOURCES, "1.30.0", {"PodLevelResources"},
                 id="pod with feature, inferred during scheduling"),
    pytest.param(None, api.PodSpec(), "1.30.0", set(), id="pod without feature"),
    pytest.param("1.30.0", WITH_POD_RESOURCES, "1.31.0", set(),
                 id="feature universally available, not inferred during create"),
    pytest.param("1.30.0", WITH_POD_RESOURCES, "0.0.0-alpha.2.39+049eafd34dfbd2",
                 {"PodLevelResources"}, id="pre-release target version"),
    pytest.param("1.30.0", WITH_POD_RESOURCES, "1.40.0", set(), id="exceeds max version"),
    # Beyond upstream's table: the bound is inclusive.
    pytest.param("1.30.0", WITH_POD_RESOURCES, "1.30.0", {"PodLevelResources"},
                 id="at max version"),
])
def test_infer_for_pod_scheduling(max_version: str | None, spec: api.PodSpec, target: str,
                                  expected: set[str]) -> None:
    registry = [ft.Feature("PodLevelResources", has_pod_resources,
                           V(max_version) if max_version else None)]
    assert ft.required_for_scheduling(spec, V(target), registry) == expected


@pytest.mark.parametrize(("smaller", "larger"), [
    ("1.30.0", "1.31.0"),
    ("1.9.0", "1.10.0"),
    ("v1.36.3", "v1.36.4"),
    ("1.36.0-alpha.1", "1.36.0"),
    ("1.36.0-alpha.1", "1.36.0-alpha.2"),
    ("1.36.0-alpha.2", "1.36.0-alpha.10"),
    ("1.36.0-alpha", "1.36.0-alpha.1"),
    ("1.36.0-alpha.9", "1.36.0-beta.0"),
    ("1.36.0-9", "1.36.0-alpha"),
])
def test_version_order(smaller: str, larger: str) -> None:
    assert V(smaller) < V(larger)
    assert V(larger) > V(smaller)


def test_version_ignores_build_metadata() -> None:
    assert V("1.36.4+abc") == V("1.36.4")


def test_version_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a semantic version"):
        V("1.36")


# --- PreFilter (TestPreFilter) -------------------------------------------------------------

F1, F2 = "TestFeature1", "TestFeature2"


@pytest.mark.parametrize(("registry", "version", "code", "stored"), [
    pytest.param([ft.Feature(F1, always), ft.Feature(F2, never)], "1.35.0", Code.SUCCESS,
                 {F1}, id="Pod with feature requirements"),
    pytest.param([ft.Feature(F1, always, V("1.38.0")), ft.Feature(F2, always, V("1.38.0"))],
                 "1.35.0", Code.SUCCESS, {F1, F2}, id="Pod with multiple feature requirements"),
    pytest.param([ft.Feature(F1, never), ft.Feature(F2, never)], "1.35.0", Code.SKIP, None,
                 id="Pod with no requirements"),
    pytest.param([ft.Feature(F1, always, V("1.33.0")), ft.Feature(F2, never)], "1.34.0",
                 Code.SKIP, None, id="Feature not required, version > MaxVersion"),
])
def test_pre_filter(registry: list[ft.Feature], version: str, code: Code,
                    stored: set[str] | None) -> None:
    plugin = ndf.NodeDeclaredFeatures(registry, V(version))
    state = CycleState()
    result, status = plugin.pre_filter(state, make_pod("test-pod").info(), [])
    assert result is None
    assert status.code == code
    assert state.get(ndf.PRE_FILTER_KEY) == stored


# --- Filter (TestFilter) -------------------------------------------------------------------

FA, FB, FC = "FeatureA", "FeatureB", "FeatureC"
UNMATCHED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                   ["node(s) didn't match Pod's required features"], "NodeDeclaredFeatures")


def declaring(*names: str) -> api.Node:
    node = make_node("node-1").obj()
    node.status.declared_features = list(names)
    return node


@pytest.mark.parametrize(("declared", "required", "expected"), [
    pytest.param((FA, FB), {FA}, Status(), id="Node matches requirements"),
    pytest.param((FB,), {FA}, UNMATCHED, id="Node does not match requirements"),
    pytest.param((FA, FB, FC), {FA, FC}, Status(),
                 id="Node with multiple features, pod requires subset"),
    pytest.param((), {FA}, UNMATCHED, id="Node has no declared features"),
    pytest.param((FA,), {FA, FB}, UNMATCHED, id="Node with some but not all required features"),
    # Beyond upstream's table: names the registry does not know are ignored.
    pytest.param(("Acme/Turbo", FA, "Zeta"), {FA}, Status(),
                 id="Node declares unknown features too"),
])
def test_filter(declared: tuple[str, ...], required: set[str], expected: Status) -> None:
    state = CycleState()
    state.write(ndf.PRE_FILTER_KEY, frozenset(required))
    node = make_node("node-1")
    node.obj().status.declared_features = list(declared)
    status = ndf.NodeDeclaredFeatures().filter(state, make_pod("test-pod").info(), node.info())
    assert status == expected


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = ndf.NodeDeclaredFeatures().filter(CycleState(), make_pod().info(),
                                               make_node("node-1").info())
    assert status.code == Code.ERROR
    assert status.message() == ('error reading "PreFilterNodeDeclaredFeatures" from '
                                "cycle-state: not found")


# --- the real registry, end to end through PreFilter and Filter ----------------------------

def restart_all_pod() -> PodBuilder:
    pod = make_pod().container("image")
    pod.obj().spec.containers[0].restart_policy = "Never"
    pod.obj().spec.containers[0].restart_policy_rules = [restart_all_rule()]
    return pod


@pytest.mark.parametrize(("pod", "declared", "code"), [
    pytest.param(restart_all_pod, [ft.RESTART_ALL_CONTAINERS], Code.SUCCESS,
                 id="needed and declared"),
    pytest.param(restart_all_pod, [ft.EXTEND_WEBSOCKETS_TO_KUBELET],
                 Code.UNSCHEDULABLE_AND_UNRESOLVABLE, id="needed, other feature declared"),
    pytest.param(restart_all_pod, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                 id="needed, nothing declared"),
    pytest.param(lambda: make_pod().container("image"), [], Code.SUCCESS,
                 id="nothing needed: skipped"),
])
def test_in_tree_plugin(pod: Callable[[], PodBuilder], declared: list[str],
                        code: Code) -> None:
    plugin = ndf.new(None, FakeHandle())
    node = make_node("n")
    node.obj().status.declared_features = declared
    assert run_filter(plugin, pod().info(), node.info()).code == code


# --- events: registrations and the node update extraction (events_test.go) ----------------

@pytest.mark.parametrize(("old", "new", "changed"), [
    pytest.param([FA, FB], [FA, FB], False, id="no features changed"),
    pytest.param([FA], [FA, FB], True, id="features added"),
    pytest.param([FA, FB], [FA], True, id="features removed"),
    pytest.param([FA], [FC], True, id="features different"),
    pytest.param([], [FA], True, id="old features empty, new has features"),
    pytest.param([FA], [], True, id="old has features, new is empty"),
    pytest.param([], [], False, id="both empty"),
])
def test_node_update_event_for_declared_features(old: list[str], new: list[str],
                                                 changed: bool) -> None:
    events = node_update_event(declaring(*old), declaring(*new))
    expected = [ActionType.UPDATE_NODE_DECLARED_FEATURE] if changed else []
    assert [e.action for e in events] == expected
    if changed:
        assert events[0].queue_label() == "NodeUpdateNodeDeclaredFeature"


def _registered() -> tuple[ClusterEvent, ...]:
    return tuple(event for event, _ in registered(ndf.NodeDeclaredFeatures()))


@pytest.mark.parametrize(("incoming", "heard"), [
    pytest.param(NODE_ADD, True, id="node added"),
    pytest.param(node_update_event(declaring(), declaring(FA))[0], True,
                 id="node declared a feature"),
    pytest.param(node_update_event(make_node("n").obj(),
                                   make_node("n").label("zone", "a").obj())[0], False,
                 id="node label changed"),
    pytest.param(ClusterEvent(Resource.NODE, ActionType.DELETE), False, id="node deleted"),
    pytest.param(pod_update_events(make_pod().info(), make_pod().label("a").info())[0], True,
                 id="unscheduled pod updated"),
    pytest.param(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE), False,
                 id="assigned pod deleted"),
])
def test_events_to_register(incoming: ClusterEvent, heard: bool) -> None:
    assert any(event.matches(incoming) for event in _registered()) == heard


# --- decoding the fields the plugin reads --------------------------------------------------

def test_decodes_declared_features_and_pod_fields() -> None:
    node = msgspec.json.decode(
        b'{"status": {"declaredFeatures": ["A", "B/c"]}}', type=api.Node)
    assert node.status.declared_features == ["A", "B/c"]
    pod = msgspec.json.decode(
        b'{"spec": {"hostNetwork": true, "hostUsers": false, "containers": [{"name": "c",'
        b' "restartPolicy": "Never", "restartPolicyRules": [{"action": "RestartAllContainers",'
        b' "exitCodes": {"operator": "In", "values": [42]}}]}]}}', type=api.Pod)
    assert pod.spec.host_network is True and pod.spec.host_users is False
    assert pod.spec.containers[0].restart_policy_rules == [restart_all_rule()]
    assert ft.required_for_scheduling(pod.spec, ndf.SCHEDULER_VERSION) == {
        ft.RESTART_ALL_CONTAINERS, ft.USER_NAMESPACES_HOST_NETWORK}
