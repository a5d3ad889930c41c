"""PodTopologySpread's queueing hints: which pod and node changes may change the counts
or domains of the rejected pod's hard (DoNotSchedule) constraints.

The constraints are the pod's own, or the profile's defaults when it has none; a
selector that does not parse is an error (which the queue counts as Queue).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kpysched.framework.cluster_events import QueueingHint, objects_as
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.pod_topology_spread.common import HONOR, Constraint

# The rejected pod's hard constraints.
ConstraintsOf = Callable[[api.Pod], tuple[Constraint, ...]]


def _involved(changed: PodInfo, pod: PodInfo) -> bool:
    """Whether `changed` counts for `pod`'s spreading: the pod itself, or a pod on (or
    nominated to) a node in the same namespace."""
    if changed.uid == pod.uid:
        return True
    if not changed.node_name and not changed.pod.status.nominated_node_name:
        return False
    return changed.namespace == pod.namespace


def _labels_selected(constraints: Iterable[Constraint], labels: Mapping[str, str]) -> bool:
    return any(c.selector.matches(labels) for c in constraints)


def _has_all_keys(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def _keys_changed(before: Mapping[str, str], after: Mapping[str, str],
                  constraints: Iterable[Constraint]) -> bool:
    return any(before.get(c.topology_key, "") != after.get(c.topology_key, "")
               for c in constraints)


class SpreadHints:
    def __init__(self, constraints_of: ConstraintsOf) -> None:
        self._constraints_of = constraints_of

    def schedulable_after_pod_change(self, pod: PodInfo, old: object,
                                     new: object) -> QueueingHint:
        """A pod added, relabelled, given a toleration, or deleted."""
        original, modified = objects_as(PodInfo, old, new)
        if (modified is not None and not _involved(modified, pod)) or (
                original is not None and not _involved(original, pod)):
            return QueueingHint.QUEUE_SKIP
        constraints = self._constraints_of(pod.pod)
        if original is not None and modified is not None:
            if (modified.uid == pod.uid
                    and modified.pod.spec.tolerations != original.pod.spec.tolerations
                    and any(c.node_taints_policy == HONOR for c in constraints)):
                return QueueingHint.QUEUE  # tainted nodes it now tolerates count as domains
            before, after = original.pod.metadata.labels, modified.pod.metadata.labels
            if before == after:
                return QueueingHint.QUEUE_SKIP
            if any(c.selector.matches(before) != c.selector.matches(after)
                   for c in constraints):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = modified if modified is not None else original
        if changed is None:
            raise ValueError("a pod event without a pod")
        if _labels_selected(constraints, changed.pod.metadata.labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def schedulable_after_node_change(self, pod: PodInfo, old: object,
                                      new: object) -> QueueingHint:
        """A node added, deleted, relabelled or retainted."""
        original, modified = objects_as(api.Node, old, new)
        constraints = self._constraints_of(pod.pod)
        was_domain = original is not None and _has_all_keys(original.metadata.labels,
                                                            constraints)
        is_domain = modified is not None and _has_all_keys(modified.metadata.labels,
                                                           constraints)
        if original is not None and modified is not None:
            if was_domain != is_domain:
                return QueueingHint.QUEUE
            if is_domain and (
                    _keys_changed(original.metadata.labels, modified.metadata.labels,
                                  constraints)
                    or original.spec.taints != modified.spec.taints):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            return QueueingHint.QUEUE if is_domain else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if was_domain else QueueingHint.QUEUE_SKIP
