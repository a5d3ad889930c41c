"""The scheduling side of volume binding (upstream's volumeBinder, binder.go): sort a
pod's claims, find per node the static PVs or dynamic provisioning that would
satisfy them, and assume the chosen bindings in the PV and claim caches.

The API writes of PreBind and the wait for the PV controller are in prebind.py.
Failures upstream returns as errors raise BinderError here; the plugin turns them
into Error statuses with the same text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key

import msgspec

from kpysched.framework.interfaces import StorageListers
from kpysched.objects import api, storage
from kpysched.objects.labels import SelectorError, label_selector_matches
from kpysched.objects.quantity import Quantity, QuantityError, parse_quantity
from kpysched.plugins._shared.volume_helpers import claim_class
from kpysched.plugins.volume_binding.assume_cache import (
    AssumeCache,
    NotFoundError,
    OutOfSyncError,
)
from kpysched.plugins.volume_binding.csi_migration import TranslationError, as_seen_on_node
from kpysched.plugins.volume_binding.pv_matching import (
    NOT_SUPPORTED_PROVISIONER,
    MatchError,
    bind_volume_to_claim,
    claim_key,
    ephemeral_owner_error,
    find_matching_volume,
    has_storage_request,
    is_delay_binding_mode,
    node_affinity_error,
    pod_claim_name,
    requested_storage,
    topology_allows,
    volume_class,
)

# Upstream's ConflictReasons, in the order FindPodVolumes reports them.
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class BinderError(Exception):
    """Volume binding could not be decided; the text is upstream's error."""


@dataclass(slots=True)
class BindingInfo:
    """A claim and the static PV chosen for it (after Reserve: the PV as bound)."""

    pvc: storage.PersistentVolumeClaim
    pv: storage.PersistentVolume


@dataclass(slots=True)
class DynamicProvision:
    pvc: storage.PersistentVolumeClaim
    # The CSIStorageCapacity that had room for it, when capacity is tracked.
    node_capacity: storage.CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """What binding the pod's volumes on one node takes."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[storage.PersistentVolumeClaim] = field(default_factory=list)
    # WaitForFirstConsumer claims not yet bound: the scheduler picks their volume.
    unbound_delay_binding: list[storage.PersistentVolumeClaim] = field(default_factory=list)
    # Claims the PV controller should have bound already (Immediate, or pre-bound).
    unbound_immediate: list[storage.PersistentVolumeClaim] = field(default_factory=list)
    # The PVs of each class that delayed claims ask for, assumed versions included.
    unbound_volumes_delay_binding: dict[str, list[storage.PersistentVolume]] = field(
        default_factory=dict)


def is_claim_fully_bound(claim: storage.PersistentVolumeClaim) -> bool:
    return (bool(claim.spec.volume_name)
            and storage.ANNOTATION_BIND_COMPLETED in claim.metadata.annotations)


def _by_requested_size(first: storage.PersistentVolumeClaim,
                       second: storage.PersistentVolumeClaim) -> int:
    return requested_storage(first).compare(requested_storage(second))


def volume_limit(capacity: storage.CSIStorageCapacity) -> Quantity | None:
    """The largest volume a CSIStorageCapacity admits: maximumVolumeSize when given
    (it is the more precise), else the capacity; None when neither is known."""
    amount = (capacity.maximum_volume_size if capacity.maximum_volume_size is not None
              else capacity.capacity)
    if amount is None:
        return None
    try:
        return parse_quantity(amount)
    except QuantityError:
        return None


def _capacity_sufficient(capacity: storage.CSIStorageCapacity, size: int) -> bool:
    limit = volume_limit(capacity)
    return limit is not None and limit.units() >= size


def _node_has_access(capacity: storage.CSIStorageCapacity,
                     node_labels: Mapping[str, str]) -> bool:
    # No topology means the storage is reachable from no node; only labels can match.
    if capacity.node_topology is None:
        return False
    try:
        return label_selector_matches(capacity.node_topology, node_labels)
    except SelectorError:
        return False


class VolumeBinder:
    def __init__(self, listers: StorageListers) -> None:
        self.listers = listers
        self.pv_cache: AssumeCache[storage.PersistentVolume] = AssumeCache(
            listers.persistent_volumes, "persistentvolumes")
        self.pvc_cache: AssumeCache[storage.PersistentVolumeClaim] = AssumeCache(
            listers.persistent_volume_claims, "persistentvolumeclaims")

    # ---- PreFilter ---------------------------------------------------------------

    def _volume_claim(self, pod: api.Pod, volume: api.Volume
                      ) -> tuple[bool, storage.PersistentVolumeClaim | None]:
        """(fully bound, claim) for a pod volume; (True, None) when it uses no claim."""
        named = pod_claim_name(pod, volume)
        if named is None:
            return True, None
        name, ephemeral = named
        key = f"{pod.metadata.namespace}/{name}"
        try:
            claim = self.pvc_cache.get(key)
        except NotFoundError as error:
            raise BinderError(f'error getting PVC "{key}": {error}') from None
        if ephemeral and (problem := ephemeral_owner_error(pod, claim)) is not None:
            raise BinderError(problem)
        return is_claim_fully_bound(claim), claim

    def pod_volumes_bound(self, pod: api.Pod) -> bool:
        for volume in pod.spec.volumes:
            try:
                bound, _ = self._volume_claim(pod, volume)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def get_pod_volume_claims(self, pod: api.Pod) -> PodVolumeClaims:
        claims = PodVolumeClaims()
        for volume in pod.spec.volumes:
            bound, claim = self._volume_claim(pod, volume)
            if claim is None:
                continue
            if bound:
                claims.bound.append(claim)
                continue
            try:
                delayed = is_delay_binding_mode(claim, self.listers.storage_classes)
            except ValueError as error:
                raise BinderError(str(error)) from None
            if delayed and not claim.spec.volume_name:
                claims.unbound_delay_binding.append(claim)
            else:
                claims.unbound_immediate.append(claim)
        for claim in claims.unbound_delay_binding:
            name = claim_class(claim)
            # The index is by the informer's class; assumed PVs keep theirs.
            claims.unbound_volumes_delay_binding[name] = self.pv_cache.overlay(
                pv for pv in self.listers.persistent_volumes.values()
                if volume_class(pv) == name)
        return claims

    # ---- Filter ------------------------------------------------------------------

    def find_pod_volumes(self, pod: api.Pod, claims: PodVolumeClaims, node_name: str,
                         node_labels: Mapping[str, str]) -> tuple[PodVolumes, list[str]]:
        """What the node would need to bind the pod's claims, and the reasons it cannot
        (empty when it can). BinderError when that cannot be decided."""
        found = PodVolumes()
        bound_ok = pv_exists = unbound_ok = storage_ok = True
        if claims.bound:
            bound_ok, pv_exists = self._check_bound_claims(claims.bound, node_name, node_labels)
        if claims.unbound_delay_binding:
            unbound_ok, storage_ok = self._check_unbound_claims(
                claims, node_name, node_labels, found)
        reasons = []
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(REASON_NOT_ENOUGH_SPACE)
        if not pv_exists:
            reasons.append(REASON_PV_NOT_EXIST)
        return found, reasons

    def _check_bound_claims(self, claims: Sequence[storage.PersistentVolumeClaim],
                            node_name: str, node_labels: Mapping[str, str]
                            ) -> tuple[bool, bool]:
        """(node affinity satisfied, every PV exists); stops at the first failure."""
        csi_node = self.listers.csi_nodes.get(node_name)
        for claim in claims:
            try:
                volume = self.pv_cache.get(claim.spec.volume_name)
            except NotFoundError:
                return True, False
            try:
                volume = as_seen_on_node(volume, csi_node)
            except TranslationError as error:
                raise BinderError(str(error)) from None
            if node_affinity_error(volume, node_labels) is not None:
                return False, True
        return True, True

    def _check_unbound_claims(self, claims: PodVolumeClaims, node_name: str,
                              node_labels: Mapping[str, str],
                              found: PodVolumes) -> tuple[bool, bool]:
        """(satisfied, enough storage) for the delayed claims, filling `found`."""
        to_match: list[storage.PersistentVolumeClaim] = []
        to_provision: list[storage.PersistentVolumeClaim] = []
        for claim in claims.unbound_delay_binding:
            selected = claim.metadata.annotations.get(storage.ANNOTATION_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
            elif selected != node_name:
                return False, True  # provisioning already started for another node
            else:
                to_provision.append(claim)
        satisfied = True
        if to_match:
            satisfied, bindings, unmatched = self._find_matching_volumes(
                to_match, claims.unbound_volumes_delay_binding, node_labels)
            found.static_bindings = bindings
            to_provision += unmatched
        if not to_provision:
            return satisfied, True
        satisfied, enough, provisions = self._check_volume_provisions(to_provision, node_labels)
        found.dynamic_provisions = provisions
        return satisfied, enough

    def _find_matching_volumes(
        self, to_match: list[storage.PersistentVolumeClaim],
        volumes_by_class: Mapping[str, list[storage.PersistentVolume]],
        node_labels: Mapping[str, str],
    ) -> tuple[bool, list[BindingInfo], list[storage.PersistentVolumeClaim]]:
        # Smallest requests first, so each takes the smallest volume that fits it.
        # (A stable sort, as Go's insertion sort is for the up to 12 claims it sorts that
        # way; beyond that upstream's order of equal requests is unspecified.)
        ordered = sorted(to_match, key=cmp_to_key(_by_requested_size))
        chosen: set[str] = set()
        bindings: list[BindingInfo] = []
        unmatched: list[storage.PersistentVolumeClaim] = []
        for claim in ordered:
            volumes = volumes_by_class.get(claim_class(claim), [])
            try:
                volume = find_matching_volume(claim, volumes, node_labels, chosen)
            except MatchError as error:
                raise BinderError(str(error)) from None
            if volume is None:
                unmatched.append(claim)
                continue
            chosen.add(volume.metadata.name)
            bindings.append(BindingInfo(claim, volume))
        return not unmatched, bindings, unmatched

    def _check_volume_provisions(
        self, to_provision: list[storage.PersistentVolumeClaim], node_labels: Mapping[str, str],
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """(provisionable, enough storage, provisions); stops at the first claim that
        cannot be provisioned on the node."""
        provisions: list[DynamicProvision] = []
        for claim in to_provision:
            name = claim_class(claim)
            if not name:
                raise BinderError(f'no class for claim "{claim_key(claim)}"')
            found = self.listers.storage_classes.get(name)
            if found is None:
                raise BinderError(f'failed to find storage class "{name}"')
            provisioner = found.provisioner
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not topology_allows(found.allowed_topologies, node_labels):
                return False, True, []
            enough, capacity = self._has_enough_capacity(provisioner, claim, found, node_labels)
            if not enough:
                return True, False, []
            provisions.append(DynamicProvision(claim, capacity))
        return True, True, provisions

    def _has_enough_capacity(
        self, provisioner: str, claim: storage.PersistentVolumeClaim,
        storage_class: storage.StorageClass, node_labels: Mapping[str, str],
    ) -> tuple[bool, storage.CSIStorageCapacity | None]:
        """Whether a CSIStorageCapacity the node can reach has room for the claim; only
        for CSI drivers that opted into capacity tracking."""
        if not has_storage_request(claim):
            return True, None
        driver = self.listers.csi_drivers.get(provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = requested_storage(claim).units()
        for capacity in self.listers.csi_storage_capacities.values():
            if (capacity.storage_class_name == storage_class.metadata.name
                    and _capacity_sufficient(capacity, size)
                    and _node_has_access(capacity, node_labels)):
                return True, capacity
        return False, None

    # ---- Reserve / Unreserve -----------------------------------------------------

    def assume_pod_volumes(self, pod: api.Pod, node_name: str, found: PodVolumes) -> bool:
        """Lay the node's bindings over the caches; True when every claim is already
        bound and nothing is left to do. On failure nothing stays assumed."""
        if self.pod_volumes_bound(pod):
            return True
        bindings: list[BindingInfo] = []
        for binding in found.static_bindings:
            bound_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(bound_pv)
                except (NotFoundError, OutOfSyncError) as error:
                    self.revert_assumed(bindings, [])
                    raise BinderError(str(error)) from None
            bindings.append(BindingInfo(binding.pvc, bound_pv))
        provisions: list[DynamicProvision] = []
        for provision in found.dynamic_provisions:
            claim = provision.pvc
            annotations = {**claim.metadata.annotations,
                           storage.ANNOTATION_SELECTED_NODE: node_name}
            selected = msgspec.structs.replace(
                claim, metadata=msgspec.structs.replace(claim.metadata, annotations=annotations))
            try:
                self.pvc_cache.assume(selected)
            except (NotFoundError, OutOfSyncError) as error:
                self.revert_assumed(bindings, [p.pvc for p in provisions])
                raise BinderError(str(error)) from None
            provisions.append(DynamicProvision(selected))
        found.static_bindings = bindings
        found.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, found: PodVolumes) -> None:
        self.revert_assumed(found.static_bindings, [p.pvc for p in found.dynamic_provisions])

    def revert_assumed(self, bindings: Sequence[BindingInfo],
                       claims: Sequence[storage.PersistentVolumeClaim]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)
        for claim in claims:
            self.pvc_cache.restore(claim)
