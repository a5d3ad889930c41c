"""NodeVolumeLimits' queueing hints (upstream's isSchedulableAfter* of CSILimits): which
events may free or add room for the volumes of a pod it rejected. A new CSINode needs
no hint: it may bring the limits, or the migration, the pod was waiting for."""

from __future__ import annotations

from kpysched.framework.cluster_events import QueueingHint, objects_as
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_volume_limits import translation


def counts_here(volume: api.Volume) -> bool:
    """A volume NodeVolumeLimits may count: a claim, a generic ephemeral volume or a
    migratable in-tree one (PreFilter skips pods with none)."""
    return (volume.persistent_volume_claim is not None or volume.ephemeral is not None
            or translation.inline_plugin(volume) is not None)


def after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A scheduled (or nominated) pod went away with a volume that may have counted: a
    claim, a generic ephemeral volume or a migratable in-tree one."""
    deleted, _ = objects_as(PodInfo, old, new)
    if deleted is None:
        raise ValueError("a pod deletion without the deleted pod")
    if not deleted.pod.spec.volumes:
        return QueueingHint.QUEUE_SKIP
    if not deleted.node_name and not deleted.pod.status.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    if any(counts_here(volume) for volume in deleted.pod.spec.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_claim_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """The new claim is one the pod uses (by name, or as a generic ephemeral volume's
    claim "<pod>-<volume>") in its namespace: Filter could not count it before."""
    _, added = objects_as(storage.PersistentVolumeClaim, old, new)
    if added is None:
        raise ValueError("a claim addition without the claim")
    if added.metadata.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    for volume in pod.pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            claim_name = volume.persistent_volume_claim.claim_name
        elif volume.ephemeral is not None:
            claim_name = f"{pod.name}-{volume.name}"
        else:
            continue
        if claim_name == added.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_volume_attachment_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A detached volume frees room for the pod's claims (whatever their driver: upstream
    does not look them up) or for a migratable inline volume of the attacher's driver.
    An inline volume that cannot be translated raises, which counts as Queue."""
    deleted, _ = objects_as(storage.VolumeAttachment, old, new)
    if deleted is None:
        raise ValueError("a VolumeAttachment deletion without the attachment")
    for volume in pod.pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            return QueueingHint.QUEUE
        plugin = translation.inline_plugin(volume)
        if plugin is None:
            continue
        problem = translation.inline_translation_problem(plugin, volume)
        if problem:
            raise ValueError(f"converting volume({volume.name}) from inline to csi: {problem}")
        if deleted.spec.attacher == plugin.csi_driver:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _count(driver: storage.CSINodeDriver) -> int:
    """The driver's allocatable count, 0 when it gives none (as upstream reads it here,
    though Filter takes no count as no limit)."""
    if driver.allocatable is None or driver.allocatable.count is None:
        return 0
    return driver.allocatable.count


def after_csi_node_updated(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Some driver's allocatable count went up (a driver new to the CSINode counts from
    0). Other changes, a limit removed included, are not heard."""
    before, after = objects_as(storage.CSINode, old, new)
    if before is None or after is None:
        raise ValueError("a CSINode update without both objects")
    old_limits = {driver.name: _count(driver) for driver in before.spec.drivers}
    for driver in after.spec.drivers:
        if _count(driver) > old_limits.get(driver.name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
