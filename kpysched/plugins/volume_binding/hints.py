"""VolumeBinding's queueing hints: which storage events may help a pod it rejected
(upstream's isSchedulableAfter* functions). PV and node events need no hint: any of
them may change a node's verdict."""

from __future__ import annotations

from kpysched.framework.cluster_events import QueueingHint, objects_as
from kpysched.objects import storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins.volume_binding.binder import volume_limit
from kpysched.plugins.volume_binding.pv_matching import pod_claim_name

# CSINode annotation listing the in-tree plugins migrated to CSI on the node.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def after_storage_class_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A new class may be the missing one; of an update only allowedTopologies matter
    (the binding mode cannot change)."""
    before, after = objects_as(storage.StorageClass, old, new)
    if before is None or after is None:
        return QueueingHint.QUEUE
    if before.allowed_topologies != after.allowed_topologies:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_claim_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Only the pod's own claims (generic ephemeral ones included) matter."""
    _, claim = objects_as(storage.PersistentVolumeClaim, old, new)
    if claim is None or claim.metadata.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    for volume in pod.pod.spec.volumes:
        named = pod_claim_name(pod.pod, volume)
        if named is not None and named[0] == claim.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_csi_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A new CSINode, or a change in which plugins are migrated to CSI."""
    before, after = objects_as(storage.CSINode, old, new)
    if before is None or after is None:
        return QueueingHint.QUEUE
    if (before.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
            != after.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_csi_driver_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A driver of one of the pod's inline CSI volumes stopped tracking capacity."""
    before, after = objects_as(storage.CSIDriver, old, new)
    if before is None or after is None:
        return QueueingHint.QUEUE
    for volume in pod.pod.spec.volumes:
        if volume.csi is None or volume.csi.driver != after.metadata.name:
            continue
        if before.spec.storage_capacity and not after.spec.storage_capacity:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_capacity_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """New capacity, or a larger volume limit (class and topology cannot change)."""
    before, after = objects_as(storage.CSIStorageCapacity, old, new)
    if before is None or after is None:
        return QueueingHint.QUEUE
    old_limit, new_limit = volume_limit(before), volume_limit(after)
    if new_limit is not None and (old_limit is None or new_limit.units() > old_limit.units()):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
