"""DynamicResources' extension points, as upstream's plugin has them in v1.36 and v1.37
(handle.features.release picks; v1.37's differences are named where they are made).

- PreEnqueue holds a pod whose claims do not exist yet (or are being deleted).
- PreFilter gathers the pod's claims, checks their device classes, and sets up one
  allocator for the cycle over the devices nobody holds.
- Filter: an allocated claim's node selector must match the node; the claims still
  to allocate must all fit on the node's devices (the allocation is kept for Reserve).
- PostFilter frees one allocated claim that kept the pod off every node, when no
  other pod uses it ("deallocation of ResourceClaim completed"), and waits for that
  write as upstream does: its failure is PostFilter's Error. Freeing nothing, v1.36
  says why; v1.37 gives no reason (none reaches the FailedScheduling text).
- Score prefers nodes where prioritized lists (firstAvailable) got earlier choices.
- Reserve records the chosen allocations as in flight, so the next cycle does not
  hand the same devices out again; Unreserve undoes that.
- PreBind writes each allocation and the pod's reservation to its claim (after the
  deletion-protection finalizer), updating the claim as read (claim_writes.py), then
  waits for any binding conditions (BindingConditionsPending event).

With v1.37's DRAWorkloadResourceClaims on, a claim the pod's PodGroup lists in
spec.resourceClaims is reserved for the PodGroup instead of the pod, a reservation
for the PodGroup counts as the pod's own, a claim made from a template may belong to
the PodGroup (group_claims.py), and PodGroupPostFilter may free the group's claims
(group_cleanup.py).

The texts of every status are upstream's, because they end up in the pod's events.
Most rejections are UnschedulableAndUnresolvable there (statusUnschedulable), which
also keeps preemption from trying nodes that device allocation rejected.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
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
    NodeScore,
    ObservedLister,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScoreExtensions,
    VectorFilterPlugin,
    VectorNormalizePlugin,
    VectorScorePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime.loop_thread import LoopThread
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.labels import node_selector_matches
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins._shared.go_math import default_normalize_score, default_normalize_vector
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins.dynamic_resources import claims as pod_claims_mod
from kpysched.plugins.dynamic_resources import extended_resources as er
from kpysched.plugins.dynamic_resources import hints
from kpysched.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    Features,
)
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs, parse_args
from kpysched.plugins.dynamic_resources.binding_conditions import (
    claim_binding_timed_out,
    claim_ready_for_binding,
    has_binding_conditions,
)
from kpysched.plugins.dynamic_resources.cel_lazy import LazyCelCache
from kpysched.plugins.dynamic_resources.claim_writes import FINALIZER, ClaimWriteError, ClaimWriter
from kpysched.plugins.dynamic_resources.claims import ClaimUnavailableError
from kpysched.plugins.dynamic_resources.device_counts import DeviceCounts, plain_claims
from kpysched.plugins.dynamic_resources.group_claims import claim_bindings
from kpysched.plugins.dynamic_resources.group_cleanup import free_group_claims
from kpysched.plugins.dynamic_resources.pools import SliceCatalog
from kpysched.plugins.dynamic_resources.taint_rules import slices_with_taint_rules
from kpysched.plugins.dynamic_resources.tracker import tracker_for

log = structlog.get_logger(__name__)

NAME = "DynamicResources"
# v1.37 (beta, off; needs GenericWorkload): claims shared by a PodGroup's members.
WORKLOAD_CLAIMS_GATE = "DRAWorkloadResourceClaims"
_STATE_KEY = "PreFilter" + NAME
# CycleState's "no such key" error text, which upstream's PostFilter returns as an
# Error when its PreFilter never ran (an earlier PreFilter plugin rejected the pod);
# it then ends every FailedScheduling message of such a pod.
STATE_NOT_FOUND = "not found"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
DEALLOCATED = "deallocation of ResourceClaim completed"
EXTENDED_CLAIM_DELETED = "deletion of ResourceClaim completed"
STILL_NOT_SCHEDULABLE = "still not schedulable"
# v1.37's PodGroupPostFilter answer, whatever it freed.
POD_GROUP_CLAIMS_CLEANED_UP = "deallocation and deletion of ResourceClaims completed"
# The event PreBind records before it waits for devices' binding conditions.
BINDING_CONDITIONS_PENDING = "BindingConditionsPending"
# Connections of PostFilter's own for the writes it waits for.
POST_FILTER_LANE = "dra-postfilter"
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
CANNOT_ALLOCATE_ALL = "cannot allocate all claims"
# resourceapi.FirstAvailableDeviceRequestMaxSize: a subrequest at index i scores 8 - i.
FIRST_AVAILABLE_MAX_SIZE = 8
# Upstream's CEL cache keeps the 10 most recently used selectors across cycles.
CEL_CACHE_SIZE = 10


def _kobj(claim: resource.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _group_pending(state: CycleState) -> set[str] | None:
    """In a pod-group scheduling cycle, the UIDs of the claims whose allocations its
    members have reserved so far (upstream's podGroupStateData.pendingAllocations);
    None outside one. Only members of one such cycle share an in-flight allocation."""
    if state.pod_group is None:
        return None
    pending: set[str] = state.pod_group.cycle_data.setdefault(_STATE_KEY, set())
    return pending


@dataclass
class _ClaimInfo:
    # Set for an allocated claim with a node selector: the nodes it can be used on.
    available_on: api.NodeSelector | None = None
    # Set by Reserve (or found in flight for a claim shared in this cycle).
    allocation: resource.AllocationResult | None = None


@dataclass
class _State:
    claims: list[resource.ResourceClaim] = field(default_factory=list)
    # Whom PreBind reserves each claim for (DRAWorkloadResourceClaims; empty without
    # it): indexed like `claims`, the pod where there is no entry (see binding()).
    bindings: list[resource.ResourceClaimConsumerReference] = field(default_factory=list)
    infos: list[_ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    # Indices of allocated claims that some node could not use (for PostFilter).
    unavailable: set[int] = field(default_factory=set)
    # Filter's allocations per node name, in the order of the claims to allocate; kept
    # only when Score reads them (a claim has subrequests), else Reserve allocates
    # again on the chosen node among those Filter passed.
    node_allocations: dict[str, list[resource.AllocationResult]] = field(default_factory=dict)
    scores_subrequests: bool = False
    nodes_to_allocate_again: dict[str, api.Node] = field(default_factory=dict)
    # The snapshot the vector Filter judged (device_counts.py): Reserve allocates again
    # on the chosen node as it would after the per-node Filter.
    vector_snapshot: Snapshot | None = None
    # DRAExtendedResource: the claim for extended resources DeviceClasses back, last in
    # `claims` (in memory until PreBind creates it, or made by an earlier attempt), the
    # pod's scalar requests, and per node the claim's requests there and the
    # container mappings PreBind records in the pod's status.
    extended_index: int | None = None
    extended_initial_uid: str = ""
    pod_scalars: dict[str, int] = field(default_factory=dict)
    # The DeviceClass backing each of those, as PreFilter found it: every node of the
    # cycle is judged by the same mapping, even if a DeviceClass changes while a long
    # cycle gives the loop a turn (upstream captures it in PreFilter's state too).
    extended_classes: dict[str, resource.DeviceClass | None] = field(default_factory=dict)
    node_extended: dict[str, tuple[resource.ResourceClaim | None,
                                   list[api.ContainerExtendedResourceRequest]]] = field(
        default_factory=dict)

    def to_allocate(self) -> list[int]:
        return [i for i, claim in enumerate(self.claims) if claim.status.allocation is None]

    def claims_for_node(self, node_claim: resource.ResourceClaim | None) -> tuple[
            list[resource.ResourceClaim], list[resource.AllocationResult]]:
        """The claims the allocator allocates on a node (with the node's extended
        resource claim) and the allocations Reserve already holds for the others."""
        to_allocate: list[resource.ResourceClaim] = []
        pending: list[resource.AllocationResult] = []
        for index in self.to_allocate():
            reserved = self.infos[index].allocation
            if reserved is not None:
                pending.append(reserved)
            elif index == self.extended_index and node_claim is not None:
                to_allocate.append(node_claim)
            else:
                to_allocate.append(self.claims[index])
        return to_allocate, pending

    def extended_claim(self) -> resource.ResourceClaim | None:
        return None if self.extended_index is None else self.claims[self.extended_index]

    def no_user_claim(self) -> bool:
        return len(self.claims) - (self.extended_index is not None) == 0

    def binding(self, index: int, pod: api.Pod) -> resource.ResourceClaimConsumerReference:
        """Whom claim `index` is reserved for: its entry in `bindings`, else the pod
        (the claim for extended resources, or the gate off)."""
        if index < len(self.bindings):
            return self.bindings[index]
        return pod_claims_mod.consumer_reference(pod)


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, VectorFilterPlugin, PostFilterPlugin,
                       VectorScorePlugin, ScoreExtensions, VectorNormalizePlugin,
                       ReservePlugin, PreBindPreFlightPlugin):
    NAME = NAME

    def __init__(self, handle: Handle, args: DynamicResourcesArgs) -> None:
        self._handle = handle
        self._args = args
        self._listers = handle.resources
        self._tracker = tracker_for(handle.resources.resource_claims)
        self._cel = LazyCelCache(CEL_CACHE_SIZE)
        self._release = handle.features.release
        self._features = Features(release=self._release)
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over
        # (its claims were allocated when it was first placed).
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)
        # DRAWorkloadResourceClaims: claims a PodGroup's members share.
        self._workload_claims = handle.features.enabled(WORKLOAD_CLAIMS_GATE)
        # What the allocator derives from the slices alone, kept until one changes.
        self._slice_catalog: SliceCatalog | None = None
        # Each node's devices a plain claim may take, for the vector Filter.
        self._device_counts = DeviceCounts()
        handle.resources.resource_slices.observers.append(self._forget_slice_catalog)
        # v1.37 (DRADeviceTaintRules GA): the rules' taints go onto the devices they
        # select. Read when the resource listers carry the rules' informer.
        self._taint_rules: ObservedLister[resource.DeviceTaintRule] | None = (
            handle.resources.device_taint_rules if self._release >= 37 else None)
        if self._taint_rules is not None:
            self._taint_rules.observers.append(self._forget_slice_catalog)
        self._writer = ClaimWriter(handle.client, self._tracker,
                                   deleted_is_done=self._release >= 37)
        # PostFilter's writes, made while the scheduling loop waits (_write_now).
        self._post_filter_thread: LoopThread | None = None
        self._post_filter_client: ClaimWriter | None = None
        self._background: set[asyncio.Task[None]] = set()

    def _forget_slice_catalog(self, action: ActionType, old: object, new: object) -> None:
        self._slice_catalog = None

    def _slices(self) -> SliceCatalog:
        if self._slice_catalog is None:
            slices: Sequence[resource.ResourceSlice] = list(self._listers.resource_slices.values())
            rules = list(self._taint_rules.values()) if self._taint_rules is not None else []
            if rules:
                slices = slices_with_taint_rules(slices, rules)
            self._slice_catalog = SliceCatalog(slices, self._features.partitionable_devices)
        return self._slice_catalog

    # ---- events ----------------------------------------------------------------------

    def events_to_register(self) -> Sequence[Registration]:
        return (
            # Device availability can depend on node labels (ResourceSlice node selectors).
            ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                         | ActionType.UPDATE_NODE_ALLOCATABLE),
            # v1.37 also hears a claim's deletion: an allocated one frees its devices.
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE
                             | (ActionType.DELETE if self._release >= 37
                                else ActionType(0))),
                lambda pod, old, new: hints.after_claim_change(
                    self._tracker.get, pod, old, new, self._workload_claims)),
            # The pod's own update (v1.37 names it TargetPod; a Pod registration hears it
            # in both releases).
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD if self._release >= 37 else Resource.POD,
                             ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                lambda pod, old, new: hints.after_pod_change(
                    self._tracker.get, pod, old, new, self._workload_claims)),
            ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
            ClusterEvent(Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE),
        )

    # ---- PreEnqueue ------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.pod.spec.resource_claims:
            return SUCCESS
        try:
            pod_claims_mod.pod_claims(pod.pod, self._tracker.get, self._workload_claims)
        except ClaimUnavailableError as error:
            return Status.unresolvable(str(error))
        return SUCCESS

    # ---- PreFilter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()
        # Written before any verdict, as upstream does: PostFilter tells "PreFilter ran
        # and found no claims" from "PreFilter never ran" by this key.
        data = _State()
        state.write(_STATE_KEY, data)
        try:
            claims = pod_claims_mod.pod_claims(pod.pod, self._tracker.get,
                                               self._workload_claims)
        except ClaimUnavailableError as error:
            return None, Status.unresolvable(str(error))
        extended = self._extended_claim(pod, data)
        if extended is not None:
            data.extended_index = len(claims)
            data.extended_initial_uid = extended.metadata.uid
            claims.append(extended)
        if self._workload_claims:
            # Before the no-claims Skip, as upstream: a member whose PodGroup is gone
            # from the snapshot is refused even without claims.
            try:
                data.bindings = claim_bindings(pod.pod, self._group_of(pod.pod))
            except ClaimUnavailableError as error:
                return None, Status.unresolvable(str(error))
        if not claims:
            return None, Status.skip()
        group_pending = _group_pending(state)
        infos = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, (claim, info) in enumerate(zip(claims, infos, strict=True)):
            allocation = claim.status.allocation
            if allocation is not None:
                info.available_on = allocation.node_selector
                continue
            to_allocate += 1
            pending = self._tracker.pending_allocation(claim.metadata.uid)
            if (pending is not None and group_pending is not None
                    and claim.metadata.uid in group_pending):
                # Another member of this pod-group cycle reserved it: share that
                # allocation (it still goes to the allocator's count, so that Reserve
                # and PreBind record it for this pod too). v1.37 also keeps this member
                # to the allocation's nodes, as for an allocated claim; v1.36 does not.
                info.allocation = pending
                if self._release >= 37:
                    info.available_on = pending.node_selector
                continue
            if pending is not None:
                return None, Status.unresolvable(
                    f"resource claim {_kobj(claim)} is in the process of being allocated")
            if index == data.extended_index:
                continue  # its requests are made per node, in Filter
            status = self._check_requests(claim)
            if not status.ok:
                return None, status
        data.claims, data.infos = claims, infos
        data.scores_subrequests = any(request.first_available for claim in claims
                                      for request in claim.spec.devices.requests)
        if to_allocate:
            taken = self._tracker.allocated()
            data.allocator = Allocator(
                self._features,
                AllocatedState(taken.devices, taken.shared_device_ids,
                               taken.consumed_capacity),
                self._listers.device_classes.get,
                self._slices(),
                self._cel)
        return None, SUCCESS

    def _group_of(self, pod: api.Pod) -> PodGroup | None:
        """The pod's PodGroup (upstream's getPodGroupSnapshot); None for a pod in no
        group; raises ClaimUnavailableError with upstream's text when it is unknown."""
        name = pod_claims_mod.pod_group_of(pod)
        if name is None:
            return None
        namespace = pod.metadata.namespace
        group = self._handle.pod_group(namespace, name)
        if group is None:
            raise ClaimUnavailableError(
                f"pod group object not found for pod group podgroup/{namespace}/{name}")
        return group

    def _extended_claim(self, pod: PodInfo, data: _State) -> resource.ResourceClaim | None:
        """The claim for the pod's DRA-backed extended resources: the one an earlier
        attempt created, or a new one in memory; None when DRA backs none of them."""
        resolver = self._listers.device_class_for_extended_resource
        scalars = pod.requests.scalar
        if not er.has_device_class_mapped_extended_resource(scalars, resolver):
            return None
        data.pod_scalars = dict(scalars)
        data.extended_classes = {name: resolver(name) for name in scalars}
        found = er.find_extended_resource_claim(
            pod.pod, self._listers.resource_claims.in_namespace(pod.pod.metadata.namespace))
        return found if found is not None else er.new_special_claim(pod.pod)

    def _check_requests(self, claim: resource.ResourceClaim) -> Status:
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                status = self._check_class(request.exactly.device_class_name, request.name)
            elif request.first_available:
                for sub in request.first_available:
                    status = self._check_class(
                        sub.device_class_name,
                        pod_claims_mod.sub_request_ref(request.name, sub.name))
                    if not status.ok:
                        return status
            else:
                status = Status.unresolvable(
                    f"resource claim {_kobj(claim)}, request {request.name}: "
                    "unknown request type")
            if not status.ok:
                return status
        return SUCCESS

    def _check_class(self, class_name: str, request_name: str) -> Status:
        if not class_name:
            return Status.error(f"request {request_name}: unsupported request type")
        if self._listers.device_classes.get(class_name) is None:
            # Unschedulable until a DeviceClass event: the class may still be created.
            return Status.unresolvable(
                f"request {request_name}: device class {class_name} does not exist")
        return SUCCESS

    # ---- Filter ----------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return Status.error(STATE_NOT_FOUND)
        if not data.claims:
            return SUCCESS
        node = node_info.node
        assert node is not None
        node_claim, mappings, rejection = er.filter_extended_resources(
            pod.pod, data.pod_scalars, node_info.allocatable.scalar,
            data.extended_classes.get, data.no_user_claim(), data.extended_claim())
        if rejection is not None:
            return Status.unresolvable(rejection)
        if node_claim is None and data.no_user_claim():
            return SUCCESS  # device plugins provide all of it here
        unavailable = []
        for index, claim in enumerate(data.claims):
            selector = data.infos[index].available_on
            if selector is not None and not node_selector_matches(
                    selector, node.metadata.labels, node.metadata.name):
                unavailable.append(index)
                continue
            if claim.status.allocation is None:
                continue
            ready, failure = claim_ready_for_binding(claim)
            if failure is not None or (
                    not ready and claim_binding_timed_out(
                        claim, self._args.binding_timeout_seconds)):
                unavailable.append(index)
        allocations: list[resource.AllocationResult] | None = None
        if data.allocator is not None:
            to_allocate, pending = data.claims_for_node(node_claim)
            deadline = (time.monotonic() + self._args.filter_timeout_seconds
                        if self._args.filter_timeout_seconds > 0 else None)
            try:
                if data.scores_subrequests:
                    results = data.allocator.allocate(node, to_allocate, deadline=deadline)
                    if results is not None and len(results) == len(to_allocate):
                        allocations = [*results, *pending]
                elif data.allocator.fits(node, to_allocate, deadline=deadline):
                    # Only Reserve needs the results, for one node: it makes them again
                    # (the same: the allocator is deterministic) rather than every
                    # feasible node keeping its own until the cycle ends.
                    allocations = []
            except TimeoutError:
                # Potentially transient: an Error sends the pod to backoff, not to wait
                # for a cluster event.
                return Status.error(
                    f"node {node.metadata.name}: timed out trying to allocate devices")
            except AllocationError as error:
                if error.on_node:
                    return Status.unresolvable(str(error))
                return Status.error(str(error))
            if allocations is None:
                return Status.unresolvable(CANNOT_ALLOCATE_ALL)
        if unavailable:
            data.unavailable.update(unavailable)
            return Status.unresolvable(NOT_AVAILABLE_ON_NODE)
        if data.allocator is not None:
            if data.scores_subrequests:
                data.node_allocations[node.metadata.name] = allocations or []
            else:
                data.nodes_to_allocate_again[node.metadata.name] = node
            if node_claim is not None or mappings:
                data.node_extended[node.metadata.name] = (node_claim, mappings)
        return SUCCESS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        """Filter on every row at once for plain claims (device_counts.py): a node
        passes when it has as many free eligible devices as the claims ask for. None
        (node by node) for any other claims, in a pod-group cycle, or when consumed
        capacity is taken somewhere."""
        data: _State | None = state.get(_STATE_KEY)
        if (data is None or not data.claims or data.allocator is None
                or data.extended_index is not None or data.scores_subrequests
                or state.pod_group is not None
                or any(info.allocation is not None for info in data.infos)):
            return None
        plain = plain_claims(data.claims)
        if plain is None or data.allocator.allocated_state.aggregated_capacity:
            return None
        free = self._device_counts.free(data.allocator, data.claims, plain, snapshot)
        if free is None:
            return None
        data.vector_snapshot = snapshot
        return free >= plain.needed

    # ---- PostFilter ------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: dict[str, Status]) -> tuple[PostFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.unschedulable()  # no claim of its own to free
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return None, Status.error(STATE_NOT_FOUND)
        if not data.claims:
            return None, self._nothing_freed(NO_CLAIMS_TO_DEALLOCATE)
        _, status = self._free_one_claim(data, pod)
        return None, status

    def _free_one_claim(self, data: _State, pod: PodInfo) -> tuple[bool, Status]:
        """Upstream's deallocateOrDeletePodClaims: free one claim that kept the pod off
        some node and that no other pod uses, or delete a claim for extended resources
        left by an earlier attempt. (Whether it wrote, PostFilter's status.)"""
        extended = data.extended_claim()
        stale_extended = extended is not None and not er.is_special_claim_name(
            extended.metadata.name)
        # Upstream picks one at random (map order); the lowest index is as good a pick.
        for index in sorted(data.unavailable):
            if index == data.extended_index:
                if stale_extended:
                    break
                continue
            claim = data.claims[index]
            reserved = claim.status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                failure = self._write_now(self._post_filter_writer().deallocate(claim))
                return True, failure or Status.unschedulable(DEALLOCATED)
        if extended is not None and stale_extended:
            # Made by an earlier attempt that did not bind: start afresh.
            failure = self._write_now(self._post_filter_writer().delete(extended))
            return True, failure or Status.unschedulable(EXTENDED_CLAIM_DELETED)
        return False, self._nothing_freed(STILL_NOT_SCHEDULABLE)

    def pod_group_post_filter(self, members: Sequence[tuple[PodInfo, CycleState]]) -> Status:
        """v1.37's PodGroupPostFilter for a group that did not fit: each member tried in
        the cycle frees what its own PostFilter would (one claim each at most), an
        Error ends it. With DRAWorkloadResourceClaims on, when some member freed
        nothing, the group's own claims may be freed too (group_cleanup.py), whose
        answer is then the group's. Otherwise it answers Unschedulable, whatever it
        freed."""
        tried: list[_State] = []
        freed_nothing = False
        for pod, state in members:
            data: _State | None = state.get(_STATE_KEY)
            if data is None:
                continue  # not tried in this cycle: nothing of its own is known
            tried.append(data)
            freed, status = self._free_one_claim(data, pod)
            if status.code == Code.ERROR:
                return status
            freed_nothing = freed_nothing or not freed
        if freed_nothing and self._workload_claims and members:
            group_status = self._free_group_claims(members[0][0].pod, tried)
            if group_status is not None:
                return group_status
        return Status.unschedulable(POD_GROUP_CLAIMS_CLEANED_UP)

    def _free_group_claims(self, pod: api.Pod, tried: list[_State]) -> Status | None:
        """Upstream's deallocatePodGroupClaims, for the group of `pod` (a member): only
        while none of its members is assumed or bound, since they would use the
        claims. None when it did nothing that ends the point."""
        name = pod_claims_mod.pod_group_of(pod)
        if name is None:
            return None
        namespace = pod.metadata.namespace
        # The cache's view (not the cycle's copy, whose assumptions were undone).
        if self._handle.pod_group_state(None, namespace, name).scheduled_count() > 0:
            return None
        try:
            group = self._group_of(pod)
        except ClaimUnavailableError as error:
            return Status.error(str(error))
        assert group is not None
        unavailable = [data.claims[index] for data in tried
                       for index in sorted(data.unavailable)]
        return free_group_claims(pod, group, unavailable, self._tracker.get,
                                 self._post_filter_writer(), self._write_now)

    def _nothing_freed(self, reason: str) -> Status:
        """PostFilter's answer when it freed nothing: v1.36 says why (the reason ends up
        in the pod's FailedScheduling message), v1.37 says nothing."""
        if self._release >= 37:
            return Status.unschedulable()
        return Status.unschedulable(reason)

    def _post_filter_writer(self) -> ClaimWriter:
        if self._post_filter_thread is None:
            self._post_filter_thread = LoopThread("kpysched-dra-postfilter")
            self._post_filter_client = ClaimWriter(
                self._handle.client.sibling(POST_FILTER_LANE), self._tracker,
                deleted_is_done=self._release >= 37)
        assert self._post_filter_client is not None
        return self._post_filter_client

    def _write_now(self, write: Coroutine[Any, Any, None]) -> Status | None:
        """PostFilter's write, done before PostFilter returns as upstream's is: the
        pod's verdict depends on it (an Error ends PostFilter with its text). PostFilter
        runs on the scheduling loop, which cannot await, so the write runs on a thread
        of its own (with connections of its own) while the loop waits for it."""
        assert self._post_filter_thread is not None
        try:
            self._post_filter_thread.run_blocking(write)
        except ClaimWriteError as error:
            return Status.error(str(error))
        return None

    async def _delete_logged(self, claim: resource.ResourceClaim) -> None:
        try:
            await self._writer.delete(claim)
        except ClaimWriteError as error:
            # Tried again when the pod is (upstream logs it too).
            log.warning("extended resource claim not deleted", claim=_kobj(claim),
                        error=str(error))

    def _spawn(self, work: object) -> None:
        assert asyncio.iscoroutine(work)
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- Score -----------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return 0, Status.error(STATE_NOT_FOUND)
        if not data.claims or node_info.node is None:
            return 0, SUCCESS
        allocations = data.node_allocations.get(node_info.node.metadata.name)
        if allocations is None:
            return 0, SUCCESS
        score = 0
        next_new = 0
        for claim in data.claims:
            allocation = claim.status.allocation
            if allocation is None:
                if next_new >= len(allocations):
                    return 0, Status.error(
                        f"number of allocations {len(allocations)} is smaller than number "
                        "of claims needing allocation")
                allocation = allocations[next_new]
                next_new += 1
            chosen = {result.request for result in allocation.devices.results
                      if pod_claims_mod.is_sub_request_ref(result.request)}
            for request in claim.spec.devices.requests:
                if request.exactly is not None:
                    continue
                for position, sub in enumerate(request.first_available):
                    if pod_claims_mod.sub_request_ref(request.name, sub.name) in chosen:
                        score += FIRST_AVAILABLE_MAX_SIZE - position
        return score, SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None:
        """Most pods have no claim, and most claims no subrequests: every node scores 0,
        without a Python call per node (upstream scores them one by one, to the same
        zeros)."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None or (data.claims and data.scores_subrequests):
            return None  # the per-node form reports the error or does the real work
        # Without subrequests Filter keeps no allocations to score: zeros, as `score`.
        return np.zeros(len(snapshot), dtype=np.int64)

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: list[NodeScore]) -> Status:
        default_normalize_score(scores, reverse=False)
        return SUCCESS

    def normalize_vector(self, state: CycleState, pod: PodInfo,
                         scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return default_normalize_vector(scores, reverse=False)

    # ---- Reserve / Unreserve -----------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return Status.error(STATE_NOT_FOUND)
        to_allocate = data.to_allocate()
        if not data.claims or not to_allocate or data.allocator is None:
            return SUCCESS
        allocations = data.node_allocations.get(node_name)
        node = data.nodes_to_allocate_again.get(node_name)
        if node is None and data.vector_snapshot is not None:
            # The vector Filter passed it (the per-node one would have kept the node).
            info = data.vector_snapshot.get(node_name)
            node = info.node if info is not None else None
        if allocations is None and node is not None:
            node_claim = data.node_extended.get(node_name, (None, []))[0]
            claims, held = data.claims_for_node(node_claim)
            try:
                results = data.allocator.allocate(node, claims)
            except AllocationError as error:
                return Status.error(str(error))
            if results is None:
                return Status.error("claim allocation not found for node")
            allocations = [*results, *held]
        if not allocations:
            if all(index == data.extended_index for index in to_allocate):
                return SUCCESS  # device plugins on this node provide the extended resources
            return Status.error("claim allocation not found for node")
        if len(allocations) != len(to_allocate):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, {len(to_allocate)} "
                f"claims to allocate, want {len(to_allocate)} claims")
        for index, allocation in zip(to_allocate, allocations, strict=True):
            data.infos[index].allocation = allocation
            claim = data.claims[index]
            if index == data.extended_index:
                claim = data.node_extended.get(node_name, (None, []))[0] or claim
            finalizers = claim.metadata.finalizers
            meta = msgspec.structs.replace(
                claim.metadata,
                finalizers=finalizers if FINALIZER in finalizers else [*finalizers, FINALIZER])
            pending = msgspec.structs.replace(
                claim, metadata=meta,
                status=msgspec.structs.replace(claim.status, allocation=allocation))
            if not self._allocated_meanwhile(claim):
                self._tracker.signal_pending_allocation(pending)
            group_pending = _group_pending(state)
            if group_pending is not None:
                group_pending.add(claim.metadata.uid)
        return SUCCESS

    def _allocated_meanwhile(self, claim: resource.ResourceClaim) -> bool:
        """v1.37's SignalClaimPendingAllocation: the claim (not the one for extended
        resources, which nobody shares) got an allocation since PreFilter read it, so
        none is put in flight; PreBind then finds it allocated elsewhere."""
        if self._release < 37 or er.is_special_claim_name(claim.metadata.name):
            return False
        current = self._tracker.get(_kobj(claim))
        return (current is not None and current.metadata.uid == claim.metadata.uid
                and current.status.allocation is not None)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return
        group_pending = _group_pending(state)
        for index, claim in enumerate(data.claims):
            if index == data.extended_index:
                continue
            if self._tracker.maybe_remove_pending_allocation(claim.metadata.uid):
                self._tracker.restore(_kobj(claim))
                if group_pending is not None:
                    group_pending.discard(claim.metadata.uid)
            if (claim.status.allocation is not None
                    and pod_claims_mod.is_reserved_for_pod(pod.pod, claim)):
                self._spawn(self._writer.unreserve(claim, pod.pod))
        extended = data.extended_claim()
        if extended is not None:
            if self._tracker.maybe_remove_pending_allocation(data.extended_initial_uid):
                self._tracker.restore(_kobj(extended))
            if not er.is_special_claim_name(extended.metadata.name):
                self._spawn(self._delete_logged(extended))

    # ---- PreBind ---------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind has work whenever the pod has claims (upstream's PreBindPreFlight)."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return Status.error(STATE_NOT_FOUND)
        return SUCCESS if data.claims else Status.skip()

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return Status.error(STATE_NOT_FOUND)
        if not data.claims:
            return SUCCESS
        for index, claim in enumerate(data.claims):
            if pod_claims_mod.is_reserved_for_pod(pod.pod, claim, self._workload_claims):
                continue
            allocation = data.infos[index].allocation
            extended = index == data.extended_index
            if extended and allocation is None and not claim.spec.devices.requests:
                continue  # device plugins provide the extended resources
            # Once the written claim is in the tracker, its allocation no longer needs
            # to be in flight, whoever else shares it; otherwise this pod only stops
            # sharing it (upstream's bindClaim).
            recorded = False
            try:
                if extended:
                    data.claims[index] = await self._bind_extended(
                        data, claim, allocation, pod, node_name)
                else:
                    data.claims[index] = await self._writer.bind(
                        claim, allocation, data.binding(index, pod.pod))
                    recorded = self._tracker.assume(data.claims[index])
            except ClaimWriteError as error:
                return Status.error(str(error))
            finally:
                if allocation is not None:
                    self._tracker.maybe_remove_pending_allocation(claim.metadata.uid,
                                                                  force=recorded)
        if any(has_binding_conditions(claim) for claim in data.claims):
            self._handle.record_pod_event(
                pod.pod, "Normal", BINDING_CONDITIONS_PENDING, "Scheduling",
                f"waiting for binding conditions for device on node {node_name}")
        return await self._writer.wait_for_binding_conditions(
            data.claims, self._args.binding_timeout_seconds)


    async def _bind_extended(self, data: _State, claim: resource.ResourceClaim,
                             allocation: resource.AllocationResult | None, pod: PodInfo,
                             node_name: str) -> resource.ResourceClaim:
        """Create the in-memory claim for extended resources (named by the API server),
        write its allocation like any claim's, then tell the pod which claim and
        requests serve its containers (status.extendedResourceClaimStatus)."""
        node_claim, mappings = data.node_extended.get(node_name, (None, []))
        if er.is_special_claim_name(claim.metadata.name):
            if node_claim is None:
                raise ClaimWriteError(
                    f"extended resource claim not found for node {node_name}")
            claim = await self._writer.create(er.claim_create_body(node_claim, pod.pod))
            # From now on Unreserve and PostFilter delete the real claim.
            data.claims[data.extended_index or 0] = claim
        bound = await self._writer.bind(
            claim, allocation, data.binding(data.extended_index or 0, pod.pod))
        self._tracker.assume(bound)
        if not mappings:
            meta = pod.pod.metadata
            raise ClaimWriteError(
                f"nil or empty request mappings, no update of pod {meta.namespace}/"
                f"{meta.name} ExtendedResourceClaimStatus")
        await self._writer.record_extended_claim(pod.pod, bound, mappings)
        return bound


def new(args: object, handle: Handle) -> DynamicResources:
    return DynamicResources(handle, parse_args(args))


SPEC = PluginSpec(NAME, DynamicResources, new, DynamicResourcesArgs)
