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

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import ABSENT, LabelIndex
from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.taints import find_untolerated_taint
from kpysched.plugins.node_affinity import RequiredNodeAffinity
from kpysched.plugins.pod_topology_spread.common import (
    HONOR,
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
    return _with_critical_paths(constraints, counts)


def _with_critical_paths(constraints: tuple[Constraint, ...],
                         counts: tuple[dict[str, int], ...]) -> PreFilterState:
    """The state for these per-domain counts, each constraint's two smallest domains
    found in the order the domains were first seen."""
    paths = []
    for domain in counts:
        path = CriticalPaths()
        for value, num in domain.items():
            path = path.updated(value, num)
        paths.append(path)
    return PreFilterState(constraints, tuple(paths), counts)


def compute_state_rows(pod: api.Pod, constraints: tuple[Constraint, ...],
                       snapshot: Snapshot, counter: MatchCounter) -> PreFilterState:
    """`compute_state` over every snapshot row with the label columns: the same
    domains (in the order their first node comes), counts and critical paths."""
    infos = snapshot.node_infos
    labels = snapshot.labels
    columns = [labels.column(c.topology_key) for c in constraints]
    # A row lacking a key (a NodeInfo with no Node has no labels at all) counts nowhere.
    eligible = np.ones(len(infos), dtype=np.bool_)
    for column in columns:
        eligible &= column.codes != ABSENT
    affinity: npt.NDArray[np.bool_] | None = None
    tolerated: npt.NDArray[np.bool_] | None = None
    counts: tuple[dict[str, int], ...] = ()
    for constraint, column in zip(constraints, columns, strict=True):
        included = eligible
        if constraint.node_affinity_policy == HONOR:
            if affinity is None:
                affinity = RequiredNodeAffinity.of(pod).rows(labels)
            included = included & affinity
        if constraint.node_taints_policy == HONOR:
            if tolerated is None:
                tolerated = _tolerated_rows(pod, snapshot)
            included = included & tolerated
        rows = np.flatnonzero(included)
        codes = column.codes[rows]
        matching = counter.rows(constraint.selector, pod.metadata.namespace).counts(
            infos, snapshot.columns.version)
        sums = np.bincount(codes, weights=matching[rows], minlength=len(column.values))
        # Each domain once, in the order of its first row, as the per-node pass adds them.
        _, first_rows = np.unique(codes, return_index=True)
        ordered = codes[np.sort(first_rows)].tolist()
        counts = (*counts, {column.values[code]: int(sums[code]) for code in ordered})
    return _with_critical_paths(constraints, counts)


def _tolerated_rows(pod: api.Pod, snapshot: Snapshot) -> npt.NDArray[np.bool_]:
    """Rows whose taints the pod tolerates; only tainted rows need a look."""
    tolerated = np.ones(len(snapshot.node_infos), dtype=np.bool_)
    tolerations = pod.spec.tolerations
    for row in np.flatnonzero(snapshot.columns.taint_count > 0).tolist():
        node = snapshot.node_infos[row].node
        if node is not None and find_untolerated_taint(node.spec.taints, tolerations):
            tolerated[row] = False
    return tolerated


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


def passing_rows(state: PreFilterState, pod: api.Pod,
                 labels: LabelIndex) -> npt.NDArray[np.bool_]:
    """`violated` for every snapshot row at once: the rows that have every topology key
    and keep every constraint's skew within maxSkew. Each constraint costs one lookup
    table over its key's values (the domains), indexed by the rows' value codes."""
    passing = np.ones(len(labels), dtype=np.bool_)
    pod_labels = pod.metadata.labels
    for index, constraint in enumerate(state.constraints):
        column = labels.column(constraint.topology_key)
        counts = state.match_counts[index]
        self_match = 1 if constraint.selector.matches(pod_labels) else 0
        allowed = constraint.max_skew - self_match + state.min_match_num(index)
        if allowed < 0:
            return np.zeros(len(labels), dtype=np.bool_)  # even an empty domain is too full
        # Rows lacking the key fail (missing label), as do the domains over the limit;
        # only the counted domains are looked at, however many exist.
        passing &= column.present()
        passing &= ~column.any_of([value for value, count in counts.items()
                                   if count > allowed])
    return passing
