"""PreScore/Score/NormalizeScore half of InterPodAffinity.

PreScore sums weights per topology pair (key, value) over existing pods, where
each pod contributes at its own node's label values:
  + w  for each preferred affinity term of the incoming pod the pod matches,
  - w  for each preferred anti-affinity term of the incoming pod it matches,
  + hardPodAffinityWeight for each required affinity term of the pod that selects
       the incoming pod,
  + w / - w for each preferred affinity / anti-affinity term of the pod that
       selects the incoming pod.
Unless the incoming pod has preferred terms, only pods with affinity can add
anything, so only they (on the nodes hosting them) are visited. The incoming pod's
preferred terms are counted per node and kept across cycles (a workload's replicas
bring the same terms; a term that picks namespaces by their labels until a namespace
changes), or, for more terms than are kept, judged over every pod at once in numpy
(pod_columns.py) instead of pod by pod. Every node of the snapshot counts, not just
the feasible ones. The sums over label columns stay sums per domain code until
something reads them by value (score_sums.py). Score adds up the pairs of a node;
NormalizeScore maps [min, max] onto [0, 100].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.interfaces import MAX_NODE_SCORE, NodeScore
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.pod_affinity import AffinityTerm, AffinityTerms, WeightedAffinityTerm
from kpysched.plugins._shared.row_counts import RowCountsCache
from kpysched.plugins.inter_pod_affinity.common import (
    IncomingTerm,
    NamespaceGate,
    counted_under,
    matching_one,
)
from kpysched.plugins.inter_pod_affinity.existing_terms import ExistingTerms
from kpysched.plugins.inter_pod_affinity.pod_columns import COLUMN_TERMS, PodColumns
from kpysched.plugins.inter_pod_affinity.score_sums import ScoreSums, TopologyScore


@dataclass(frozen=True, slots=True)
class PreScoreState:
    topology_score: ScoreSums


def _add(scores: TopologyScore, key: str, value: str, weight: int) -> None:
    values = scores.get(key)
    if values is None:
        values = scores[key] = {}
    values[value] = values.get(value, 0) + weight


def _add_incoming_terms(scores: TopologyScore, existing: PodInfo, labels: Mapping[str, str],
                        preferred: tuple[IncomingTerm, ...],
                        preferred_anti: tuple[IncomingTerm, ...]) -> None:
    """The incoming pod's preferred terms that `existing` matches."""
    existing_pod = existing.pod
    for sign, incoming_terms in ((1, preferred), (-1, preferred_anti)):
        for incoming_term in incoming_terms:
            if incoming_term.matches(existing_pod):
                value = labels.get(incoming_term.topology_key)
                if value is not None:
                    _add(scores, incoming_term.topology_key, value, sign * incoming_term.weight)


def _add_existing_terms(scores: TopologyScore, terms: AffinityTerms, labels: Mapping[str, str],
                        incoming: api.Pod, namespace_labels: Mapping[str, str],
                        hard_weight: int) -> None:
    """The existing pod's own terms that select the incoming pod."""
    if hard_weight > 0:
        for term in terms.required:
            if term.matches(incoming, namespace_labels):
                value = labels.get(term.topology_key)
                if value is not None:
                    _add(scores, term.topology_key, value, hard_weight)
    weighted: tuple[WeightedAffinityTerm, ...]
    for sign, weighted in ((1, terms.preferred), (-1, terms.preferred_anti)):
        for entry in weighted:
            if entry.term.matches(incoming, namespace_labels):
                value = labels.get(entry.term.topology_key)
                if value is not None:
                    _add(scores, entry.term.topology_key, value, sign * entry.weight)


def topology_score(
    incoming: PodInfo, nodes: Iterable[NodeInfo], *, all_pods: bool,
    preferred: tuple[IncomingTerm, ...], preferred_anti: tuple[IncomingTerm, ...],
    namespace_labels: Mapping[str, str], hard_weight: int,
) -> TopologyScore:
    """Weights per topology pair; `all_pods` visits every pod of `nodes` (the incoming pod
    has preferred terms), otherwise only the pods with affinity."""
    scores: TopologyScore = {}
    pod = incoming.pod
    gate = NamespaceGate((*preferred, *preferred_anti))
    known = gate.known
    for info in nodes:
        labels = info.labels
        if not labels:
            continue
        for existing in (info.pods if all_pods else info.pods_with_affinity).values():
            if all_pods:
                namespace = existing.pod.metadata.namespace
                admitted = known.get(namespace)
                if gate.admits(namespace) if admitted is None else admitted:
                    _add_incoming_terms(scores, existing, labels, preferred, preferred_anti)
            terms = existing.pod_affinity
            if terms.required or terms.preferred or terms.preferred_anti:
                _add_existing_terms(scores, terms, labels, pod, namespace_labels, hard_weight)
    return scores


# Up to this many preferred terms, the incoming pod's terms are counted per node and
# kept across cycles. A workload's pods carry one or a few; a pod with many (a tenant's
# thousands) would fill the kept counts (shared with PreFilter, filtering.KEPT_ROW_COUNTS)
# with terms no other pod repeats, and each would be counted pod by pod in its first
# cycle: columns judge those faster.
ROW_TERMS = 4


def rows_pay(preferred: tuple[IncomingTerm, ...],
             preferred_anti: tuple[IncomingTerm, ...]) -> bool:
    """Whether to count the incoming pod's preferred terms per node, kept across cycles
    (`incoming_terms_rows_score`): the replicas of a workload bring the same terms cycle
    after cycle, so only the nodes whose pods changed are counted again (all of them
    after a namespace changed, for a term that picks namespaces by their labels)."""
    return 0 < len(preferred) + len(preferred_anti) <= ROW_TERMS


def incoming_terms_rows_score(snapshot: Snapshot, preferred: tuple[IncomingTerm, ...],
                              preferred_anti: tuple[IncomingTerm, ...],
                              row_counts: RowCountsCache,
                              namespaces_version: int) -> ScoreSums:
    """What `_add_incoming_terms` adds over every pod of the snapshot, from each term's
    matching pods per node (kept in `row_counts`, shared with PreFilter's counts of the
    same terms, under `namespaces_version` (the handle's namespace_labels_version) for a
    term that reads namespace labels) summed per domain of its topology key, kept so
    (score_sums.py). A domain any matching pod sits under is kept even when the terms'
    weights cancel there, as the walk keeps it."""
    scores = ScoreSums()
    rows, labels = snapshot.node_infos, snapshot.labels
    for sign, terms in ((1, preferred), (-1, preferred_anti)):
        for term in terms:
            matching = row_counts.get(("one", term.term), matching_one(term),
                                      counted_under((term,), namespaces_version))
            matching.counts(rows, snapshot.columns.version)
            key = term.topology_key
            column = labels.column(key)
            pods = matching.domain_sums(key, column)
            scores.add_codes(key, column, pods * (sign * term.weight), pods > 0)
    return scores


def columns_pay(preferred: tuple[IncomingTerm, ...],
                preferred_anti: tuple[IncomingTerm, ...]) -> bool:
    """Whether to judge the incoming pod's preferred terms over pod columns. Nothing is
    kept across cycles for them (unlike required terms), so columns pay from a couple
    of terms on (pod_columns.COLUMN_TERMS); one term stays a walk over the pods."""
    return len(preferred) + len(preferred_anti) >= COLUMN_TERMS


def incoming_terms_score(snapshot: Snapshot, preferred: tuple[IncomingTerm, ...],
                         preferred_anti: tuple[IncomingTerm, ...]) -> TopologyScore:
    """What `_add_incoming_terms` adds over every pod of the snapshot, from pod columns:
    equal terms merged (weights summed), each judged over all pods at once, the weights
    summed per pod under each topology key and then per domain. A pair any matching pod
    sits under is kept even when its weights cancel to 0, as the walk keeps it."""
    merged: dict[AffinityTerm, tuple[IncomingTerm, int]] = {}
    for sign, terms in ((1, preferred), (-1, preferred_anti)):
        for term in terms:
            first, weight = merged.get(term.term, (term, 0))
            merged[term.term] = (first, weight + sign * term.weight)
    columns = PodColumns(snapshot.node_infos, (first for first, _ in merged.values()))
    weights: dict[str, npt.NDArray[np.int64]] = {}
    matched: dict[str, npt.NDArray[np.bool_]] = {}
    for term, weight in merged.values():
        mask = columns.term_mask(term)
        key = term.topology_key
        if key in weights:
            weights[key] += mask * weight
            matched[key] |= mask
        else:
            weights[key] = mask * np.int64(weight)
            matched[key] = mask.copy()
    scores: TopologyScore = {}
    for key, per_pod in weights.items():
        for value, total in columns.by_domain(snapshot.labels.column(key), matched[key],
                                              per_pod):
            _add(scores, key, value, total)
    return scores


def add_scores(scores: TopologyScore, more: TopologyScore) -> None:
    """Add `more`'s pairs into `scores` (pairs summing to 0 kept)."""
    for key, values in more.items():
        for value, weight in values.items():
            _add(scores, key, value, weight)


def scoring_terms(hard_weight: int) -> Callable[[NodeInfo], Iterator[tuple[AffinityTerm, int]]]:
    """ExistingTerms' reading of a node for PreScore: each term of its pods with affinity
    that can select an incoming pod, with the weight it adds then (hardPodAffinityWeight
    for required affinity, +w / -w for preferred affinity / anti-affinity)."""
    def terms_of(node: NodeInfo) -> Iterator[tuple[AffinityTerm, int]]:
        for existing in node.pods_with_affinity.values():
            terms = existing.pod_affinity
            if hard_weight > 0:
                for term in terms.required:
                    yield term, hard_weight
            for entry in terms.preferred:
                yield entry.term, entry.weight
            for entry in terms.preferred_anti:
                yield entry.term, -entry.weight
    return terms_of


def existing_terms_score(incoming: PodInfo, snapshot: Snapshot,
                         existing: ExistingTerms[AffinityTerm],
                         namespace_labels: Mapping[str, str]) -> ScoreSums:
    """topology_score when the incoming pod has no preferred terms (only existing pods'
    terms can add anything), from the rows holding each distinct term, summed per
    domain code (score_sums.py)."""
    scores = ScoreSums()
    pod = incoming.pod
    for term, weight, held in existing.current(snapshot.node_infos,
                                               snapshot.columns.version):
        if term.matches(pod, namespace_labels):
            key = term.topology_key
            column = snapshot.labels.column(key)
            pods = held.domain_sums(key, column)
            scores.add_codes(key, column, pods * weight, pods > 0)
    return scores


def node_score(state: PreScoreState, node: NodeInfo) -> int:
    labels = node.labels
    total = 0
    for key, values in state.topology_score.as_dict().items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def rows_score(state: PreScoreState, snapshot: Snapshot,
               rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
    """`node_score` of every snapshot row, or of `rows`, at once: each topology key's
    pair weights looked up by the rows' value codes."""
    return state.topology_score.rows(snapshot.labels, rows)


def normalize_rows(scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`normalize` over an array: the same float64 steps in the same order, truncated."""
    if not scores.size:
        return scores.copy()
    lowest = int(scores.min())
    spread = int(scores.max()) - lowest
    if spread <= 0:
        return np.zeros(scores.shape, dtype=np.int64)
    scaled = float(MAX_NODE_SCORE) * ((scores - lowest).astype(np.float64) / float(spread))
    normalized: npt.NDArray[np.int64] = scaled.astype(np.int64)
    return normalized


def normalize(scores: list[NodeScore]) -> None:
    """Min-max scaling onto [0, 100] in float64, truncated; all equal scores become 0."""
    if not scores:
        return
    lowest = min(entry.score for entry in scores)
    spread = max(entry.score for entry in scores) - lowest
    for entry in scores:
        scaled = 0.0
        if spread > 0:
            scaled = float(MAX_NODE_SCORE) * (float(entry.score - lowest) / float(spread))
        entry.score = int(scaled)
