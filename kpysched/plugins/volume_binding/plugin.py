"""The VolumeBinding plugin's extension points (upstream's volume_binding.go)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import structlog

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Registration,
    Resource,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    PreBindPreFlightPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    RowsScorePlugin,
    VectorFilterPlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError, parse_quantity
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins._shared.shape_score import scaled_shape
from kpysched.plugins._shared.storage_epoch import storage_epoch
from kpysched.plugins.volume_binding import hints
from kpysched.plugins.volume_binding.args import (
    FEATURES_CONTEXT_KEY,
    STORAGE_CAPACITY_SCORING,
    STORAGE_CAPACITY_SCORING_GATE,
    VolumeBindingArgs,
    shape_errors,
)
from kpysched.plugins.volume_binding.assume_cache import NotFoundError
from kpysched.plugins.volume_binding.binder import (
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from kpysched.plugins.volume_binding.csi_migration import MigratedPlugins
from kpysched.plugins.volume_binding.prebind import VolumeWriter
from kpysched.plugins.volume_binding.pv_matching import (
    CLAIM_LOST,
    ephemeral_owner_error,
    pod_claim_name,
    requested_storage,
    volume_capacity,
)
from kpysched.plugins.volume_binding.scorer import (
    StorageResource,
    VolumeCapacityScorer,
    build_scorer,
)

log = structlog.get_logger(__name__)

NAME = "VolumeBinding"
STATE_KEY = NAME

REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# What upstream's CycleState.Read answers for a key nobody wrote.
STATE_NOT_FOUND = "not found"

_ADD_UPDATE = ActionType.ADD | ActionType.UPDATE
_EVENTS: tuple[Registration, ...] = (
    # A new class, or new allowedTopologies, may let claims be provisioned.
    ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, _ADD_UPDATE),
                         hints.after_storage_class_change),
    # The pod's own claims appearing or being bound.
    ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, _ADD_UPDATE),
                         hints.after_claim_change),
    ClusterEvent(Resource.PERSISTENT_VOLUME, _ADD_UPDATE),
    # Node labels decide PV node affinity and allowed topologies.
    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    # CSINodes say which in-tree volumes are migrated to CSI.
    ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, _ADD_UPDATE),
                         hints.after_csi_node_change),
    # Capacity tracking switched off, or more capacity reported.
    ClusterEventWithHint(ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE),
                         hints.after_csi_driver_change),
    ClusterEventWithHint(ClusterEvent(Resource.CSI_STORAGE_CAPACITY, _ADD_UPDATE),
                         hints.after_capacity_change),
)


@dataclass(slots=True)
class _State:
    """One cycle's volume decisions. Filter adds each feasible node's choice, Reserve
    records whether anything is left to bind: mutable, as upstream's stateData."""

    claims: PodVolumeClaims | None = None
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False
    # Set by the vector Filter when every node passes needing nothing bound: a node's
    # PodVolumes (empty, as Filter would have made it) is then made on first use.
    every_node_empty: bool = False

    def volumes_on(self, node_name: str) -> PodVolumes | None:
        found = self.pod_volumes_by_node.get(node_name)
        if found is None and self.every_node_empty:
            found = self.pod_volumes_by_node[node_name] = PodVolumes()
        return found


class VolumeBinding(PreFilterPlugin, VectorFilterPlugin, PreScorePlugin, RowsScorePlugin,
                    ReservePlugin, PreBindPreFlightPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: VolumeBindingArgs, handle: Handle, *,
                 storage_capacity_scoring: bool = STORAGE_CAPACITY_SCORING) -> None:
        self._handle = handle
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)
        self._bind_timeout = float(args.bind_timeout_seconds)
        self._capacity_scoring = storage_capacity_scoring
        self._scorer: VolumeCapacityScorer | None = None
        if storage_capacity_scoring:
            self._scorer = build_scorer(scaled_shape(
                [(point.utilization, point.score) for point in args.scoring_shape()]))
        self.binder = VolumeBinder(handle.storage)
        self._migrated = MigratedPlugins(handle.storage.csi_nodes, storage_epoch(handle.storage))

    def events_to_register(self) -> Sequence[Registration]:
        return _EVENTS

    # ---- PreFilter / Filter ------------------------------------------------------

    def _claims_problem(self, pod: api.Pod) -> tuple[bool, str | None]:
        """Whether the pod uses claims at all, and why they rule every node out."""
        has_claims = False
        claims = self._handle.storage.persistent_volume_claims
        for volume in pod.spec.volumes:
            named = pod_claim_name(pod, volume)
            if named is None:
                continue
            has_claims = True
            name, ephemeral = named
            claim = claims.get(f"{pod.metadata.namespace}/{name}")
            if claim is None:
                if ephemeral:
                    # Normal right after the pod is created: say what is awaited.
                    return True, ("waiting for ephemeral volume controller to create the "
                                  f'persistentvolumeclaim "{name}"')
                return True, f'persistentvolumeclaim "{name}" not found'
            if claim.status.phase == CLAIM_LOST:
                return True, (f'persistentvolumeclaim "{claim.metadata.name}" bound to '
                              f'non-existent persistentvolume "{claim.spec.volume_name}"')
            if claim.metadata.deletion_timestamp is not None:
                return True, f'persistentvolumeclaim "{claim.metadata.name}" is being deleted'
            if ephemeral and (problem := ephemeral_owner_error(pod, claim)) is not None:
                return True, problem
        return has_claims, None

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        has_claims, problem = self._claims_problem(pod.pod)
        if problem is not None:
            return None, Status.unresolvable(problem)
        if not has_claims:
            state.write(STATE_KEY, _State())
            return None, Status.skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod.pod)
        except BinderError as error:
            return None, Status.error(str(error))
        if claims.unbound_immediate:
            # The PV controller binds these; the pod waits for its claim update event.
            return None, Status.unresolvable(REASON_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims=claims))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.claims is None:
            return Status.error(STATE_NOT_FOUND)
        try:
            found, reasons = self.binder.find_pod_volumes(pod.pod, data.claims, node.name,
                                                          node.labels)
        except BinderError as error:
            self._stage_failed("predicate")
            return Status.error(str(error))
        if reasons:
            return Status.unresolvable(*reasons)
        data.pod_volumes_by_node[node.name] = found
        data.has_static_bindings = data.has_static_bindings or bool(found.static_bindings)
        return SUCCESS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        """Every node passes alike when all the pod's claims are bound to PVs without
        node affinity that no node translates to CSI: Filter would find nothing to bind
        anywhere. None (node by node) otherwise."""
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.claims is None:
            return None
        claims = data.claims
        if claims.unbound_delay_binding or claims.unbound_immediate:
            return None
        for claim in claims.bound:
            try:
                volume = self.binder.pv_cache.get(claim.spec.volume_name)
            except NotFoundError:
                return None
            if volume.spec.node_affinity is not None or self._migrated.may_translate(volume):
                return None
        data.every_node_empty = True
        return np.ones(len(snapshot), dtype=np.bool_)

    # ---- PreScore / Score --------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        if self._scorer is None:
            return Status.skip()
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return Status.error(STATE_NOT_FOUND)
        if data.has_static_bindings or self._capacity_scoring:
            return SUCCESS
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        if self._scorer is None:
            return 0, SUCCESS
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return 0, Status.error(STATE_NOT_FOUND)
        found = data.pod_volumes_by_node.get(node.name)
        if found is None:
            return 0, SUCCESS
        return self._scorer(self._class_resources(found)), SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None:
        return self.score_rows(state, pod, snapshot,
                               np.arange(len(snapshot), dtype=np.int64))

    def score_rows(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """Zeros when nothing is to be bound on any node (the vector Filter passed them
        all, or each node's PodVolumes is empty): no class to score. Else node by node."""
        data = state.get(STATE_KEY)
        if self._scorer is None or not isinstance(data, _State):
            return None
        if any(found.static_bindings or found.dynamic_provisions
               for found in data.pod_volumes_by_node.values()):
            return None
        return np.zeros(len(rows), dtype=np.int64)

    def _class_resources(self, found: PodVolumes) -> dict[str, StorageResource]:
        by_class: dict[str, StorageResource] = {}
        if found.static_bindings or not self._capacity_scoring:
            for binding in found.static_bindings:
                total = by_class.setdefault(binding.pv.spec.storage_class_name,
                                            StorageResource())
                total.requested += requested_storage(binding.pvc).units()
                total.capacity += volume_capacity(binding.pv).units()
            return by_class
        for provision in found.dynamic_provisions:
            capacity = provision.node_capacity
            if capacity is None:
                continue
            total = by_class.setdefault(provision.pvc.spec.storage_class_name or "",
                                        StorageResource())
            # Claims of one class share the node's capacity: set it, never add it up.
            total.capacity = _capacity_units(capacity)
            total.requested += requested_storage(provision.pvc).units()
        return by_class

    # ---- Reserve / Unreserve -----------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return Status.error(STATE_NOT_FOUND)
        found = data.volumes_on(node_name)
        if found is None:
            data.all_bound = True  # the pod has no claims
            return SUCCESS
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, found)
        except BinderError as error:
            self._stage_failed("assume")
            return Status.error(str(error))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return
        found = data.volumes_on(node_name)
        if found is not None:
            self.binder.revert_assumed_pod_volumes(found)

    # ---- PreBind -----------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Upstream's PreBindPreFlight: Skip when PreBind has nothing to do (the
        scheduler then does not announce the node as nominatedNodeName first)."""
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return Status.error(STATE_NOT_FOUND)
        if data.all_bound:
            return Status.skip()
        if data.volumes_on(node_name) is None:
            return Status.error(_no_pod_volumes(node_name))
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return Status.error(STATE_NOT_FOUND)
        if data.all_bound:
            return SUCCESS
        found = data.volumes_on(node_name)
        if found is None:
            return Status.error(_no_pod_volumes(node_name))
        writer = VolumeWriter(self.binder, self._handle.client, self._node, self._bind_timeout,
                              self._pod_gone_error(pod))
        try:
            await writer.bind_pod_volumes(node_name, found)
        except BinderError as error:
            self._stage_failed("bind")
            log.info("volumes.bind_failed", pod=pod.key, node=node_name, reason=str(error))
            return Status.error(str(error))
        log.debug("volumes.bound", pod=pod.key, node=node_name)
        return SUCCESS

    def _stage_failed(self, stage: str) -> None:
        metrics = self._handle.metrics
        if metrics is not None:
            metrics.volume_scheduling_stage_failed(stage)

    def _pod_gone_error(self, pod: PodInfo) -> Callable[[], str | None]:
        """What the wait asks each time it looks: upstream's binder stops waiting once
        the pod lister no longer has the pod (deleted while its volumes bind)."""
        meta = pod.pod.metadata

        def gone() -> str | None:
            lister = self._handle.pod_lister
            if lister is None or lister.get(meta.namespace, meta.name, meta.uid) is not None:
                return None
            return f'pod does not exist any more: pod "{meta.name}" not found'
        return gone

    def _node(self, name: str) -> api.Node | None:
        info = self._handle.snapshot.get(name)
        return info.node if info is not None else None


def _no_pod_volumes(node_name: str) -> str:
    return f'no pod volume found for node "{node_name}"'


def _capacity_units(capacity: storage.CSIStorageCapacity) -> int:
    if capacity.capacity is None:
        return 0
    try:
        return parse_quantity(capacity.capacity).units()
    except QuantityError:
        return 0


def new(args: VolumeBindingArgs | None, handle: Handle) -> VolumeBinding:
    scoring = handle.features.enabled(STORAGE_CAPACITY_SCORING_GATE)
    if args is None:
        args = VolumeBindingArgs.model_validate(
            {}, context={FEATURES_CONTEXT_KEY: handle.features})
    elif args.shape and not scoring:
        # Args validated without the release's gates must still not score silently.
        raise ValueError(shape_errors(args.shape, storage_capacity_scoring=False)[0])
    return VolumeBinding(args, handle, storage_capacity_scoring=scoring)


SPEC = PluginSpec(NAME, VolumeBinding, new, VolumeBindingArgs)
