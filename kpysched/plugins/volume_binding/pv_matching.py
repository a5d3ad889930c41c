"""Matching claims with PersistentVolumes, as k8s.io/component-helpers storage/volume
does it for the scheduler (FindMatchingVolume, CheckNodeAffinity, GetBindVolumeToClaim
and their helpers), plus the generic-ephemeral-volume naming rules.

Only the scheduler's path of FindMatchingVolume is here: a node is always given and
the claim is in delayed-binding mode. The PV controller's path (no node) is not a
scheduler concern.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

import msgspec

from kpysched.framework.interfaces import Lister
from kpysched.objects import api, storage
from kpysched.objects.labels import (
    SelectorError,
    label_selector_matches,
    node_selector_term_matches,
)
from kpysched.objects.quantity import Quantity, QuantityError, parse_quantity
from kpysched.plugins._shared.args import label_value_errors, qualified_name_errors
from kpysched.plugins._shared.volume_helpers import claim_class
from kpysched.plugins.node_affinity import term_errors

STORAGE = "storage"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"
NO_MATCHING_TERMS = "no matching NodeSelectorTerms"

_ZERO = Quantity(0, 0)


class MatchError(ValueError):
    """Matching could not be decided (a claim whose selector does not parse)."""


def claim_key(claim: storage.PersistentVolumeClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def volume_class(volume: storage.PersistentVolume) -> str:
    annotated = volume.metadata.annotations.get(storage.ANNOTATION_BETA_STORAGE_CLASS)
    return annotated if annotated is not None else volume.spec.storage_class_name


def _storage_quantity(amounts: Mapping[str, str | int | float]) -> Quantity:
    # A missing entry reads as Go's zero Quantity. The API server only stores valid
    # quantities, so a parse failure is a malformed object: treat it as zero too.
    amount = amounts.get(STORAGE)
    if amount is None:
        return _ZERO
    try:
        return parse_quantity(amount)
    except QuantityError:
        return _ZERO


def requested_storage(claim: storage.PersistentVolumeClaim) -> Quantity:
    return _storage_quantity(claim.spec.resources.requests)


def has_storage_request(claim: storage.PersistentVolumeClaim) -> bool:
    return STORAGE in claim.spec.resources.requests


def volume_capacity(volume: storage.PersistentVolume) -> Quantity:
    return _storage_quantity(volume.spec.capacity)


def node_affinity_error(volume: storage.PersistentVolume,
                        node_labels: Mapping[str, str]) -> str | None:
    """Why the volume's required node affinity rejects a node with these labels; None
    when it admits it (CheckNodeAffinity).

    Upstream builds a Node carrying only the labels, so `matchFields` (metadata.name)
    never takes part: a term is judged on its expressions alone, and a term with
    fields only matches every node. Terms that do not parse never match, and their
    parse errors become the answer when no other term matches.
    """
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    parse_errors: list[str] = []
    for index, term in enumerate(affinity.required.node_selector_terms):
        if not term.match_expressions and not term.match_fields:
            continue  # an empty term selects nothing
        problems = term_errors(term, f"nodeSelectorTerms[{index}]")
        if problems:
            parse_errors += problems
            continue
        if not term.match_expressions:
            return None
        labels_only = api.NodeSelectorTerm(match_expressions=term.match_expressions)
        if node_selector_term_matches(labels_only, node_labels, ""):
            return None
    if not parse_errors:
        return NO_MATCHING_TERMS
    return parse_errors[0] if len(parse_errors) == 1 else f"[{', '.join(parse_errors)}]"


def volume_mode_mismatch(claim: storage.PersistentVolumeClaim,
                         volume: storage.PersistentVolume) -> bool:
    """Unset modes count as Filesystem on both sides (CheckVolumeModeMismatches)."""
    wanted = claim.spec.volume_mode or storage.VOLUME_MODE_FILESYSTEM
    offered = volume.spec.volume_mode or storage.VOLUME_MODE_FILESYSTEM
    return wanted != offered


def access_modes_satisfied(claim: storage.PersistentVolumeClaim,
                           volume: storage.PersistentVolume) -> bool:
    offered = set(volume.spec.access_modes)
    return all(mode in offered for mode in claim.spec.access_modes)


def is_volume_bound_to_claim(volume: storage.PersistentVolume,
                             claim: storage.PersistentVolumeClaim) -> bool:
    """Pre-bound or bound to this claim: same name and namespace, and the same uid when
    the reference carries one."""
    ref = volume.spec.claim_ref
    if ref is None:
        return False
    if ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def find_matching_volume(claim: storage.PersistentVolumeClaim,
                         volumes: Sequence[storage.PersistentVolume],
                         node_labels: Mapping[str, str],
                         excluded: Container[str]) -> storage.PersistentVolume | None:
    """The volume pre-bound to the claim if there is one (None if its node affinity
    rejects the node), else the smallest available volume that fits the claim and
    the node. MatchError when the claim's selector does not parse."""
    requested = requested_storage(claim)
    requested_class = claim_class(claim)
    claim_vac = claim.spec.volume_attributes_class_name or ""
    selector = claim.spec.selector
    smallest: storage.PersistentVolume | None = None
    smallest_size = _ZERO
    for volume in volumes:
        if volume.metadata.name in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(volume, claim)
        if volume.spec.claim_ref is not None and not bound_to_claim:
            continue
        size = volume_capacity(volume)
        if size.compare(requested) < 0:
            continue
        if volume_mode_mismatch(claim, volume):
            continue
        if claim_vac != (volume.spec.volume_attributes_class_name or ""):
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        affinity_ok = node_affinity_error(volume, node_labels) is None
        if bound_to_claim:
            # The claim's own volume decides alone: no other volume may stand in.
            return volume if affinity_ok else None
        # Volumes not yet Available are skipped: binding them now would likely race
        # the PV controller and fail with a conflict.
        if volume.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not _selector_matches(claim, selector, volume):
            continue
        if volume_class(volume) != requested_class or not affinity_ok:
            continue
        if not access_modes_satisfied(claim, volume):
            continue
        if smallest is None or smallest_size.compare(size) > 0:
            smallest, smallest_size = volume, size
    return smallest


def _selector_matches(claim: storage.PersistentVolumeClaim, selector: api.LabelSelector,
                      volume: storage.PersistentVolume) -> bool:
    try:
        return label_selector_matches(selector, volume.metadata.labels)
    except SelectorError as error:
        raise MatchError("error creating internal label selector for claim: "
                         f"{claim_key(claim)}: {error}") from None


def bind_volume_to_claim(volume: storage.PersistentVolume, claim: storage.PersistentVolumeClaim
                         ) -> tuple[storage.PersistentVolume, bool]:
    """The volume as it is once bound to the claim, and whether that changed anything
    (GetBindVolumeToClaim). The informer's object is never modified."""
    dirty = False
    claim_ref = volume.spec.claim_ref
    annotations = volume.metadata.annotations
    meta = claim.metadata
    if (claim_ref is None or claim_ref.name != meta.name
            or claim_ref.namespace != meta.namespace or claim_ref.uid != meta.uid):
        claim_ref = storage.ObjectReference(
            kind="PersistentVolumeClaim", api_version="v1", namespace=meta.namespace,
            name=meta.name, uid=meta.uid, resource_version=meta.resource_version)
        dirty = True
    # Bound by the scheduler on the controller's behalf, unless the user pre-bound it.
    if (not is_volume_bound_to_claim(volume, claim)
            and storage.ANNOTATION_BOUND_BY_CONTROLLER not in annotations):
        annotations = {**annotations, storage.ANNOTATION_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    bound = msgspec.structs.replace(
        volume,
        metadata=msgspec.structs.replace(volume.metadata, annotations=annotations),
        spec=msgspec.structs.replace(volume.spec, claim_ref=claim_ref))
    return bound, dirty


def is_delay_binding_mode(claim: storage.PersistentVolumeClaim,
                          classes: Lister[storage.StorageClass]) -> bool:
    """Whether the claim's class waits for the first consumer; a claim without class
    or with an unknown class binds immediately. ValueError when the class has no
    binding mode (the API server always defaults one)."""
    name = claim_class(claim)
    if not name:
        return False
    found = classes.get(name)
    if found is None:
        return False
    if found.volume_binding_mode is None:
        raise ValueError(f'VolumeBindingMode not set for StorageClass "{name}"')
    return found.volume_binding_mode == storage.BINDING_WAIT_FOR_FIRST_CONSUMER


def topology_allows(terms: Sequence[storage.TopologySelectorTerm],
                    node_labels: Mapping[str, str]) -> bool:
    """A class's allowedTopologies: no terms allow every node; terms are ORed, each one
    requires every key to hold one of its values. Empty or malformed terms match
    nothing (MatchTopologySelectorTerms)."""
    if not terms:
        return True
    return any(_topology_term_matches(term, node_labels) for term in terms)


def _topology_term_matches(term: storage.TopologySelectorTerm,
                           node_labels: Mapping[str, str]) -> bool:
    if not term.match_label_expressions:
        return False
    for requirement in term.match_label_expressions:
        if (not requirement.values or qualified_name_errors(requirement.key)
                or any(label_value_errors(value) for value in requirement.values)):
            return False
        if node_labels.get(requirement.key) not in requirement.values:
            return False
    return True


def pod_claim_name(pod: api.Pod, volume: api.Volume) -> tuple[str, bool] | None:
    """The claim a pod volume uses and whether it is a generic ephemeral one (named
    <pod>-<volume>); None for volumes without a claim."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name, False
    if volume.ephemeral is not None:
        return f"{pod.metadata.name}-{volume.name}", True
    return None


def ephemeral_owner_error(pod: api.Pod, claim: storage.PersistentVolumeClaim) -> str | None:
    """Why a generic ephemeral claim may not be used by the pod: it must be controlled
    by the pod itself, or a same-named claim of someone else would be taken."""
    controller = next((ref for ref in claim.metadata.owner_references if ref.controller),
                      None)
    if (claim.metadata.namespace != pod.metadata.namespace or controller is None
            or controller.uid != pod.metadata.uid):
        return (f"PVC {claim.metadata.namespace}/{claim.metadata.name} was not created for "
                f"pod {pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)")
    return None
