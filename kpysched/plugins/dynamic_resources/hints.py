"""DynamicResources' queueing hints (upstream's isSchedulableAfterClaimChange and
isSchedulableAfterPodChange): which claim and pod changes may let a held or rejected
pod through. `accept_group` is DRAWorkloadResourceClaims (claims.pod_claims)."""

from __future__ import annotations

from kpysched.framework.cluster_events import QueueingHint, objects_as
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources.claims import (
    ClaimLookup,
    ClaimUnavailableError,
    names_claim,
    pod_claims,
)


def after_claim_change(lookup: ClaimLookup, pod: PodInfo, old: object,
                       new: object, accept_group: bool = False) -> QueueingHint:
    """A claim added or updated, or (v1.37 registers those) deleted."""
    original, modified = objects_as(resource.ResourceClaim, old, new)
    if modified is None:
        # Deleted: only an allocation going with it frees devices (v1.37 sends every
        # pod DynamicResources rejected through here then).
        assert original is not None
        if original.status.allocation is None:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
    deallocated = (original is not None and original.status.allocation is not None
                   and modified.status.allocation is None)
    if not deallocated and not names_claim(pod.pod, modified):
        # Neither freed devices nor one of the pod's claims: upstream's answer is
        # QueueSkip whatever the pod's other claims are. Checked first because this
        # hint runs for every held pod on every claim event (at start-up, pods that
        # synced before their claims meet each claim's Add).
        return QueueingHint.QUEUE_SKIP
    try:
        uses = any(claim.metadata.uid == modified.metadata.uid
                   for claim in pod_claims(pod.pod, lookup, accept_group))
    except ClaimUnavailableError:
        return QueueingHint.QUEUE_SKIP
    if deallocated:
        return QueueingHint.QUEUE  # its devices are free again
    if not uses:
        return QueueingHint.QUEUE_SKIP
    if original is None:
        return QueueingHint.QUEUE
    if original.status == modified.status:
        return QueueingHint.QUEUE_SKIP  # e.g. a driver added a finalizer
    return QueueingHint.QUEUE


def after_pod_change(lookup: ClaimLookup, pod: PodInfo, old: object,
                     new: object, accept_group: bool = False) -> QueueingHint:
    """The pod's own update that records the claims made from its templates."""
    _, modified = objects_as(PodInfo, old, new)
    assert modified is not None
    if modified.uid != pod.uid:
        return QueueingHint.QUEUE_SKIP
    try:
        pod_claims(modified.pod, lookup, accept_group)
    except ClaimUnavailableError:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
