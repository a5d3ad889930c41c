"""NodeResourcesFit's queueing hints: which events may free what a pod lacked."""

from __future__ import annotations

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
from kpysched.objects.pod import PodInfo
from kpysched.objects.resources import Resource as Resources
from kpysched.plugins.node_resources_fit.fit import PodRequest, fits_request

# In-place resize is GA, so a pod scaled down may free room as a deleted one does.
_POD_EVENT = ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)
_NODE_EVENT = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)


def _full_request(pod: PodInfo) -> PodRequest:
    """The pod's requests with nothing ignored, as upstream's hints compute them."""
    requests = pod.requests
    return PodRequest(requests.milli_cpu, requests.memory, requests.ephemeral_storage,
                      tuple(requests.scalar.items()))


def _fits_empty_node(pod: PodInfo, node: api.Node) -> bool:
    """Whether the pod fits the node's allocatable with no pod on it (upstream's isFit)."""
    info = NodeInfo(node.metadata.name)
    info.set_node(node)
    return not fits_request(_full_request(pod), info)


def _requested_resources_grew(pod: PodInfo, old: api.Node, new: api.Node) -> bool:
    """Upstream's haveAnyRequestedResourcesIncreased: more room for pods, or more of a
    resource the pod requests."""
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
    return any(amount != 0 and after.scalar.get(name, 0) > before.scalar.get(name, 0)
               for name, amount in wanted.scalar.items())


def _scale_down_helps(target: PodInfo, old: PodInfo, new: PodInfo) -> bool:
    """Upstream's isSchedulableAfterPodScaleDown: the rejected pod itself shrank, or a
    scheduled pod now requests less of something the rejected pod requests."""
    if new.uid == target.uid:
        return True
    if not new.node_name:
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


def schedulable_after_pod_event(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A pod deleted or scaled down: may it have freed what `pod` lacked?"""
    original, modified = objects_as(PodInfo, old, new)
    if modified is None:
        if original is None:
            raise ValueError("a pod deletion without the deleted pod")
        if not original.node_name and not original.pod.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP  # it held no room anywhere
        return QueueingHint.QUEUE
    if original is None or not _scale_down_helps(pod, original, modified):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A node added or its allocatable changed: could `pod` fit there now?"""
    original, modified = objects_as(api.Node, old, new)
    if modified is None or not _fits_empty_node(pod, modified):
        return QueueingHint.QUEUE_SKIP  # too small for the pod even when empty
    if original is None:
        return QueueingHint.QUEUE
    if not _requested_resources_grew(pod, original, modified):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


EVENTS = (
    ClusterEventWithHint(_POD_EVENT, schedulable_after_pod_event),
    ClusterEventWithHint(_NODE_EVENT, schedulable_after_node_change),
)
