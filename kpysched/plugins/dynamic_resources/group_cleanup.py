"""PodGroupPostFilter's clean-up of a PodGroup's own claims (DRAWorkloadResourceClaims,
upstream's deallocatePodGroupClaims), for a group that did not fit and of which no
member is assumed or bound.

Two steps, the first write ending the point:

1. A claim that kept some member off some node and that nobody, or only this PodGroup,
   holds is deallocated ("deallocation of PodGroup ResourceClaim completed",
   Unschedulable): the next attempt may find devices elsewhere.
2. Otherwise each allocated claim the PodGroup lists (and owns, for one made from a
   template) that is reserved for the group loses that reservation ("ResourceClaim
   unreserved for PodGroup", UnschedulableAndUnresolvable as upstream's
   statusUnschedulable, so DefaultPreemption does not run for the group). A failed
   removal is logged and the next claim tried, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import structlog

from kpysched.framework.status import Status
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins.dynamic_resources.claim_writes import ClaimWriter
from kpysched.plugins.dynamic_resources.claims import (
    ClaimLookup,
    ClaimUnavailableError,
    is_reserved_for_pod,
)
from kpysched.plugins.dynamic_resources.group_claims import claim_name_in_group, is_for_pod_group

log = structlog.get_logger(__name__)

GROUP_CLAIM_DEALLOCATED = "deallocation of PodGroup ResourceClaim completed"
GROUP_CLAIM_UNRESERVED = "ResourceClaim unreserved for PodGroup"

# Runs a write before the point returns: None when it succeeded, else its Error.
WriteNow = Callable[[Coroutine[Any, Any, None]], Status | None]


def _only_this_group_or_nobody(claim: resource.ResourceClaim, group: PodGroup) -> bool:
    reserved = claim.status.reserved_for
    return not reserved or (len(reserved) == 1 and reserved[0].uid == group.metadata.uid)


def free_group_claims(pod: api.Pod, group: PodGroup,
                      unavailable: Iterable[resource.ResourceClaim], lookup: ClaimLookup,
                      writer: ClaimWriter, write_now: WriteNow) -> Status | None:
    """Free one of `group`'s claims (see the module's text); `pod` is a member,
    `unavailable` the claims, as PreFilter read them, that kept the cycle's members
    off some node. The status that ends the point, or None when nothing was written."""
    for claim in unavailable:
        if _only_this_group_or_nobody(claim, group):
            failure = write_now(writer.deallocate(claim))
            return failure or Status.unschedulable(GROUP_CLAIM_DEALLOCATED)
    namespace = group.metadata.namespace
    for group_claim in group.spec.resource_claims:
        try:
            name, must_check_owner = claim_name_in_group(group, group_claim)
        except ClaimUnavailableError as error:
            return Status.error(str(error))
        if name is None:
            continue
        found = lookup(f"{namespace}/{name}")
        if found is None:
            # The claim lister's NotFound, as upstream passes it on.
            return Status.error(f'resourceclaim.resource.k8s.io "{name}" not found')
        if must_check_owner and not is_for_pod_group(group, found):
            continue
        if found.status.allocation is None or not is_reserved_for_pod(pod, found, True):
            continue
        failure = write_now(writer.remove_reservation(found, group.metadata.uid))
        if failure is not None:
            # Tried again when the group is.
            log.warning("podgroup.unreserve_failed", claim=f"{namespace}/{name}",
                        pod_group=f"{namespace}/{group.metadata.name}",
                        error=failure.message())
            continue
        return Status.unresolvable(GROUP_CLAIM_UNRESERVED)
    return None
