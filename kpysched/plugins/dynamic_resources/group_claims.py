"""ResourceClaims a PodGroup's members share (DRAWorkloadResourceClaims, v1.37):
upstream's resourceclaim.BindTo, NameFromPodGroup and IsForPodGroup.

A PodGroup lists claims in spec.resourceClaims; a member whose own spec.resourceClaims
entry matches one of them exactly (same entry name, same claim name or template name)
uses that claim for the whole group, so PreBind reserves it for the PodGroup rather
than for the pod. Every other claim of the pod is reserved for the pod, as without
the gate.
"""

from __future__ import annotations

from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.scheduling import PodGroup, PodGroupResourceClaim
from kpysched.plugins.dynamic_resources.claims import (
    API_GROUP_SCHEDULING,
    RESOURCE_POD_GROUPS,
    ClaimUnavailableError,
    consumer_reference,
    controller_of,
    pod_group_of,
)


def group_reference(group: PodGroup) -> resource.ResourceClaimConsumerReference:
    """How a claim's status.reservedFor names the PodGroup."""
    return resource.ResourceClaimConsumerReference(
        api_group=API_GROUP_SCHEDULING, resource=RESOURCE_POD_GROUPS,
        name=group.metadata.name, uid=group.metadata.uid)


def _matches_group(pod: api.Pod, group: PodGroup) -> None:
    meta = pod.metadata
    name = pod_group_of(pod)
    if name is None:
        raise ClaimUnavailableError(
            f"Pod {meta.namespace}/{meta.name} does not belong to a PodGroup")
    group_meta = group.metadata
    if meta.namespace != group_meta.namespace or name != group_meta.name:
        raise ClaimUnavailableError(
            f"Pod {meta.namespace}/{meta.name} belongs to PodGroup {meta.namespace}/{name}, "
            f"not PodGroup {group_meta.namespace}/{group_meta.name}")


def bind_to(pod: api.Pod, group: PodGroup | None,
            pod_claim: api.PodResourceClaim) -> resource.ResourceClaimConsumerReference:
    """Whom PreBind reserves this entry's claim for: the PodGroup when the group lists
    the same entry, else the pod. `group` is None with the gate off or for a pod in
    no group. Raises ClaimUnavailableError with upstream's text for an entry naming
    neither a claim nor a template."""
    meta = pod.metadata
    if pod_claim.resource_claim_name is None and pod_claim.resource_claim_template_name is None:
        raise ClaimUnavailableError(
            f"Pod {meta.namespace}/{meta.name} claim {pod_claim.name}: none of the "
            "supported fields are set")
    if group is not None:
        _matches_group(pod, group)
        for group_claim in group.spec.resource_claims:
            if (group_claim.resource_claim_name is None
                    and group_claim.resource_claim_template_name is None):
                raise ClaimUnavailableError(
                    f"PodGroup {group.metadata.namespace}/{group.metadata.name} claim "
                    f"{group_claim.name}: none of the supported fields are set")
            if (group_claim.name == pod_claim.name
                    and group_claim.resource_claim_name == pod_claim.resource_claim_name
                    and group_claim.resource_claim_template_name
                    == pod_claim.resource_claim_template_name):
                return group_reference(group)
    return consumer_reference(pod)


def claim_bindings(pod: api.Pod, group: PodGroup | None
                   ) -> list[resource.ResourceClaimConsumerReference]:
    """One reference per entry of the pod's spec.resourceClaims, in spec order
    (upstream's podResourceClaimBindings). As upstream, they are indexed like the
    pod's claims although entries that need no claim are left out of those."""
    return [bind_to(pod, group, entry) for entry in pod.spec.resource_claims]


def claim_name_in_group(group: PodGroup, group_claim: PodGroupResourceClaim
                        ) -> tuple[str | None, bool]:
    """(the claim's name, whether the group must own it), as claims.claim_name for a
    pod; raises ClaimUnavailableError with upstream's text."""
    if group_claim.resource_claim_name is not None:
        return group_claim.resource_claim_name, False
    meta = group.metadata
    if group_claim.resource_claim_template_name is not None:
        for claim_status in group.status.resource_claim_statuses:
            if claim_status.name == group_claim.name:
                return claim_status.resource_claim_name, True
        raise ClaimUnavailableError(
            f"PodGroup {meta.namespace}/{meta.name}: ResourceClaim not created yet")
    raise ClaimUnavailableError(
        f"PodGroup {meta.namespace}/{meta.name}, spec.resourceClaim {group_claim.name}: "
        "none of the supported fields are set")


def is_for_pod_group(group: PodGroup, claim: resource.ResourceClaim) -> bool:
    """Upstream's IsForPodGroup (whose error only makes its caller pass the claim by):
    same namespace, and the PodGroup is the claim's controller."""
    if claim.metadata.namespace != group.metadata.namespace:
        return False
    owner = controller_of(claim.metadata)
    return owner is not None and owner.uid == group.metadata.uid
