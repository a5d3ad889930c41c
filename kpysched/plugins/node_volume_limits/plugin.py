"""NodeVolumeLimits (upstream's CSILimits): a node takes no more volumes of a CSI driver
than its CSINode's allocatable count for that driver.

A volume counts once per node under "<driver>/<volume handle>": a claim's bound PV
gives both (an in-tree PV through CSI migration), a claim not bound yet counts under
its StorageClass's provisioner with a handle of its own, a generic ephemeral volume is
the claim "<pod>-<volume>" the pod must own, and a migratable inline volume is
translated like a PV. The node's load is the unique volumes of its pods plus those
its VolumeAttachments hold for PVs no pod there uses. With the VolumeLimitScaling gate
(alpha and off in v1.36, beta and on in v1.37) a driver whose CSIDriver sets
preventPodSchedulingIfMissing must also be listed in the node's CSINode. Queueing hints
(hints.py) retry a rejected pod on a new CSINode, a raised limit, a freed volume or
its own claim appearing.
"""

from __future__ import annotations

import secrets
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    StorageListers,
    VectorFilterPlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins._shared.storage_epoch import storage_epoch
from kpysched.plugins._shared.volume_helpers import PVC_RESOURCE, claim_class, namespaced, not_found
from kpysched.plugins.node_volume_limits import hints, translation
from kpysched.plugins.node_volume_limits.node_table import NodeTable, NodeVolumes

NAME = "NodeVolumeLimits"

REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
# With VolumeLimitScaling on, "<driver> CSI driver is not installed on the node".
REASON_DRIVER_NOT_INSTALLED = "{} CSI driver is not installed on the node"
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"

_PRE_FILTER_KEY = "PreFilter" + NAME

# Upstream's registrations with queueing hints (GA in v1.36). No Node event: a node's
# limits live in its CSINode, and any new CSINode may help (no hint).
_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD)),
    ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE),
                         hints.after_csi_node_updated),
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE),
                         hints.after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                         hints.after_claim_added),
    ClusterEventWithHint(ClusterEvent(Resource.VOLUME_ATTACHMENT, ActionType.DELETE),
                         hints.after_volume_attachment_deleted),
)

# Unique volume name ("<driver>/<handle>") -> driver.
Volumes = dict[str, str]
BoolArray = npt.NDArray[np.bool_]


def _limits(csi_node: storage.CSINode | None) -> dict[str, int]:
    """Driver -> allocatable count; a driver without one has no limit."""
    if csi_node is None:
        return {}
    return {driver.name: driver.allocatable.count for driver in csi_node.spec.drivers
            if driver.allocatable is not None and driver.allocatable.count is not None}


def _owned_by(claim: storage.PersistentVolumeClaim, pod: api.Pod) -> bool:
    """component-helpers' VolumeIsForPod: same namespace, and the pod is the controller."""
    controller = next((ref for ref in claim.metadata.owner_references if ref.controller),
                      None)
    return (claim.metadata.namespace == pod.metadata.namespace and controller is not None
            and controller.uid == pod.metadata.uid)


class NodeVolumeLimits(PreFilterPlugin, VectorFilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._storage: StorageListers = handle.storage
        self._driver_must_be_installed = handle.features.enabled(VOLUME_LIMIT_SCALING)
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)
        # Unbound claims count under "<prefix>-<ns>/<claim>": the random prefix keeps
        # them apart from real volume handles, and one claim shared by two pods the same.
        alphabet = string.ascii_lowercase + string.digits
        self._unbound_prefix = "".join(secrets.choice(alphabet) for _ in range(32))
        # Kept across cycles while no storage object changes (see node_table.py).
        self._epoch = storage_epoch(handle.storage)
        self._table = NodeTable(self._node_volumes)
        self._attachments: tuple[int, dict[str, Volumes]] | None = None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        if not any(hints.counts_here(volume) for volume in pod.pod.spec.volumes):
            return None, Status.skip()
        # Every Filter call may need its node's VolumeAttachments; index them once.
        state.write(_PRE_FILTER_KEY, self._attachments_now())
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        if not pod.pod.spec.volumes:
            return SUCCESS
        csi_node = self._storage.csi_nodes.get(node.name)
        new_volumes: Volumes = {}
        rejected = self._collect(pod.pod, csi_node, new_volumes, new_pod=True)
        if rejected is not None:
            return rejected
        if not new_volumes:
            return SUCCESS
        if self._driver_must_be_installed:
            missing = next((driver for driver in new_volumes.values()
                            if not self._driver_installed(driver, csi_node)), None)
            if missing is not None:
                return Status.unschedulable(REASON_DRIVER_NOT_INSTALLED.format(missing),
                                            plugin=NAME)
        limits = _limits(csi_node)
        if not limits:
            return SUCCESS
        attached: Volumes = {}
        rejected = self._collect_node(node, csi_node, attached)
        if rejected is not None:
            return rejected
        in_use: Counter[str] = Counter()
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # a volume shared with a pod there is no new one
            in_use[driver] += 1
        attachments: Mapping[str, Volumes] | None = state.get(_PRE_FILTER_KEY)
        if attachments is None:
            attachments = self._attachments_by_node()
        for unique, driver in attachments.get(node.name, {}).items():
            if unique not in attached:
                in_use[driver] += 1
        wanted = Counter(new_volumes.values())
        for driver, count in wanted.items():
            limit = limits.get(driver)
            if limit is not None and in_use[driver] + count > limit:
                return Status.unschedulable(REASON_MAX_VOLUME_COUNT_EXCEEDED, plugin=NAME)
        return SUCCESS

    def _collect_node(self, node: NodeInfo, csi_node: storage.CSINode | None,
                      into: Volumes) -> Status | None:
        """The volumes the node's pods use, into `into`; the Filter's answer when they
        cannot be counted."""
        for other in node.pods.values():
            rejected = self._collect(other.pod, csi_node, into, new_pod=False)
            if rejected is not None:
                return rejected
        return None

    # ---- the vector form -------------------------------------------------------------

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> BoolArray | None:
        """Filter for every row at once, from the rows' NodeVolumes kept across cycles.
        None (the per-node form decides) when some node would answer an Error, or the
        storage objects cannot be followed."""
        if not self._epoch.watching or not pod.pod.spec.volumes:
            return None
        table = self._table
        table.refresh(snapshot, self._epoch.value)
        has_csi = table.has_csi_node
        mask = np.zeros(len(snapshot), dtype=np.bool_)
        if not has_csi.all():
            verdict = self._pod_verdict_without_csi_node(pod)
            if verdict is None:
                return None
            mask[~has_csi] = verdict
        if has_csi.any():
            with_csi = self._mask_with_csi_node(pod, table)
            if with_csi is None:
                return None
            mask[has_csi] = with_csi[has_csi]
        return mask

    def _pod_volumes(self, pod: PodInfo, csi_node: storage.CSINode | None
                     ) -> tuple[Volumes, Status | None]:
        """The pod's own countable volumes on a node with (any) or without a CSINode:
        they depend on the node only through whether it has one."""
        volumes: Volumes = {}
        return volumes, self._collect(pod.pod, csi_node, volumes, new_pod=True)

    def _pod_verdict_without_csi_node(self, pod: PodInfo) -> bool | None:
        """The Filter's verdict on every node without a CSINode (no limits there)."""
        volumes, rejected = self._pod_volumes(pod, None)
        if rejected is not None:
            return None if rejected.code == Code.ERROR else False
        if self._driver_must_be_installed:
            return all(self._driver_installed(driver, None) for driver in volumes.values())
        return True

    def _mask_with_csi_node(self, pod: PodInfo, table: NodeTable) -> BoolArray | None:
        """The Filter's verdict on the rows with a CSINode (other rows: anything)."""
        some_row = int(np.flatnonzero(table.has_csi_node)[0])
        volumes, rejected = self._pod_volumes(pod, table.rows[some_row].csi_node)
        size = len(table.rows)
        if rejected is not None:
            return None if rejected.code == Code.ERROR else np.zeros(size, dtype=np.bool_)
        if not volumes:
            return np.ones(size, dtype=np.bool_)
        installed = np.ones(size, dtype=np.bool_)
        if self._driver_must_be_installed:
            for driver in volumes.values():
                csi_driver = self._storage.csi_drivers.get(driver)
                if csi_driver is not None and csi_driver.spec.prevent_pod_scheduling_if_missing:
                    installed &= table.driver(driver).listed
        # Past the driver check a node with limits counts its pods' volumes: one of
        # them that cannot be counted is an Error there, which only the per-node form says.
        if (installed & table.limited & table.errors).any():
            return None
        passed = installed.copy()
        for driver, count in Counter(volumes.values()).items():
            columns = table.driver(driver)
            passed &= (columns.limit < 0) | (columns.in_use + count <= columns.limit)
        # A volume the node's pods already use is no new one there: those rows again.
        for row in set().union(*(table.pod_holders.get(unique, ()) for unique in volumes)):
            passed[row] = bool(installed[row]) and self._fits_with_shared(volumes,
                                                                          table.rows[row])
        return passed

    @staticmethod
    def _fits_with_shared(volumes: Volumes, entry: NodeVolumes) -> bool:
        wanted = Counter(driver for unique, driver in volumes.items()
                         if unique not in entry.attached)
        for driver, count in wanted.items():
            limit = entry.limits.get(driver)
            if limit is not None and entry.in_use[driver] + count > limit:
                return False
        return True

    def _node_volumes(self, node: NodeInfo) -> NodeVolumes:
        """A NodeTable row: the node's CSINode, limits and volumes in use."""
        csi_node = self._storage.csi_nodes.get(node.name)
        limits = _limits(csi_node)
        entry = NodeVolumes(csi_node, limits)
        if not limits:
            return entry  # the Filter never counts what is in use here
        attached: Volumes = {}
        if self._collect_node(node, csi_node, attached) is not None:
            entry.error = True
            return entry
        entry.attached = attached
        entry.in_use.update(attached.values())
        for unique, driver in self._attachments_now().get(node.name, {}).items():
            if unique not in attached:
                entry.in_use[driver] += 1
        return entry

    def _attachments_now(self) -> dict[str, Volumes]:
        """_attachments_by_node, kept while no storage object changes."""
        if not self._epoch.watching:
            return self._attachments_by_node()
        kept = self._attachments
        if kept is None or kept[0] != self._epoch.value:
            kept = (self._epoch.value, self._attachments_by_node())
            self._attachments = kept
        return kept[1]

    def _driver_installed(self, driver: str, csi_node: storage.CSINode | None) -> bool:
        """Whether the node may take `driver`'s volumes: yes unless its CSIDriver opts
        in to preventPodSchedulingIfMissing (an unknown driver may not be CSI at all)
        and the node's CSINode does not list it."""
        csi_driver = self._storage.csi_drivers.get(driver)
        if csi_driver is None or not csi_driver.spec.prevent_pod_scheduling_if_missing:
            return True
        return csi_node is not None and any(listed.name == driver
                                            for listed in csi_node.spec.drivers)

    def _collect(self, pod: api.Pod, csi_node: storage.CSINode | None, into: Volumes, *,
                 new_pod: bool) -> Status | None:
        """Add the pod's countable volumes to `into` (upstream's filterAttachableVolumes);
        the Filter's answer when they cannot be counted. A claim the pod to place lacks
        stops it; a claim of a pod already there that has gone is simply not counted."""
        namespace = pod.metadata.namespace
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is not None:
                claim_name = volume.persistent_volume_claim.claim_name
            elif volume.ephemeral is not None:
                claim_name = f"{pod.metadata.name}-{volume.name}"
            else:
                rejected = self._collect_inline(volume, csi_node, into)
                if rejected is not None:
                    return rejected
                continue
            if not claim_name:
                return Status.error("PersistentVolumeClaim had no name", NAME)
            claim = namespaced(self._storage.persistent_volume_claims, namespace, claim_name)
            if claim is None:
                if not new_pod:
                    continue
                # The pod cannot run until the claim exists.
                return Status.unresolvable(
                    f"looking up PVC {namespace}/{claim_name}: "
                    f"{not_found(PVC_RESOURCE, claim_name)}", plugin=NAME)
            if volume.ephemeral is not None and not _owned_by(claim, pod):
                return Status.error(
                    f"PVC {claim.metadata.namespace}/{claim.metadata.name} was not created for "
                    f"pod {namespace}/{pod.metadata.name} (pod is not owner)", NAME)
            driver, handle = self._csi_identity(csi_node, claim)
            if driver and handle:
                into[f"{driver}/{handle}"] = driver
        return None

    @staticmethod
    def _collect_inline(volume: api.Volume, csi_node: storage.CSINode | None,
                        into: Volumes) -> Status | None:
        plugin = translation.inline_plugin(volume)
        if plugin is None or not translation.migration_on(csi_node, plugin):
            return None
        handle, problem = translation.inline_handle(plugin, volume)
        if problem:
            return Status.error(
                f"converting volume({volume.name}) from inline to csi: {problem}", NAME)
        into[f"{plugin.csi_driver}/{handle}"] = plugin.csi_driver
        return None

    def _csi_identity(self, csi_node: storage.CSINode | None,
                      claim: storage.PersistentVolumeClaim) -> tuple[str, str]:
        """(CSI driver, volume handle) of a claim; empty when it does not count."""
        pv_name = claim.spec.volume_name
        pv = self._storage.persistent_volumes.get(pv_name) if pv_name else None
        if pv is None:
            # Not bound yet, or bound to a PV that is gone or not created yet.
            return self._identity_from_class(csi_node, claim)
        if pv.spec.csi is not None:
            return pv.spec.csi.driver, pv.spec.csi.volume_handle
        plugin = translation.pv_plugin(pv)
        if plugin is None or not translation.migration_on(csi_node, plugin):
            return "", ""
        handle, problem = translation.pv_handle(plugin, pv)
        if problem:
            return "", ""
        return plugin.csi_driver, handle

    def _identity_from_class(self, csi_node: storage.CSINode | None,
                             claim: storage.PersistentVolumeClaim) -> tuple[str, str]:
        # Without a (known) class the claim binds immediately, so it is bound before
        # any pod using it is scheduled: nothing to count yet.
        class_name = claim_class(claim)
        storage_class = self._storage.storage_classes.get(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        handle = f"{self._unbound_prefix}-{claim.metadata.namespace}/{claim.metadata.name}"
        plugin = translation.plugin_named(storage_class.provisioner)
        if plugin is None:
            return storage_class.provisioner, handle
        if not translation.migration_on(csi_node, plugin):
            return "", ""
        return plugin.csi_driver, handle

    def _attachments_by_node(self) -> dict[str, Volumes]:
        """Node -> the CSI volumes its VolumeAttachments hold, by unique name; an
        attachment without attacher, without a PV, or of a non-CSI PV is skipped."""
        by_node: dict[str, Volumes] = {}
        pvs = self._storage.persistent_volumes
        for attachment in self._storage.volume_attachments.values():
            spec = attachment.spec
            pv_name = spec.source.persistent_volume_name
            if not spec.attacher or pv_name is None:
                continue
            pv = pvs.get(pv_name)
            if pv is None or pv.spec.csi is None:
                continue
            volumes = by_node.setdefault(spec.node_name, {})
            volumes[f"{spec.attacher}/{pv.spec.csi.volume_handle}"] = spec.attacher
        return by_node


def new(args: None, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits(handle)


SPEC = PluginSpec(NAME, NodeVolumeLimits, new, None)
