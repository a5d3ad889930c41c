"""NodeResourcesFit's queueing hints: which events may free what a pod lacked."""

from __future__ import annotations

from collections.abc import Callable

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.objects import api
from kpysched.objects.dra import DeviceClass
from kpysched.objects.extended_resource_classes import implicit_extended_resource_name
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import Resource as Resources
from kpysched.plugins._shared.resize import is_pod_resize_deferred
from kpysched.plugins.node_resources.fits_request import PodRequest, fits_request

# In-place resize is GA, so a pod scaled down may free room as a deleted one does.
_POD_EVENT = ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)
_NODE_EVENT = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
# With InPlacePodVerticalScalingSchedulerPreemption: a pod growing on a deferred
# resize's node, or the resize asking for more still.
_ASSIGNED_POD_SCALE_UP = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_UP)
_TARGET_POD_SCALE_UP = ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCALE_UP)
# A pod may wait for a class that maps an extended resource it requests.
_DEVICE_CLASS_EVENT = ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)

# Extended resource name -> the DeviceClass backing it through DRA, or None.
Resolver = Callable[[str], DeviceClass | None]


def _no_classes(name: str) -> DeviceClass | None:
    return None


def _full_request(pod: PodInfo, resolver: Resolver = _no_classes) -> PodRequest:
    """The pod's requests with nothing ignored, as upstream's hints compute them."""
    requests = pod.requests
    return PodRequest(requests.milli_cpu, requests.memory, requests.ephemeral_storage,
                      tuple(requests.scalar.items()),
                      frozenset(name for name, amount in requests.scalar.items()
                                if amount != 0 and resolver(name) is not None))


def _fits_empty_node(pod: PodInfo, node: api.Node, resolver: Resolver = _no_classes) -> bool:
    """Whether the pod fits the node's allocatable with no pod on it (upstream's isFit)."""
    info = NodeInfo(node.metadata.name)
    info.set_node(node)
    return not fits_request(_full_request(pod, resolver), info)


def _requested_resources_grew(pod: PodInfo, old: api.Node, new: api.Node,
                              resolver: Resolver = _no_classes) -> bool:
    """Upstream's haveAnyRequestedResourcesIncreased: more room for pods, or more of a
    resource the pod requests, or a requested resource the new node leaves to DRA."""
    before = Resources.from_mapping(old.status.allocatable)
    after = Resources.from_mapping(new.status.allocatable)
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    wanted = pod.requests
    if (wanted.milli_cpu == 0 and wanted.memory == 0 and wanted.ephemeral_storage == 0
            and not wanted.scalar):
        return False
    if ((wanted.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
            or (wanted.memory > 0 and after.memory > before.memory)
            or (wanted.ephemeral_storage > 0
                and after.ephemeral_storage > before.ephemeral_storage)):
        return True
    return any(amount != 0 and (
        after.scalar.get(name, 0) > before.scalar.get(name, 0)
        or (after.scalar.get(name, 0) <= 0 and resolver(name) is not None))
        for name, amount in wanted.scalar.items())


def _elsewhere(target: PodInfo, node_name: str, deferred_resize: bool) -> bool:
    """With the gate on, a deferred resize can only gain from its own node."""
    return (deferred_resize and is_pod_resize_deferred(target.pod)
            and node_name != target.node_name)


def _scale_down_helps(target: PodInfo, old: PodInfo, new: PodInfo,
                      deferred_resize: bool = False) -> bool:
    """Upstream's isSchedulableAfterPodScaleDown: the rejected pod itself shrank, or a
    scheduled pod now requests less of something the rejected pod requests."""
    if new.uid == target.uid:
        return True
    if not new.node_name or _elsewhere(target, new.node_name, deferred_resize):
        return False
    before, after, wanted = old.requests, new.requests, target.requests
    if wanted.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if wanted.memory and before.memory > after.memory:
        return True
    if wanted.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    return any(amount and before.scalar.get(name, 0) > after.scalar.get(name, 0)
               for name, amount in wanted.scalar.items())


def schedulable_after_pod_event(pod: PodInfo, old: object, new: object,
                                deferred_resize: bool = False) -> QueueingHint:
    """A pod deleted or scaled down: may it have freed what `pod` lacked?"""
    original, modified = objects_as(PodInfo, old, new)
    if modified is None:
        if original is None:
            raise ValueError("a pod deletion without the deleted pod")
        if not original.node_name and not original.pod.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP  # it held no room anywhere
        if _elsewhere(pod, original.node_name, deferred_resize):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
    if original is None or not _scale_down_helps(pod, original, modified, deferred_resize):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_target_pod_scale_up(pod: PodInfo, old: object,
                                          new: object) -> QueueingHint:
    """The pod itself asks for more: a deferred resize that fitted may not any more, and
    preemption may be needed (registered with the gate on only)."""
    return QueueingHint.QUEUE if is_pod_resize_deferred(pod.pod) else QueueingHint.QUEUE_SKIP


def schedulable_after_assigned_pod_scale_up(pod: PodInfo, old: object,
                                            new: object) -> QueueingHint:
    """Another pod on a deferred resize's node grew: it may have taken the room the
    resize waited for, so preemption is to be tried again (gate on only)."""
    _, modified = objects_as(PodInfo, old, new)
    if modified is None:
        raise ValueError("a pod update without the new pod")
    if not is_pod_resize_deferred(pod.pod) or modified.node_name != pod.node_name:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_node_change(pod: PodInfo, old: object, new: object,
                                  resolver: Resolver = _no_classes,
                                  deferred_resize: bool = False) -> QueueingHint:
    """A node added or its allocatable changed: could `pod` fit there now?

    An extended resource the node does not advertise but a DeviceClass maps counts as
    available (DynamicResources decides on it), as upstream's isFit does."""
    original, modified = objects_as(api.Node, old, new)
    if modified is not None and _elsewhere(pod, modified.metadata.name, deferred_resize):
        return QueueingHint.QUEUE_SKIP
    if modified is None or not _fits_empty_node(pod, modified, resolver):
        return QueueingHint.QUEUE_SKIP  # too small for the pod even when empty
    if original is None:
        return QueueingHint.QUEUE
    if not _requested_resources_grew(pod, original, modified, resolver):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_device_class_event(pod: PodInfo, old: object,
                                         new: object) -> QueueingHint:
    """A DeviceClass added or updated: does it now map an extended resource `pod`
    requests (upstream's isSchedulableAfterDeviceClassEvent)?"""
    original, modified = objects_as(DeviceClass, old, new)
    if modified is None:
        raise ValueError("a DeviceClass event without the new class")
    requested = pod.requests.scalar
    explicit = modified.spec.extended_resource_name
    if original is not None:
        if (original.spec.extended_resource_name or "") == (explicit or ""):
            return QueueingHint.QUEUE_SKIP  # the names it maps did not change
    elif implicit_extended_resource_name(modified.metadata.name) in requested:
        return QueueingHint.QUEUE  # the implicit name only matters when a class is added
    if explicit is not None and explicit in requested:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def events(resolver: Resolver = _no_classes, *,
           deferred_resize: bool = False) -> tuple[ClusterEventWithHint, ...]:
    """NodeResourcesFit's registrations; `resolver` answers which DeviceClass backs an
    extended resource (DRAExtendedResource, on by default in v1.36); `deferred_resize`
    is InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha)."""
    def node_hint(pod: PodInfo, old: object, new: object) -> QueueingHint:
        return schedulable_after_node_change(pod, old, new, resolver, deferred_resize)

    def pod_hint(pod: PodInfo, old: object, new: object) -> QueueingHint:
        return schedulable_after_pod_event(pod, old, new, deferred_resize)

    registered = (
        ClusterEventWithHint(_POD_EVENT, pod_hint),
        ClusterEventWithHint(_NODE_EVENT, node_hint),
        ClusterEventWithHint(_DEVICE_CLASS_EVENT, schedulable_after_device_class_event),
    )
    if not deferred_resize:
        return registered
    return (*registered,
            ClusterEventWithHint(_ASSIGNED_POD_SCALE_UP, schedulable_after_assigned_pod_scale_up),
            ClusterEventWithHint(_TARGET_POD_SCALE_UP, schedulable_after_target_pod_scale_up))
