"""PreFilter/Filter half: DoNotSchedule constraints.

PreFilter counts, per constraint, the matching pods in every topology domain
of the eligible nodes, and keeps the two smallest domains ("critical paths").
Filter then admits a node when `matching in its domain + self-match - global
minimum <= maxSkew`, the global minimum being 0 while fewer domains than
minDomains exist.

The state is never changed in place: AddPod/RemovePod (preemption, nominated
pods) write an updated copy into the CycleState, so a cloned CycleState can
never see another copy's changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kpysched.cache.node_info import NodeInfo
from kpysched.objects import api
from kpysched.plugins.node_affinity import RequiredNodeAffinity
from kpysched.plugins.pod_topology_spread.common import (
    Constraint,
    MatchCounter,
    has_all_topology_keys,
)

# Upstream's "no domain seen yet" sentinel (math.MaxInt32).
MAX_MATCH_NUM = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Path:
    topology_value: str
    match_num: int


@dataclass(frozen=True, slots=True)
class CriticalPaths:
    """The domain with the fewest matching pods first; the second is only >= the first.

    Upstream keeps two paths because preemption removes pods from one node at a
    time: the minimum can then only move to the runner-up.
    """

    first: Path = Path("", MAX_MATCH_NUM)
    second: Path = Path("", MAX_MATCH_NUM)

    def updated(self, value: str, num: int) -> CriticalPaths:
        first, second = self.first, self.second
        if value == first.topology_value:
            first = Path(value, num)
        elif value == second.topology_value:
            second = Path(value, num)
        elif num < first.match_num:
            return CriticalPaths(Path(value, num), first)
        elif num < second.match_num:
            return CriticalPaths(first, Path(value, num))
        else:
            return self
        return CriticalPaths(second, first) if first.match_num > second.match_num else \
            CriticalPaths(first, second)


@dataclass(frozen=True, slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...] = ()
    critical_paths: tuple[CriticalPaths, ...] = ()
    # Per constraint: topology value -> matching pods in that domain.
    match_counts: tuple[dict[str, int], ...] = ()

    def min_match_num(self, index: int) -> int:
        """The global minimum, taken as 0 while there are fewer domains than minDomains."""
        if len(self.match_counts[index]) < self.constraints[index].min_domains:
            return 0
        return self.critical_paths[index].first.match_num

    def with_pod(self, pod: api.Pod, updated: api.Pod, node: NodeInfo, delta: int
                 ) -> PreFilterState:
        """A copy counting `updated` (delta +1) or no longer counting it (-1) on `node`."""
        if updated.metadata.namespace != pod.metadata.namespace or node.node is None:
            return self
        labels = node.labels
        if not has_all_topology_keys(labels, self.constraints):
            return self
        required = RequiredNodeAffinity.of(pod)
        paths = list(self.critical_paths)
        counts = list(self.match_counts)
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(updated.metadata.labels) or \
                    not constraint.includes(pod, node, required):
                continue
            value = labels[constraint.topology_key]
            counts[index] = dict(counts[index])
            counts[index][value] = counts[index].get(value, 0) + delta
            paths[index] = paths[index].updated(value, counts[index][value])
        return PreFilterState(self.constraints, tuple(paths), tuple(counts))


def compute_state(pod: api.Pod, constraints: tuple[Constraint, ...],
                  nodes: Sequence[NodeInfo], counter: MatchCounter) -> PreFilterState:
    counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
    required = RequiredNodeAffinity.of(pod)
    tables = [counter.table(c.selector, pod.metadata.namespace) for c in constraints]
    for node in nodes:
        if node.node is None:
            continue
        labels = node.labels
        if not has_all_topology_keys(labels, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not constraint.includes(pod, node, required):
                continue
            value = labels[constraint.topology_key]
            domain = counts[index]
            domain[value] = domain.get(value, 0) + tables[index].count(node)
    paths = []
    for domain in counts:
        path = CriticalPaths()
        for value, num in domain.items():
            path = path.updated(value, num)
        paths.append(path)
    return PreFilterState(constraints, tuple(paths), counts)


def violated(state: PreFilterState, pod: api.Pod, node: NodeInfo) -> tuple[bool, bool]:
    """(missing a topology label, skew too large) for the pod on the node."""
    labels = node.labels
    pod_labels = pod.metadata.labels
    for index, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            return True, False
        self_match = 1 if constraint.selector.matches(pod_labels) else 0
        skew = state.match_counts[index].get(value, 0) + self_match - state.min_match_num(index)
        if skew > constraint.max_skew:
            return False, True
    return False, False
