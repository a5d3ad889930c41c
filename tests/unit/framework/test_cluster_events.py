"""ClusterEvent.matches, as upstream's MatchClusterEvents (TestCloudEvent_Match in
pkg/scheduler/framework/types_test.go): the incoming event must be the same as or more
specific than the registered one."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    EVERYTHING,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
    pod_update_events,
    release_label,
    with_hints,
)
from kpysched.objects.pod import PodInfo
from tests.unit.builders import PodBuilder, make_pod

A = ActionType


def event(resource: Resource, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, action)


@pytest.mark.parametrize(("registered", "incoming", "matches"), [
    pytest.param(event(Resource.WILDCARD, A.ALL), event(Resource.POD, A.UPDATE_NODE_LABEL), True,
                 id="wildcard event matches with all kinds of coming events"),
    pytest.param(event(Resource.POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                 event(Resource.POD, A.UPDATE_NODE_LABEL), True,
                 id="resource Pod matching coming events with the same actionType"),
    pytest.param(event(Resource.POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
                 event(Resource.ASSIGNED_POD, A.UPDATE_NODE_LABEL), True,
                 id="resource Pod matching coming events for assigned pods"),
    pytest.param(event(Resource.WILDCARD, A.UPDATE_NODE_LABEL),
                 event(Resource.POD, A.UPDATE_NODE_LABEL), True,
                 id="resource * matching coming events with the same actionType"),
    pytest.param(event(Resource.WILDCARD, A.UPDATE_NODE_LABEL),
                 event(Resource.POD, A.UPDATE_NODE_ALLOCATABLE), False,
                 id="resource * with a different actionType"),
    pytest.param(event(Resource.POD, A.UPDATE_NODE_LABEL),
                 event(Resource.WILDCARD, A.UPDATE_NODE_LABEL), False,
                 id="coming event with resource *"),
    pytest.param(event(Resource.WILDCARD, A.UPDATE_NODE_LABEL), event(Resource.POD, A.UPDATE),
                 False, id="resource * with a too broad coming actionType"),
    pytest.param(event(Resource.WILDCARD, A.UPDATE), event(Resource.POD, A.UPDATE_NODE_LABEL),
                 True, id="resource * with a more specific coming actionType"),
    # Beyond upstream's table: plain resource matching.
    pytest.param(event(Resource.NODE, A.ADD | A.UPDATE_NODE_TAINT), NODE_ADD, True,
                 id="node add registered, node added"),
    pytest.param(event(Resource.NODE, A.ADD), event(Resource.NODE, A.UPDATE_NODE_LABEL), False,
                 id="node add registered, node label update"),
    pytest.param(event(Resource.NODE, A.ALL), ASSIGNED_POD_DELETE, False,
                 id="node registration does not hear pods"),
    pytest.param(event(Resource.ASSIGNED_POD, A.DELETE), event(Resource.POD, A.DELETE), False,
                 id="assigned-pod registration does not hear every pod"),
    pytest.param(event(Resource.POD, A.UPDATE_POD_LABEL), event(Resource.POD, A.UPDATE), False,
                 id="specific pod update registered, generic update coming"),
    pytest.param(event(Resource.POD, A.UPDATE), event(Resource.POD, A.UPDATE_POD_LABEL), True,
                 id="generic pod update registered, specific update coming"),
    pytest.param(event(Resource.POD, A.UPDATE_POD_LABEL),
                 event(Resource.UNSCHEDULED_POD, A.UPDATE_POD_LABEL), True,
                 id="Pod registration hears unscheduled pods' updates"),
    pytest.param(event(Resource.NODE, A.ADD | A.UPDATE_NODE_LABEL),
                 event(Resource.NODE, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT), False,
                 id="incoming event broader than the registration"),
    pytest.param(event(Resource.NODE, A.ALL), UNSCHEDULABLE_TIMEOUT, False,
                 id="a wildcard incoming event matches only a wildcard registration"),
    # v1.37's TestCloudEvent_Match rows for its public pod sub-resources.
    pytest.param(event(Resource.POD, A.UPDATE_NODE_TAINT),
                 event(Resource.TARGET_POD, A.UPDATE_NODE_TAINT), True,
                 id="event with resource = 'Pod' also matches event with 'TargetPod' resource "
                    "and same actionType"),
    pytest.param(event(Resource.ASSIGNED_POD, A.ADD), event(Resource.UNSCHEDULED_POD, A.ADD),
                 False, id="event with resource 'AssignedPod' does not match event with "
                           "'UnscheduledPod' resource and same actionType"),
    pytest.param(event(Resource.ASSIGNED_POD, A.UPDATE), event(Resource.TARGET_POD, A.UPDATE),
                 False, id="event with resource 'AssignedPod' does not match event with "
                           "'TargetPod' resource and same actionType"),
    pytest.param(event(Resource.TARGET_POD, A.UPDATE), event(Resource.ASSIGNED_POD, A.UPDATE),
                 False, id="event with resource 'TargetPod' does not match event with "
                           "'AssignedPod' resource and same actionType"),
    pytest.param(event(Resource.UNSCHEDULED_POD, A.ADD), event(Resource.POD, A.ADD), False,
                 id="event with resource 'UnscheduledPod' does not match with broad 'Pod' "
                    "resource and same actionType"),
    pytest.param(event(Resource.UNSCHEDULED_POD, A.ADD), event(Resource.WILDCARD, A.ADD),
                 False, id="event with resource 'UnscheduledPod' does not match with "
                           "'WildCard' resource and same actionType"),
    pytest.param(event(Resource.WILDCARD, A.ALL), event(Resource.TARGET_POD, A.UPDATE), True,
                 id="WildCard matches with a pod sub-type resource 'TargetPod' and any "
                    "actionType"),
    pytest.param(event(Resource.UNSCHEDULED_POD, A.UPDATE_POD_LABEL),
                 event(Resource.TARGET_POD, A.UPDATE_POD_LABEL), False,
                 id="an UnscheduledPod registration does not hear the pod's own update"),
])
def test_matches(registered: ClusterEvent, incoming: ClusterEvent, matches: bool) -> None:
    assert registered.matches(incoming) is matches


@pytest.mark.parametrize(("cluster_event", "label"), [
    pytest.param(NODE_ADD, "NodeAdd", id="explicit label"),
    pytest.param(event(Resource.NODE, A.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint",
                 id="resource and action, as upstream's Label()"),
    pytest.param(event(Resource.UNSCHEDULED_POD, A.UPDATE_POD_TOLERATIONS),
                 "UnschedulablePodUpdatePodToleration", id="unscheduled pod update"),
    pytest.param(event(Resource.ASSIGNED_POD, A.UPDATE), "AssignedPodUpdate",
                 id="generic update"),
    pytest.param(ASSIGNED_POD_DELETE, "AssignedPodDelete", id="assigned pod delete"),
    pytest.param(EVERYTHING, "*", id="wildcard"),
])
def test_queue_label(cluster_event: ClusterEvent, label: str) -> None:
    assert cluster_event.queue_label() == label


@pytest.mark.parametrize(("label", "release", "expected"), [
    ("UnschedulablePodAdd", 36, "UnschedulablePodAdd"),
    ("UnschedulablePodAdd", 37, "UnscheduledPodAdd"),
    ("UnschedulablePodUpdatePodLabel", 37, "UnscheduledPodUpdatePodLabel"),
    ("AssignedPodDelete", 37, "AssignedPodDelete"),
    ("TargetPodUpdatePodLabel", 37, "TargetPodUpdatePodLabel"),
    ("NodeAdd", 37, "NodeAdd"),
])
def test_release_label_spells_the_pending_pod_resource_as_the_release(
        label: str, release: int, expected: str) -> None:
    """v1.37 renamed the internal "UnschedulablePod" resource to UnscheduledPod."""
    assert release_label(label, release) == expected


def test_update_covers_every_update_flag_and_all_covers_add_and_delete() -> None:
    for flag in (A.UPDATE_NODE_ALLOCATABLE, A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT,
                 A.UPDATE_NODE_CONDITION, A.UPDATE_NODE_ANNOTATION, A.UPDATE_POD_LABEL,
                 A.UPDATE_POD_SCALE_DOWN, A.UPDATE_POD_TOLERATIONS,
                 A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED, A.UPDATE_POD_SCALE_UP,
                 A.UPDATE_NODE_PREEMPTION_POLICY):
        assert flag in A.UPDATE
    assert A.ADD not in A.UPDATE and A.DELETE not in A.UPDATE
    assert A.ALL == A.ADD | A.DELETE | A.UPDATE


# --- pod_update_events, as upstream's TestPodSchedulingPropertiesChange ---------------


def base_pod() -> PodBuilder:
    return make_pod("p").label("app", "a").req(cpu="1", memory="1Gi").toleration("k")


@pytest.mark.parametrize(("old", "new", "actions"), [
    pytest.param(base_pod(), base_pod(), [A.UPDATE], id="no specific change: generic update"),
    pytest.param(base_pod(), base_pod().label("app", "b"), [A.UPDATE_POD_LABEL],
                 id="label changed"),
    pytest.param(base_pod(), make_pod("p").label("app", "a").req(cpu="500m", memory="1Gi")
                 .toleration("k"), [A.UPDATE_POD_SCALE_DOWN], id="cpu request scaled down"),
    pytest.param(base_pod(), make_pod("p").label("app", "a").req(cpu="2", memory="1Gi")
                 .toleration("k"), [A.UPDATE], id="scaled up: nothing can newly fit"),
    pytest.param(base_pod(), make_pod("p").label("app", "a").req(cpu="1").toleration("k"),
                 [A.UPDATE_POD_SCALE_DOWN], id="request removed"),
    pytest.param(base_pod(), base_pod().toleration("other"), [A.UPDATE_POD_TOLERATIONS],
                 id="toleration added"),
    pytest.param(base_pod().gates("a", "b"), base_pod(),
                 [A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED], id="every gate removed"),
    pytest.param(base_pod().gates("a", "b"), base_pod().gates("b"), [A.UPDATE],
                 id="one gate of two removed"),
    pytest.param(base_pod(), base_pod().label("app", "b").toleration("other"),
                 [A.UPDATE_POD_LABEL, A.UPDATE_POD_TOLERATIONS],
                 id="label and toleration: one event each"),
])
def test_pod_update_events(old: PodBuilder, new: PodBuilder, actions: list[ActionType]) -> None:
    events = pod_update_events(old.info(), new.info())
    assert [(e.resource, e.action) for e in events] == [
        (Resource.UNSCHEDULED_POD, action) for action in actions]


def _bigger() -> PodBuilder:
    return make_pod("p").label("app", "a").req(cpu="2", memory="1Gi").toleration("k")


@pytest.mark.parametrize(("old", "new", "target", "events"), [
    # v1.37's TestPodSchedulingPropertiesChange rows that differ from v1.36's.
    pytest.param(base_pod(), _bigger(), False,
                 [(Resource.UNSCHEDULED_POD, A.UPDATE_POD_SCALE_UP)],
                 id="pod's resource request is scaled up"),
    pytest.param(base_pod().gates("a"), base_pod(), True,
                 [(Resource.TARGET_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)],
                 id="scheduling gate is eliminated (target pod)"),
    pytest.param(base_pod(), base_pod().toleration("other"), True,
                 [(Resource.TARGET_POD, A.UPDATE_POD_TOLERATIONS)],
                 id="pod's tolerations are updated (target pod)"),
    pytest.param(base_pod().gates("a", "b"), base_pod().gates("b"), True,
                 [(Resource.TARGET_POD, A.UPDATE)],
                 id="the untracked change of the target pod is a generic update"),
    pytest.param(base_pod().node("n"), _bigger().node("n"), True,
                 [(Resource.ASSIGNED_POD, A.UPDATE_POD_SCALE_UP)],
                 id="an assigned pod is never the target"),
])
def test_pod_update_events_as_v1_37(old: PodBuilder, new: PodBuilder, target: bool,
                                    events: list[tuple[Resource, ActionType]]) -> None:
    found = pod_update_events(old.info(), new.info(), target=target, release=37)
    assert [(e.resource, e.action) for e in found] == events
    # As v1.36 the target pod is an unschedulable pod and a scale-up no specific change.
    as_v136 = pod_update_events(old.info(), new.info(), target=target, release=36)
    assert all(e.resource is not Resource.TARGET_POD and e.action is not A.UPDATE_POD_SCALE_UP
               for e in as_v136)


def test_pod_update_events_of_an_assigned_pod() -> None:
    [update] = pod_update_events(base_pod().node("n").info(),
                                 base_pod().node("n").label("app", "b").info())
    assert (update.resource, update.action) == (Resource.ASSIGNED_POD, A.UPDATE_POD_LABEL)
    assert update.queue_label() == "AssignedPodUpdatePodLabel"


# --- queueing hints ------------------------------------------------------------------


def test_bare_events_become_registrations_without_a_hint() -> None:
    def hint(pod: object, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE_SKIP

    hinted = ClusterEventWithHint(NODE_ADD, hint)
    assert with_hints([ASSIGNED_POD_DELETE, hinted]) == (
        ClusterEventWithHint(ASSIGNED_POD_DELETE, None), hinted)


def test_objects_as_narrows_or_raises_as_upstreams_util_as() -> None:
    pod = make_pod("p").info()
    assert objects_as(PodInfo, None, pod) == (None, pod)
    with pytest.raises(TypeError, match="expected PodInfo, got str"):
        objects_as(PodInfo, "not-a-pod", pod)


def test_hint_labels_are_upstreams() -> None:
    assert [hint.value for hint in QueueingHint] == ["QueueSkip", "Queue"]
