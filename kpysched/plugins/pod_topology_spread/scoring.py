"""PreScore/Score/NormalizeScore half: ScheduleAnyway constraints.

A node's raw score sums, per constraint, `matching pods in its domain * weight
+ (maxSkew - 1)`, the weight being log(number of domains among the candidate
nodes + 2) so that small topologies are not watered down by big ones. Domains
are counted over every node of the snapshot, but only domains that some
candidate node belongs to. The hostname key is special: its counts are taken
per node at Score time and its domain count is the number of candidate nodes.
NormalizeScore reverses the scale: fewest matching pods scores 100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.interfaces import MAX_NODE_SCORE, NodeScore
from kpysched.objects import api
from kpysched.plugins.node_affinity import RequiredNodeAffinity
from kpysched.plugins.pod_topology_spread.common import (
    LABEL_HOSTNAME,
    Constraint,
    MatchCounter,
    NodeCounts,
    has_all_topology_keys,
)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    # Candidate nodes lacking a topology key: they score 0 after normalisation.
    ignored_nodes: frozenset[str]
    # Per constraint: topology value -> matching pods (hostname constraints: empty).
    pod_counts: tuple[dict[str, int], ...]
    weights: tuple[float, ...]
    # Per constraint: matching pods per node (hostname constraints count at Score).
    tables: tuple[NodeCounts, ...]


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def _go_round(value: float) -> int:
    """Go's math.Round for a non-negative value: halves round up."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


def compute_state(pod: api.Pod, constraints: tuple[Constraint, ...],
                  candidates: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo],
                  require_all_topologies: bool, counter: MatchCounter) -> PreScoreState:
    ignored: set[str] = set()
    pod_counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
    for node in candidates:
        labels = node.labels
        if require_all_topologies and not has_all_topology_keys(labels, constraints):
            ignored.add(node.name)
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key != LABEL_HOSTNAME:
                # A node without the key (allowed for system defaults) joins domain "".
                pod_counts[index].setdefault(labels.get(constraint.topology_key, ""), 0)
    weights = tuple(
        topology_normalizing_weight(len(candidates) - len(ignored)
                                    if c.topology_key == LABEL_HOSTNAME else len(pod_counts[i]))
        for i, c in enumerate(constraints))

    required = RequiredNodeAffinity.of(pod)
    tables = tuple(counter.table(c.selector, pod.metadata.namespace) for c in constraints)
    for node in all_nodes:
        if node.node is None:
            continue
        labels = node.labels
        if require_all_topologies and not has_all_topology_keys(labels, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not constraint.includes(pod, node, required):
                continue
            domain = pod_counts[index]
            value = labels.get(constraint.topology_key, "")
            if value in domain:
                domain[value] += tables[index].count(node)
    return PreScoreState(constraints, frozenset(ignored), pod_counts, weights, tables)


def raw_score(state: PreScoreState, node: NodeInfo) -> int:
    if node.name in state.ignored_nodes:
        return 0
    labels = node.labels
    total = 0.0
    for index, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            continue
        if constraint.topology_key == LABEL_HOSTNAME:
            count = state.tables[index].count(node)
        else:
            count = state.pod_counts[index][value]
        total += count * state.weights[index] + (constraint.max_skew - 1)
    return _go_round(total)


def normalize(state: PreScoreState, scores: list[NodeScore]) -> None:
    counted = [entry.score for entry in scores if entry.name not in state.ignored_nodes]
    lowest = min(counted, default=0)
    highest = max(counted, default=0)
    for entry in scores:
        if entry.name in state.ignored_nodes:
            entry.score = 0
        elif highest == 0:
            entry.score = MAX_NODE_SCORE
        else:
            entry.score = MAX_NODE_SCORE * (highest + lowest - entry.score) // highest
