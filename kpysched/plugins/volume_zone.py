"""VolumeZone: a pod whose bound PersistentVolumes carry zone or region labels may only
go to nodes with matching labels.

PreFilter follows each of the pod's claims to its bound PV and keeps the PV's topology
labels (beta and GA zone and region; a multi-zone value is "a__b"); claims still
waiting for their first consumer are left to VolumeBinding. Missing claims, classes or
PVs are unresolvable. Filter passes nodes without any topology label (a single-zone
cluster) and otherwise wants every PV label's value on the node, a beta PV label also
matching the node's GA label.

Queueing hints: a new StorageClass helps only if it waits for the first consumer
(volumeBindingMode is immutable, so class updates are not heard); an added or updated
claim only if the pod names it (same namespace); a new PV always, an updated one only
if its topology labels changed. Node additions and label changes need no hint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

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
from kpysched.framework.interfaces import FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins._shared.volume_helpers import (
    PV_RESOURCE,
    PVC_RESOURCE,
    STORAGE_CLASS_RESOURCE,
    claim_class,
    namespaced,
    not_found,
)

NAME = "VolumeZone"

REASON_CONFLICT = "node(s) had no available volume zone"

_PRE_FILTER_KEY = "PreFilter" + NAME

ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
# In upstream's order, which decides which mismatch is met first.
_TOPOLOGY_LABELS = (ZONE_BETA, REGION_BETA, ZONE, REGION)
_GA_LABEL = {ZONE_BETA: ZONE, REGION_BETA: REGION}
# k8s.io/cloud-provider's LabelMultiZoneDelimiter.
_MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class _PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def _label_zones(value: str) -> frozenset[str] | None:
    """The zones of a label value; None when one is blank (upstream ignores the label)."""
    zones = [zone.strip() for zone in value.split(_MULTI_ZONE_DELIMITER)]
    return None if "" in zones else frozenset(zones)


def _pv_topologies(pv: storage.PersistentVolume) -> list[_PVTopology]:
    found = []
    for key in _TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = _label_zones(value)
        if zones is not None:
            found.append(_PVTopology(pv.metadata.name, key, zones))
    return found


def schedulable_after_storage_class_added(pod: PodInfo, old: object,
                                          new: object) -> QueueingHint:
    """A class that waits for the first consumer leaves the pod's claim to VolumeBinding."""
    _, added = objects_as(storage.StorageClass, old, new)
    if added is None:
        raise ValueError("a StorageClass addition without the class")
    if added.volume_binding_mode != storage.BINDING_WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_claim_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Only the pod's own claims (by name, in its namespace) matter."""
    _, claim = objects_as(storage.PersistentVolumeClaim, old, new)
    if claim is None or claim.metadata.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    if any(volume.persistent_volume_claim is not None
           and volume.persistent_volume_claim.claim_name == claim.metadata.name
           for volume in pod.pod.spec.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def schedulable_after_pv_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A new PV, or changed topology labels (spec.nodeAffinity is immutable)."""
    before, after = objects_as(storage.PersistentVolume, old, new)
    if before is None:
        return QueueingHint.QUEUE
    if after is None:
        raise ValueError("a PersistentVolume update without the new PV")
    if _pv_topologies(before) != _pv_topologies(after):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


# Upstream's registrations with queueing hints on (GA in v1.36). volumeBindingMode is
# immutable, so only new StorageClasses count; claims and PVs count when added or changed.
# Any new node, or a node whose labels changed, may do: no hint.
_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD),
                         schedulable_after_storage_class_added),
    ClusterEventWithHint(ClusterEvent(Resource.NODE,
                                      ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
    ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM,
                                      ActionType.ADD | ActionType.UPDATE),
                         schedulable_after_claim_change),
    ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME,
                                      ActionType.ADD | ActionType.UPDATE),
                         schedulable_after_pv_change),
)


class VolumeZone(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._storage = handle.storage
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        topologies, status = self._topologies_of(pod)
        if not status.ok:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, topologies)
        return None, SUCCESS

    def _topologies_of(self, pod: PodInfo) -> tuple[tuple[_PVTopology, ...], Status]:
        """The topology labels of the PVs bound to the pod's claims."""
        found: list[_PVTopology] = []
        for volume in pod.pod.spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            claim_name = volume.persistent_volume_claim.claim_name
            if not claim_name:
                return (), Status.unresolvable("PersistentVolumeClaim had no name")
            claim = namespaced(self._storage.persistent_volume_claims, pod.namespace,
                               claim_name)
            if claim is None:
                return (), Status.unresolvable(not_found(PVC_RESOURCE, claim_name))
            pv_name = claim.spec.volume_name
            if not pv_name:
                status = self._unbound_claim_status(claim)
                if not status.ok:
                    return (), status
                continue
            pv = self._storage.persistent_volumes.get(pv_name)
            if pv is None:
                return (), Status.unresolvable(not_found(PV_RESOURCE, pv_name))
            found.extend(_pv_topologies(pv))
        return tuple(found), SUCCESS

    def _unbound_claim_status(self, claim: storage.PersistentVolumeClaim) -> Status:
        """Success for a claim waiting for its first consumer (nothing to match yet);
        any other unbound claim is unresolvable, with upstream's reason."""
        class_name = claim_class(claim)
        if not class_name:
            return Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
        storage_class = self._storage.storage_classes.get(class_name)
        if storage_class is None:
            return Status.unresolvable(not_found(STORAGE_CLASS_RESOURCE, class_name))
        if storage_class.volume_binding_mode is None:
            return Status.unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        if storage_class.volume_binding_mode == storage.BINDING_WAIT_FOR_FIRST_CONSUMER:
            return SUCCESS
        return Status.unresolvable("PersistentVolume had no name")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        if not pod.pod.spec.volumes:
            return SUCCESS
        topologies: tuple[_PVTopology, ...] | None = state.get(_PRE_FILTER_KEY)
        if topologies is None:
            # Upstream recomputes when PreFilter left nothing behind.
            topologies, status = self._topologies_of(pod)
            if not status.ok:
                return status
        labels = node.labels
        if not any(key in labels for key in _TOPOLOGY_LABELS):
            return SUCCESS
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return Status.unresolvable(REASON_CONFLICT, plugin=NAME)
        return SUCCESS


def new(args: None, handle: Handle) -> VolumeZone:
    return VolumeZone(handle)


SPEC = PluginSpec(NAME, VolumeZone, new, None)
