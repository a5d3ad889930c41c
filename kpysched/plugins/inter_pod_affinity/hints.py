"""InterPodAffinity's queueing hints: which pod and node changes may satisfy the
rejected pod's required (anti-)affinity.

Only required terms count, as they alone reject. Terms are matched without namespace
labels, as upstream's hints do (a namespaceSelector other than {} then matches no
namespace; `namespaces` still does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kpysched.framework.cluster_events import QueueingHint, objects_as
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.pod_affinity import AffinityTerm

_NO_NAMESPACE_LABELS: dict[str, str] = {}


def _required(pod: PodInfo) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
    """The pod's required affinity and anti-affinity terms; a group that did not parse
    is an error (which the queue counts as Queue)."""
    terms = pod.pod_affinity
    for group in ("requiredAffinityTerms:", "requiredAntiAffinityTerms:"):
        if group in terms.parse_error:
            raise ValueError(terms.parse_error)
    return terms.required, terms.required_anti


def _matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """One existing pod must satisfy every term at once (upstream's
    podMatchesAllAffinityTerms); no terms, no match."""
    return bool(terms) and all(term.matches(pod.pod, _NO_NAMESPACE_LABELS) for term in terms)


def _matches_any(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """Some term selects the pod (upstream's podMatchesAnyAffinityTerms)."""
    return any(term.matches(pod.pod, _NO_NAMESPACE_LABELS) for term in terms)


AntiMatch = Callable[[Sequence[AffinityTerm], PodInfo], bool]


def _unscheduled(pod: PodInfo) -> bool:
    return not pod.node_name and not pod.pod.status.nominated_node_name


def _after_pod_change(pod: PodInfo, old: object, new: object,
                      anti_matches: AntiMatch) -> QueueingHint:
    original, modified = objects_as(PodInfo, old, new)
    if original is not None and modified is not None and modified.uid == pod.uid:
        # Its own labels changed: someone's anti-affinity may no longer select it.
        return QueueingHint.QUEUE
    if (modified is not None and _unscheduled(modified)) or (
            original is not None and _unscheduled(original)):
        return QueueingHint.QUEUE_SKIP  # a pod on no node is in no topology domain
    affinity, anti_affinity = _required(pod)
    if original is not None and modified is not None:
        if not _matches_all(affinity, original) and _matches_all(affinity, modified):
            return QueueingHint.QUEUE
        if anti_matches(anti_affinity, original) and not anti_matches(anti_affinity, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if _matches_all(affinity, modified) else QueueingHint.QUEUE_SKIP
    if original is None:
        raise ValueError("a pod event without a pod")
    if anti_matches(anti_affinity, original):
        return QueueingHint.QUEUE  # a pod it refused to share a domain with went away
    _, deleted_anti_affinity = _required(original)
    if anti_matches(deleted_anti_affinity, pod):
        return QueueingHint.QUEUE  # a pod that refused it went away
    return QueueingHint.QUEUE_SKIP


def schedulable_after_pod_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A pod added, relabelled or deleted (v1.36): anti-affinity counts as lifted only
    when the pod matched all the terms, as v1.36 reads them (a pod matching one term of
    several is not heard, though that one term rejected the pod)."""
    return _after_pod_change(pod, old, new, _matches_all)


def schedulable_after_pod_change_any_anti(pod: PodInfo, old: object,
                                          new: object) -> QueueingHint:
    """The same from v1.37: a pod matching any anti-affinity term rejected, so its
    leaving (or relabelling out of every term) may help."""
    return _after_pod_change(pod, old, new, _matches_any)


def schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A node added or relabelled: new or changed topology domains."""
    original, modified = objects_as(api.Node, old, new)
    if modified is None:
        raise ValueError("a node event without the node")
    affinity, anti_affinity = _required(pod)
    after = modified.metadata.labels
    for term in affinity:
        key = term.topology_key
        if original is None:
            if key in after:
                return QueueingHint.QUEUE
            continue
        before = original.metadata.labels
        if key in after and (key not in before or before[key] != after[key]):
            return QueueingHint.QUEUE  # joined a domain, or moved to another
    for term in anti_affinity:
        if original is None:
            # Whether the new node's domain holds a pod it refuses is beyond a hint.
            return QueueingHint.QUEUE
        key = term.topology_key
        before = original.metadata.labels
        if key in before and (key not in after or before[key] != after[key]):
            return QueueingHint.QUEUE  # left its domain, or moved to another
    return QueueingHint.QUEUE_SKIP
