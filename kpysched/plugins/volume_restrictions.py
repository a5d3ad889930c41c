"""VolumeRestrictions: disks that cannot be mounted twice, and ReadWriteOncePod claims.

Filter rejects a node where another pod already mounts the same GCE PD (unless both
mount it read-only), AWS EBS volume, iSCSI IQN (unless both read-only) or RBD image
(a shared monitor, same pool and image, unless both read-only). PreFilter looks up the
pod's claims (a missing one is unresolvable) and counts how many of its
ReadWriteOncePod claims some scheduled pod already uses; while any is, every node
fails, and preemption may help by removing that user (AddPod/RemovePod keep the count).

Queueing hints (spec.volumes is immutable, so no pod update can help): a deleted pod
in the same namespace helps when it held a disk the pod conflicts with or used one of
the same claims (its access mode is not looked up); a new claim helps when the pod
names it; a new node always may.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins._shared.volume_helpers import PVC_RESOURCE, namespaced, not_found

NAME = "VolumeRestrictions"

REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod")

_PRE_FILTER_KEY = "PreFilter" + NAME


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    # Names of the pod's claims with the ReadWriteOncePod access mode.
    read_write_once_pod_claims: frozenset[str]
    # How many references scheduled pods hold to those claims.
    conflicting_refs: int

    def with_pod(self, other: PodInfo, sign: int) -> _PreFilterState:
        # Upstream matches claim names only, whatever the other pod's namespace.
        refs = sum(1 for volume in other.pod.spec.volumes
                   if volume.persistent_volume_claim is not None
                   and volume.persistent_volume_claim.claim_name
                   in self.read_write_once_pod_claims)
        return _PreFilterState(self.read_write_once_pod_claims,
                               self.conflicting_refs + sign * refs)


def _needs_disk_check(volume: api.Volume) -> bool:
    return (volume.gce_persistent_disk is not None or volume.aws_elastic_block_store is not None
            or volume.rbd is not None or volume.iscsi is not None)


def _both_read_only(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def _conflicts(volume: api.Volume, existing: api.Volume) -> bool:
    """Whether two pods mounting these volumes on one node would collide."""
    gce, other_gce = volume.gce_persistent_disk, existing.gce_persistent_disk
    if (gce is not None and other_gce is not None
            and gce.get("pdName", "") == other_gce.get("pdName", "")
            and not _both_read_only(gce, other_gce)):
        return True
    ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
    if (ebs is not None and other_ebs is not None
            and ebs.get("volumeID", "") == other_ebs.get("volumeID", "")):
        return True
    iscsi, other_iscsi = volume.iscsi, existing.iscsi
    if (iscsi is not None and other_iscsi is not None
            and iscsi.get("iqn", "") == other_iscsi.get("iqn", "")
            and not _both_read_only(iscsi, other_iscsi)):
        return True
    rbd, other_rbd = volume.rbd, existing.rbd
    return (rbd is not None and other_rbd is not None
            and not set(rbd.get("monitors") or ()).isdisjoint(other_rbd.get("monitors") or ())
            and rbd.get("pool", "") == other_rbd.get("pool", "")
            and rbd.get("image", "") == other_rbd.get("image", "")
            and not _both_read_only(rbd, other_rbd))


def _satisfies_disk_conflicts(pod: PodInfo, others: Iterable[PodInfo]) -> bool:
    """Whether none of `others` (the pods on a node) mounts a disk `pod` conflicts with."""
    wanted = [volume for volume in pod.pod.spec.volumes if _needs_disk_check(volume)]
    if not wanted:
        return True
    return not any(_conflicts(volume, existing)
                   for other in others for existing in other.pod.spec.volumes
                   for volume in wanted)


def _claim_names(pod: PodInfo) -> set[str]:
    return {volume.persistent_volume_claim.claim_name for volume in pod.pod.spec.volumes
            if volume.persistent_volume_claim is not None}


def schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Did the deleted pod (same namespace) hold a conflicting disk, or use one of the
    pod's claims? Upstream does not fetch the claim to check for ReadWriteOncePod."""
    deleted, _ = objects_as(PodInfo, old, new)
    if deleted is None:
        raise ValueError("a pod deletion without the deleted pod")
    if deleted.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    if not _satisfies_disk_conflicts(pod, (deleted,)):
        return QueueingHint.QUEUE
    if _claim_names(pod) & _claim_names(deleted):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def schedulable_after_claim_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Is the new claim one the pod names (and PreFilter found missing)?"""
    _, claim = objects_as(storage.PersistentVolumeClaim, old, new)
    if claim is None:
        raise ValueError("a claim addition without the claim")
    if claim.metadata.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    if claim.metadata.name in _claim_names(pod):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


# Upstream's registrations with queueing hints on (GA in v1.36): spec.volumes is
# immutable, so only a pod going away, a new node or a claim appearing can help. The
# node event has no hint: any new node may do.
_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE),
                         schedulable_after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
    ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                         schedulable_after_claim_added),
)


class VolumeRestrictions(PreFilterPlugin, PreFilterExtensions, FilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        needs_check = any(_needs_disk_check(volume) for volume in pod.pod.spec.volumes)
        claims, status = self._read_write_once_pod_claims(pod)
        if claims is None:
            return None, status
        computed = _PreFilterState(claims, self._claims_in_use(pod.namespace, claims))
        if not needs_check and computed.conflicting_refs == 0:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, computed)
        return None, SUCCESS

    def _read_write_once_pod_claims(self, pod: PodInfo) -> tuple[frozenset[str] | None, Status]:
        lister = self._handle.storage.persistent_volume_claims
        names: set[str] = set()
        for volume in pod.pod.spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            name = volume.persistent_volume_claim.claim_name
            claim = namespaced(lister, pod.namespace, name)
            if claim is None:
                return None, Status.unresolvable(not_found(PVC_RESOURCE, name))
            if storage.READ_WRITE_ONCE_POD in claim.spec.access_modes:
                names.add(claim.metadata.name)
        return frozenset(names), SUCCESS

    def _claims_in_use(self, namespace: str, claims: frozenset[str]) -> int:
        """How many of the claims a scheduled pod uses (upstream's IsPVCUsedByPods over
        the snapshot); a ReadWriteOncePod claim has at most one user."""
        if not claims:
            return 0
        used: set[str] = set()
        for node in self._handle.snapshot.node_infos:
            for other in node.pods.values():
                if other.namespace != namespace:
                    continue
                used.update(volume.persistent_volume_claim.claim_name
                            for volume in other.pod.spec.volumes
                            if volume.persistent_volume_claim is not None)
        return len(claims & used)

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo,
                node: NodeInfo) -> Status:
        return self._update(state, added, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo,
                   node: NodeInfo) -> Status:
        return self._update(state, removed, -1)

    def _update(self, state: CycleState, other: PodInfo, sign: int) -> Status:
        # A fresh value, never a mutation: cloned cycle states share what they hold.
        current: _PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if current is None:
            return _state_missing()
        state.write(_PRE_FILTER_KEY, current.with_pod(other, sign))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        if not _satisfies_disk_conflicts(pod, node.pods.values()):
            return Status.unschedulable(REASON_DISK_CONFLICT, plugin=NAME)
        computed: _PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if computed is None:
            return _state_missing()
        if computed.conflicting_refs > 0:
            return Status.unschedulable(REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=NAME)
        return SUCCESS


def _state_missing() -> Status:
    return Status.error(f'cannot read "{_PRE_FILTER_KEY}" from cycleState', plugin=NAME)


def new(args: None, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(handle)


SPEC = PluginSpec(NAME, VolumeRestrictions, new, None)
