"""Which ResourceClaims a pod uses (upstream's resourceclaim.Name, IsForPod,
IsReservedForPod and the plugin's foreachPodResourceClaim).

With DRAWorkloadResourceClaims on (`accept_group`), a claim made from a template may
also belong to the pod's PodGroup, and a reservation for that PodGroup counts as the
pod's own: pods do not know their PodGroup's uid, so the group is matched by API
group, resource and name (group_claims.py binds claims to the group).

A pod names its claims directly (resourceClaimName) or through a template, whose
claim the resourceclaim controller creates and records in the pod's
status.resourceClaimStatuses. Until then, or while a named claim does not exist
or is being deleted, the pod cannot be scheduled: the texts below are upstream's,
because they end up in the pod's FailedScheduling events.
"""

from __future__ import annotations

from collections.abc import Callable

from kpysched.objects import api
from kpysched.objects import dra as resource

ClaimLookup = Callable[[str], resource.ResourceClaim | None]  # by namespace/name

API_GROUP_CORE = ""
RESOURCE_PODS = "pods"
API_GROUP_SCHEDULING = "scheduling.k8s.io"
RESOURCE_POD_GROUPS = "podgroups"


class ClaimUnavailableError(Exception):
    """The pod cannot use its claims yet; str() is upstream's error text."""


def claim_name(pod: api.Pod, pod_claim: api.PodResourceClaim) -> tuple[str | None, bool]:
    """(the claim's name, whether the pod must own it). The name is None when the
    controller decided no claim is needed for this entry."""
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    meta = pod.metadata
    if pod_claim.resource_claim_template_name is not None:
        for claim_status in pod.status.resource_claim_statuses:
            if claim_status.name == pod_claim.name:
                return claim_status.resource_claim_name, True
        raise ClaimUnavailableError(
            f'pod "{meta.namespace}/{meta.name}": ResourceClaim not created yet')
    raise ClaimUnavailableError(
        f'pod "{meta.namespace}/{meta.name}", spec.resourceClaim "{pod_claim.name}": '
        "none of the supported fields are set")


def pod_group_of(pod: api.Pod) -> str | None:
    """The PodGroup the pod names in spec.schedulingGroup, or None."""
    group = pod.spec.scheduling_group
    return group.pod_group_name if group is not None and group.pod_group_name else None


def controller_of(meta: api.ObjectMeta) -> api.OwnerReference | None:
    """metav1.GetControllerOf: the first owner reference marked as controller."""
    return next((ref for ref in meta.owner_references if ref.controller), None)


def _owned_by_pod_group(group: str, claim: resource.ResourceClaim) -> bool:
    """The claim's controller is a scheduling.k8s.io PodGroup of this name (any
    version: the version part of apiVersion may change)."""
    owner = controller_of(claim.metadata)
    return (owner is not None and owner.name == group and owner.kind == "PodGroup"
            and owner.api_version.startswith(API_GROUP_SCHEDULING + "/"))


def check_owner(pod: api.Pod, claim: resource.ResourceClaim,
                accept_group: bool = False) -> None:
    """Upstream's IsForPod: the claim was made for the pod (or, with `accept_group`,
    for its PodGroup); raises ClaimUnavailableError with upstream's text if not."""
    pod_meta, claim_meta = pod.metadata, claim.metadata
    if claim_meta.namespace != pod_meta.namespace:
        raise ClaimUnavailableError(
            f"ResourceClaim {claim_meta.namespace}/{claim_meta.name} is not in the same "
            f"namespace as Pod {pod_meta.namespace}/{pod_meta.name}")
    owner = controller_of(claim_meta)
    if owner is not None and owner.uid == pod_meta.uid:
        return
    group = pod_group_of(pod) if accept_group else None
    if group is not None:
        if not _owned_by_pod_group(group, claim):
            raise ClaimUnavailableError(
                f"ResourceClaim {claim_meta.namespace}/{claim_meta.name} was not created "
                f"for Pod {pod_meta.namespace}/{pod_meta.name} (neither Pod nor PodGroup "
                f"{group} is the owner)")
        return
    raise ClaimUnavailableError(
        f"ResourceClaim {claim_meta.namespace}/{claim_meta.name} was not created for "
        f"Pod {pod_meta.namespace}/{pod_meta.name} (Pod is not owner)")


def pod_claims(pod: api.Pod, lookup: ClaimLookup,
               accept_group: bool = False) -> list[resource.ResourceClaim]:
    """The pod's claims in spec order, skipping entries that need none; raises
    ClaimUnavailableError with upstream's text when one is missing or unusable.
    `accept_group` (DRAWorkloadResourceClaims): a claim made for the pod's PodGroup is
    the pod's too."""
    claims: list[resource.ResourceClaim] = []
    namespace = pod.metadata.namespace
    for pod_claim in pod.spec.resource_claims:
        name, must_check_owner = claim_name(pod, pod_claim)
        if name is None:
            continue
        claim = lookup(f"{namespace}/{name}")
        if claim is None:
            # The lister's NotFound error, as upstream passes it on.
            raise ClaimUnavailableError(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimUnavailableError(f'resourceclaim "{name}" is being deleted')
        if must_check_owner:
            check_owner(pod, claim, accept_group)
        claims.append(claim)
    return claims


def names_claim(pod: api.Pod, claim: resource.ResourceClaim) -> bool:
    """Whether the pod refers to a claim of this namespace and name, directly or through
    the claim the resourceclaim controller recorded for one of its templates (no
    lookup: a cheap test before pod_claims)."""
    meta = claim.metadata
    if meta.namespace != pod.metadata.namespace:
        return False
    name = meta.name
    return (any(entry.resource_claim_name == name for entry in pod.spec.resource_claims)
            or any(status.resource_claim_name == name
                   for status in pod.status.resource_claim_statuses))


def is_reserved_for_pod(pod: api.Pod, claim: resource.ResourceClaim,
                        accept_group: bool = False) -> bool:
    """The claim is reserved for the pod, or (`accept_group`) for its PodGroup."""
    uid = pod.metadata.uid
    group = pod_group_of(pod) if accept_group else None
    for reserved in claim.status.reserved_for:
        if reserved.uid == uid:
            return True
        if (group is not None and reserved.api_group == API_GROUP_SCHEDULING
                and reserved.resource == RESOURCE_POD_GROUPS and reserved.name == group):
            return True
    return False


def consumer_reference(pod: api.Pod) -> resource.ResourceClaimConsumerReference:
    """How a claim's status.reservedFor names the pod."""
    return resource.ResourceClaimConsumerReference(
        api_group=API_GROUP_CORE, resource=RESOURCE_PODS, name=pod.metadata.name,
        uid=pod.metadata.uid)


def is_sub_request_ref(request: str) -> bool:
    return request.count("/") == 1


def sub_request_ref(request: str, sub_request: str) -> str:
    return f"{request}/{sub_request}"
