"""node_update_event, against upstream's NodeSchedulingPropertiesChange
(TestNodeSchedulingPropertiesChange in pkg/scheduler/framework/events_test.go), and the
cluster events the informer callbacks hand the queue (upstream's eventhandlers.go)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kpysched.cache.cache import Cache
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.metrics import NoMetrics
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.queue.scheduling_queue import PreCheck
from kpysched.scheduling.event_handlers import NodeEventHandler, PodEventHandler, node_update_event
from kpysched.scheduling.scheduler import Scheduler
from kpysched.writes.event_recorder import EventRecorder
from tests.unit.builders import NodeBuilder, make_node, make_pod

A = ActionType


def base() -> NodeBuilder:
    return make_node("n").capacity({"cpu": "1000m", "memory": "100m", "example.com/foo": "1"})


def annotated(builder: NodeBuilder, **annotations: str) -> api.Node:
    node = builder.obj()
    node.metadata.annotations = dict(annotations)
    return node


@pytest.mark.parametrize(("old", "new", "actions"), [
    pytest.param(base().obj(), base().obj(), [], id="no specific change applied"),
    pytest.param(base().unschedulable().obj(), base().obj(), [A.UPDATE_NODE_TAINT],
                 id="node became schedulable"),
    pytest.param(base().obj(), base().unschedulable().obj(), [],
                 id="node became unschedulable: nothing can newly fit"),
    pytest.param(base().obj(),
                 make_node("n").capacity({"cpu": "1000m", "memory": "100m",
                                          "example.com/foo": "2"}).obj(),
                 [A.UPDATE_NODE_ALLOCATABLE], id="only node allocatable changed"),
    pytest.param(base().label("foo", "fuz").obj(), base().label("foo", "bar").obj(),
                 [A.UPDATE_NODE_LABEL], id="only node label changed"),
    pytest.param(base().taint("node.kubernetes.io/unschedulable", "foo").obj(),
                 base().taint("node.kubernetes.io/unschedulable", "").obj(),
                 [A.UPDATE_NODE_TAINT], id="only node taint changed"),
    pytest.param(base().taint("a").obj(), base().obj(), [A.UPDATE_NODE_TAINT],
                 id="taint removed"),
    pytest.param(annotated(base(), foo="fuz"), annotated(base(), foo="bar"),
                 [A.UPDATE_NODE_ANNOTATION], id="only node annotation changed"),
    pytest.param(base().taint("node.kubernetes.io/unschedulable", "foo").obj(),
                 base().label("foo", "bar").taint("node.kubernetes.io/unschedulable", "").obj(),
                 [A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT],
                 id="both node label and node taint changed"),
    pytest.param(base().unschedulable().taint("a").obj(), base().obj(),
                 [A.UPDATE_NODE_TAINT, A.UPDATE_NODE_TAINT],
                 id="schedulable again and taint removed: one event each, as upstream"),
    pytest.param(base().obj(), base().image(10, "nginx").obj(), [],
                 id="images are not a scheduling property here"),
])
def test_node_update_event(old: api.Node, new: api.Node, actions: list[ActionType]) -> None:
    events = node_update_event(old, new)
    assert [(event.resource, event.action) for event in events] == [
        (Resource.NODE, action) for action in actions]


def test_node_update_event_is_heard_by_matching_registrations() -> None:
    [event] = node_update_event(base().label("zone", "a").obj(),
                                base().label("zone", "b").obj())
    assert ClusterEvent(Resource.NODE, A.UPDATE_NODE_LABEL).matches(event)
    assert ClusterEvent(Resource.NODE, A.ADD | A.UPDATE_NODE_LABEL).matches(event)
    assert not ClusterEvent(Resource.NODE, A.UPDATE_NODE_TAINT).matches(event)
    assert event.queue_label() == "NodeUpdateNodeLabel"


def test_a_node_update_changing_several_properties_reaches_each_registration() -> None:
    events = node_update_event(base().taint("a").obj(), base().label("zone", "b").obj())
    for registered in (ClusterEvent(Resource.NODE, A.ADD | A.UPDATE_NODE_TAINT),
                       ClusterEvent(Resource.NODE, A.ADD | A.UPDATE_NODE_LABEL)):
        assert any(registered.matches(event) for event in events)


# --- what the callbacks hand the queue ---------------------------------------------------


class RecordingQueue:
    def __init__(self, release: int = 36) -> None:
        self.release = release  # the kube-scheduler minor the handlers label events for
        self.deferred_resize = False  # InPlacePodVerticalScalingSchedulerPreemption
        self.events: list[tuple[str, PreCheck | None]] = []
        self.objects: list[tuple[object, object]] = []  # (old, new) for the queueing hints
        self.deleted: list[str] = []
        # Events that came by move_on_assigned_pod (upstream's AssignedPod* calls).
        self.assigned: list[str] = []

    def move_on_assigned_pod(self, event: ClusterEvent, old: object, new: object) -> int:
        self.assigned.append(event.queue_label())
        return self.move_on_event(event, old, new)

    def move_on_event(self, event: ClusterEvent, old: object = None, new: object = None, *,
                      pre_check: PreCheck | None = None) -> int:
        self.events.append((event.queue_label(), pre_check))
        self.objects.append((old, new))
        return 0

    def delete(self, uid: str) -> None:
        self.deleted.append(uid)

    def update(self, pod: PodInfo, previously_nominated: str = "") -> None:
        pass

    def add(self, pod: PodInfo) -> None:
        pass


class HandledLabels(NoMetrics):
    def __init__(self) -> None:
        super().__init__()
        self.handled: list[str] = []

    def event_handled(self, event: str, seconds: float) -> None:
        self.handled.append(event)


class FakeScheduler:
    def __init__(self, release: int = 36) -> None:
        self.queue = RecordingQueue(release)
        self.cache = Cache()
        self.frameworks: dict[str, Any] = {}
        self.metrics = HandledLabels()
        self.context = SimpleNamespace(metrics=self.metrics)

    def responsible_for(self, scheduler_name: str) -> bool:
        return scheduler_name == "default-scheduler"


def handlers(release: int = 36) -> tuple[FakeScheduler, PodEventHandler, NodeEventHandler]:
    scheduler = FakeScheduler(release)
    as_scheduler = cast(Scheduler, scheduler)
    return (scheduler, PodEventHandler(as_scheduler, cast(EventRecorder, None)),
            NodeEventHandler(as_scheduler))


def labels(scheduler: FakeScheduler) -> list[str]:
    return [label for label, _ in scheduler.queue.events]


def test_node_update_moves_pods_once_per_changed_property() -> None:
    scheduler, _, nodes = handlers()
    old, new = base().taint("a").obj(), base().label("zone", "b").obj()
    nodes.on_add(old)
    scheduler.queue.events.clear()
    scheduler.queue.objects.clear()
    nodes.on_update(old, new)
    assert labels(scheduler) == ["NodeUpdateNodeLabel", "NodeUpdateNodeTaint"]
    assert scheduler.queue.objects == [(old, new), (old, new)]


def test_node_delete_is_an_event() -> None:
    scheduler, _, nodes = handlers()
    node = base().obj()
    nodes.on_add(node)
    nodes.on_delete(node)
    assert labels(scheduler) == ["NodeAdd", "NodeDelete"]
    assert scheduler.queue.objects == [(None, node), (node, None)]


def test_assigned_pod_update_moves_pods_once_per_changed_property() -> None:
    scheduler, pods, _ = handlers()
    old = make_pod("p").node("n").req(cpu="1").obj()
    new = make_pod("p").node("n").req(cpu="500m").label("app", "a").obj()
    pods.on_add(old)
    pods.on_update(old, new)
    assert labels(scheduler) == ["AssignedPodAdd", "AssignedPodUpdatePodLabel",
                                 "AssignedPodUpdatePodScaleDown"]
    # Hints see PodInfos: the requests before and after the scale-down.
    (_, added), *updates = scheduler.queue.objects
    assert isinstance(added, PodInfo) and added.requests.milli_cpu == 1000
    for before, after in updates:
        assert isinstance(before, PodInfo) and isinstance(after, PodInfo)
        assert (before.requests.milli_cpu, after.requests.milli_cpu) == (1000, 500)


def test_binding_is_an_assigned_pod_add() -> None:
    scheduler, pods, _ = handlers()
    old = make_pod("p").obj()
    pods.on_update(old, make_pod("p").node("n").obj())
    assert labels(scheduler) == ["AssignedPodAdd"]
    assert scheduler.queue.assigned == ["AssignedPodAdd"]  # only pods it may help
    assert scheduler.queue.deleted == [old.metadata.uid]
    [(before, after)] = scheduler.queue.objects
    assert before is None and isinstance(after, PodInfo) and after.node_name == "n"


@pytest.mark.parametrize("how", ["deleted", "finished"])
def test_an_assigned_pod_going_away_hands_the_hints_the_pod_it_was(how: str) -> None:
    scheduler, pods, _ = handlers()
    running = make_pod("p").node("n").req(cpu="1").obj()
    pods.on_add(running)
    if how == "deleted":
        pods.on_delete(running)
    else:
        finished = make_pod("p").node("n").req(cpu="1").obj()
        finished.status.phase = "Succeeded"
        pods.on_update(running, finished)
    assert labels(scheduler) == ["AssignedPodAdd", "AssignedPodDelete"]
    [_, (gone, after)] = scheduler.queue.objects
    assert isinstance(gone, PodInfo) and after is None
    assert (gone.node_name, gone.requests.milli_cpu) == ("n", 1000)


@pytest.mark.parametrize("how", ["deleted", "nomination cleared"])
def test_a_nominated_pod_leaving_frees_its_room_for_pods_of_no_higher_priority(
        how: str) -> None:
    scheduler, pods, _ = handlers()
    nominated = make_pod("p").priority(10).obj()
    nominated.status.nominated_node_name = "n"
    if how == "deleted":
        pods.on_delete(nominated)
    else:
        pods.on_update(nominated, make_pod("p").priority(10).obj())
    [(label, pre_check)] = scheduler.queue.events
    assert label == "AssignedPodDelete"
    [(gone, _)] = scheduler.queue.objects
    assert isinstance(gone, PodInfo) and gone.pod.status.nominated_node_name == "n"
    assert pre_check is not None
    assert pre_check(make_pod("peer").priority(10).info())
    assert not pre_check(make_pod("higher").priority(11).info())


class RecordingRecorder:
    def __init__(self) -> None:
        self.notes: list[str] = []

    def failed_scheduling(self, pod: api.Pod, controller: str, message: str) -> None:
        self.notes.append(f"{pod.metadata.name}: {message}")


def test_only_the_leader_reports_malformed_pods_and_it_reports_what_it_saw_standing_by(
) -> None:
    scheduler = FakeScheduler()
    recorder = RecordingRecorder()
    pods = PodEventHandler(cast(Scheduler, scheduler), cast(EventRecorder, recorder))
    broken = make_pod("broken").req(cpu="1").obj()
    broken.spec.scheduler_name = "default-scheduler"
    broken.spec.containers[0].resources.requests = {"cpu": "one"}
    pods.on_add(broken)
    assert recorder.notes == []  # a standby writes nothing
    pods.on_leading()
    assert len(recorder.notes) == 1 and recorder.notes[0].startswith(
        "broken: pod cannot be scheduled:")
    pods.on_update(broken, broken)
    assert len(recorder.notes) == 1  # once per pod
    late = make_pod("late").req(cpu="1").obj()
    late.spec.scheduler_name = "default-scheduler"
    late.spec.containers[0].resources.requests = {"cpu": "x"}
    pods.on_add(late)
    assert len(recorder.notes) == 2  # the leader reports at once


def _with_conditions(**statuses: str) -> api.Node:
    node = base().obj()
    node.status.conditions = [api.NodeCondition(type=kind, status=status)
                              for kind, status in statuses.items()]
    return node


@pytest.mark.parametrize(("old", "new", "actions"), [
    (_with_conditions(Ready="False"), _with_conditions(Ready="True"),
     [A.UPDATE_NODE_CONDITION]),
    (_with_conditions(Ready="True"), _with_conditions(Ready="True"), []),
    (_with_conditions(Ready="True"), _with_conditions(Ready="True", DiskPressure="False"),
     [A.UPDATE_NODE_CONDITION]),
], ids=["status-changed", "heartbeat-only", "condition-added"])
def test_node_condition_changes_are_events_as_upstream(old: api.Node, new: api.Node,
                                                       actions: list[ActionType]) -> None:
    assert [event.action for event in node_update_event(old, new)] == actions


def _resize_preemption_off(*owners: str) -> api.Node:
    node = base().obj()
    node.spec.pod_preemption_policy = api.NodePodPreemptionPolicy(
        disable_resize_preemption=list(owners))
    return node


@pytest.mark.parametrize(("old", "new", "release", "actions"), [
    (base().obj(), _resize_preemption_off("kubelet"), 37,
     [A.UPDATE_NODE_PREEMPTION_POLICY]),
    (_resize_preemption_off("kubelet"), base().obj(), 37,
     [A.UPDATE_NODE_PREEMPTION_POLICY]),
    (_resize_preemption_off("kubelet"), _resize_preemption_off("kubelet"), 37, []),
    (base().obj(), _resize_preemption_off("kubelet"), 36, []),
], ids=["set (v1.37)", "removed (v1.37)", "unchanged (v1.37)", "not an event as v1.36"])
def test_node_preemption_policy_changes_are_events_from_v1_37(
        old: api.Node, new: api.Node, release: int, actions: list[ActionType]) -> None:
    """v1.37's extractNodePreemptionPolicyChange (DeferredPodScheduling listens)."""
    assert [event.action for event in node_update_event(old, new, release)] == actions


@pytest.mark.parametrize(("release", "handled", "moved"), [
    (36, ["UnschedulablePodAdd", "AssignedPodUpdate", "AssignedPodUpdate"],
     ["AssignedPodAdd", "AssignedPodUpdate"]),
    (37, ["UnscheduledPodAdd", "AssignedPodUpdate", "AssignedPodUpdate"],
     ["AssignedPodAdd", "AssignedPodUpdatePodScaleUp"]),
], ids=["v1.36", "v1.37"])
def test_labels_and_scale_up_follow_the_release(release: int, handled: list[str],
                                                moved: list[str]) -> None:
    """scheduler_event_handling_duration_seconds{event} spells the pending-pod resource
    as the release does; v1.37 reports an assigned pod's scale-up as such."""
    scheduler, pods, _ = handlers(release)
    pending = make_pod("p").req(cpu="1").obj()
    pods.on_add(pending)
    placed = make_pod("p").node("n").req(cpu="1").obj()
    pods.on_update(pending, placed)
    pods.on_update(placed, make_pod("p").node("n").req(cpu="2").obj())
    assert scheduler.metrics.handled == handled
    assert labels(scheduler) == moved
