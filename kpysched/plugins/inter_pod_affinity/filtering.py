"""PreFilter/Filter half of InterPodAffinity.

PreFilter walks the cluster once and counts, per topology pair (key, value):
existing pods whose required anti-affinity terms select the incoming pod (only
nodes hosting such pods are visited), existing pods matching all of the incoming
pod's required affinity terms, and existing pods matching each of its required
anti-affinity terms. Filter then decides a node from its labels and those
counters alone, in O(terms).

The state is never changed in place: AddPod/RemovePod (preemption, nominated
pods) write an updated copy into the CycleState, so a cloned CycleState can
never see another copy's changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelIndex
from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.pod_affinity import AffinityTerm
from kpysched.plugins._shared.row_counts import RowCountsCache
from kpysched.plugins.inter_pod_affinity.common import (
    IncomingTerm,
    NamespaceGate,
    NamespaceLabels,
    TopologyCounts,
    counted_under,
    incoming_terms,
    matches_all,
    matching_one,
)
from kpysched.plugins.inter_pod_affinity.existing_terms import (
    ExistingTerms,
    worth_keeping,
)
from kpysched.plugins.inter_pod_affinity.pod_columns import COLUMN_TERMS, PodColumns


@dataclass(frozen=True, slots=True)
class PreFilterState:
    # Existing pods whose required anti-affinity terms select the incoming pod.
    existing_anti_affinity_counts: TopologyCounts
    # Existing pods matching all of the incoming pod's required affinity terms.
    affinity_counts: TopologyCounts
    # Existing pods matching the incoming pod's required anti-affinity terms.
    anti_affinity_counts: TopologyCounts
    pod: PodInfo
    required: tuple[IncomingTerm, ...]
    required_anti: tuple[IncomingTerm, ...]
    # The incoming pod's namespace labels (empty when the namespace is unknown).
    namespace_labels: Mapping[str, str]
    # The incoming pod matches all of its own required affinity terms.
    matches_itself: bool

    def with_pod(self, other: PodInfo, node: NodeInfo, delta: int) -> PreFilterState:
        """The state with `other` added on `node` (delta 1) or removed (delta -1)."""
        labels = node.labels
        pod = other.pod
        existing = _updated(
            self.existing_anti_affinity_counts,
            (term for term in other.pod_affinity.required_anti
             if term.matches(self.pod.pod, self.namespace_labels)), labels, delta)
        affinity = _updated(self.affinity_counts,
                            self.required if matches_all(self.required, pod) else (),
                            labels, delta)
        anti = _updated(self.anti_affinity_counts,
                        (term for term in self.required_anti if term.matches(pod)),
                        labels, delta)
        if (existing is self.existing_anti_affinity_counts and affinity is self.affinity_counts
                and anti is self.anti_affinity_counts):
            return self
        return replace(self, existing_anti_affinity_counts=existing, affinity_counts=affinity,
                       anti_affinity_counts=anti)


def _updated(counts: TopologyCounts, terms: Iterable[AffinityTerm | IncomingTerm],
             labels: Mapping[str, str], delta: int) -> TopologyCounts:
    """`counts` itself when no term lands on a pair of the node, else an updated copy."""
    pairs = [(term.topology_key, value) for term in terms
             if (value := labels.get(term.topology_key)) is not None]
    if not pairs:
        return counts
    updated = counts.copy()
    for key, value in pairs:
        updated.add(key, value, delta)
    return updated


def _existing_anti_affinity_counts(pod: api.Pod, namespace_labels: Mapping[str, str],
                                   snapshot: Snapshot) -> TopologyCounts:
    counts = TopologyCounts()
    # Replicas share their parsed terms: judge each distinct term object once.
    verdicts: dict[int, bool] = {}
    for info in snapshot.have_pods_with_required_anti_affinity.values():
        labels = info.labels
        for existing in info.pods_with_required_anti_affinity.values():
            for term in existing.pod_affinity.required_anti:
                selected = verdicts.get(id(term))
                if selected is None:
                    selected = verdicts[id(term)] = term.matches(pod, namespace_labels)
                if selected:
                    value = labels.get(term.topology_key)
                    if value is not None:
                        counts.add(term.topology_key, value, 1)
    return counts


def required_anti_terms(node: NodeInfo) -> Iterator[tuple[AffinityTerm, int]]:
    """ExistingTerms' reading of a node for Filter: each required anti-affinity term of
    its pods, weight 1."""
    for existing in node.pods_with_required_anti_affinity.values():
        for term in existing.pod_affinity.required_anti:
            yield term, 1


def _existing_anti_affinity_counts_rows(pod: api.Pod, namespace_labels: Mapping[str, str],
                                        snapshot: Snapshot,
                                        existing: ExistingTerms[AffinityTerm]
                                        ) -> TopologyCounts:
    """`_existing_anti_affinity_counts` from the rows holding each distinct term: the
    terms are judged once each, the pods they stand for summed per domain by numpy."""
    counts = TopologyCounts()
    for term, _, held in existing.current(snapshot.node_infos, snapshot.columns.version):
        if term.matches(pod, namespace_labels):
            key = term.topology_key
            column = snapshot.labels.column(key)
            counts.add_domain_sums(key, column, held.domain_sums(key, column))
    return counts


def _incoming_counts(required: tuple[IncomingTerm, ...], required_anti: tuple[IncomingTerm, ...],
                     nodes: Sequence[NodeInfo]) -> tuple[TopologyCounts, TopologyCounts]:
    affinity, anti = TopologyCounts(), TopologyCounts()
    if not required and not required_anti:
        return affinity, anti
    gate = NamespaceGate((*required, *required_anti))
    known = gate.known
    for info in nodes:
        if not info.pods:
            continue
        labels = info.labels
        for existing in info.pods.values():
            pod = existing.pod
            namespace = pod.metadata.namespace
            admitted = known.get(namespace)
            if not (gate.admits(namespace) if admitted is None else admitted):
                continue
            if required and matches_all(required, pod):
                for term in required:
                    value = labels.get(term.topology_key)
                    if value is not None:
                        affinity.add(term.topology_key, value, 1)
            for term in required_anti:
                if term.matches(pod):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        anti.add(term.topology_key, value, 1)
    return affinity, anti


def _incoming_counts_rows(required: tuple[IncomingTerm, ...],
                          required_anti: tuple[IncomingTerm, ...], snapshot: Snapshot,
                          row_counts: RowCountsCache, namespaces_version: int
                          ) -> tuple[TopologyCounts, TopologyCounts]:
    """`_incoming_counts` over every snapshot row: matching pods counted per node once
    and kept while the node's pods stay the same (and, for a term that picks namespaces
    by their labels, while no namespace changed: `namespaces_version`), then summed per
    domain over the label columns."""
    rows, labels, versions = snapshot.node_infos, snapshot.labels, snapshot.columns.version
    affinity, anti = TopologyCounts(), TopologyCounts()
    if required:
        matching_all = row_counts.get(
            ("all", tuple(term.term for term in required)),
            lambda node: sum(1 for other in node.pods.values()
                             if matches_all(required, other.pod)),
            counted_under(required, namespaces_version))
        matching_all.counts(rows, versions)
        for term in required:
            key = term.topology_key
            column = labels.column(key)
            affinity.add_domain_sums(key, column, matching_all.domain_sums(key, column))
    for term in required_anti:
        matching = row_counts.get(("one", term.term), matching_one(term),
                                  counted_under((term,), namespaces_version))
        matching.counts(rows, versions)
        key = term.topology_key
        column = labels.column(key)
        anti.add_domain_sums(key, column, matching.domain_sums(key, column))
    return affinity, anti


# RowCounts kept across cycles for the incoming pods' required terms (one per distinct
# anti-affinity term, one per set of affinity terms).
KEPT_ROW_COUNTS = 64


def _columns_pay(required: tuple[IncomingTerm, ...],
                 required_anti: tuple[IncomingTerm, ...]) -> bool:
    """Whether to count over pod columns rather than pod by pod. Counts kept per node
    across cycles beat both for the replicas of a workload (only changed nodes are
    counted again), so columns are for what they cannot keep: more terms than are kept
    (each term counted afresh every cycle; a tenant's pod may bring thousands). Columns
    cost a read of every pod, so they pay from a few terms on (pod_columns.COLUMN_TERMS)."""
    terms = len(required) + len(required_anti)
    return terms >= COLUMN_TERMS and len(required_anti) + bool(required) > KEPT_ROW_COUNTS


def _incoming_counts_columns(required: tuple[IncomingTerm, ...],
                             required_anti: tuple[IncomingTerm, ...],
                             snapshot: Snapshot) -> tuple[TopologyCounts, TopologyCounts]:
    """`_incoming_counts` over every snapshot row, each term judged over all pods at once
    (pod_columns.py)."""
    columns = PodColumns(snapshot.node_infos, (*required, *required_anti))
    labels = snapshot.labels
    affinity, anti = TopologyCounts(), TopologyCounts()
    if required:
        matching_all = columns.term_mask(required[0])
        for term in required[1:]:
            matching_all = matching_all & columns.term_mask(term)
        for term in required:
            key = term.topology_key
            for value, count in columns.by_domain(labels.column(key), matching_all):
                affinity.add(key, value, count)
    for term in required_anti:
        key = term.topology_key
        for value, count in columns.by_domain(labels.column(key), columns.term_mask(term)):
            anti.add(key, value, count)
    return affinity, anti


def compute_state(pod: PodInfo, nodes: Sequence[NodeInfo], snapshot: Snapshot,
                  namespace_labels: NamespaceLabels,
                  row_counts: RowCountsCache | None = None,
                  existing: ExistingTerms[AffinityTerm] | None = None, *,
                  unresolved_selectors: bool = False,
                  namespaces_version: int = 0) -> PreFilterState:
    """PreFilter's counts; over the label columns when `nodes` are the snapshot's rows
    (the incoming pod's terms over pod columns when that pays, else kept per node in
    `row_counts` when given, valid while `namespaces_version` (the handle's
    namespace_labels_version, read before `namespace_labels` is) stays the same;
    `existing` when given), else node by node. `unresolved_selectors`: v1.36's reading
    of the incoming terms' namespaceSelector (common.py)."""
    own_labels = namespace_labels(pod.namespace)
    own_labels = own_labels if own_labels is not None else {}
    required = incoming_terms(pod.pod_affinity.required, namespace_labels,
                              unresolved_selectors=unresolved_selectors)
    required_anti = incoming_terms(pod.pod_affinity.required_anti, namespace_labels,
                                   unresolved_selectors=unresolved_selectors)
    counted = None
    if nodes is snapshot.node_infos and _columns_pay(required, required_anti):
        counted = _incoming_counts_columns(required, required_anti, snapshot)
    elif row_counts is not None and nodes is snapshot.node_infos and (required or required_anti):
        counted = _incoming_counts_rows(required, required_anti, snapshot, row_counts,
                                        namespaces_version)
    affinity, anti = counted or _incoming_counts(required, required_anti, nodes)
    holding = len(snapshot.have_pods_with_required_anti_affinity)
    existing_counts = (
        _existing_anti_affinity_counts_rows(pod.pod, own_labels, snapshot, existing)
        if (existing is not None and nodes is snapshot.node_infos
            and worth_keeping(holding, len(nodes)))
        else _existing_anti_affinity_counts(pod.pod, own_labels, snapshot))
    return PreFilterState(
        existing_anti_affinity_counts=existing_counts,
        affinity_counts=affinity, anti_affinity_counts=anti, pod=pod, required=required,
        required_anti=required_anti, namespace_labels=own_labels,
        matches_itself=matches_all(required, pod.pod))


def satisfies_pod_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in state.required:
        value = labels.get(term.topology_key)
        if value is None:
            # The node must carry every topology key of the terms.
            return False
        if state.affinity_counts.get(term.topology_key, value) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group whose affinity selects itself may go anywhere that has
    # the topology keys, as long as no pod in the cluster matches the terms yet.
    return not state.affinity_counts and state.matches_itself


def satisfies_pod_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.anti_affinity_counts
    if not counts:
        return True
    for term in state.required_anti:
        value = labels.get(term.topology_key)
        if value is not None and counts.get(term.topology_key, value) > 0:
            return False
    return True


def satisfies_existing_pods_anti_affinity(state: PreFilterState,
                                          labels: Mapping[str, str]) -> bool:
    for key, values in state.existing_anti_affinity_counts.items():
        value = labels.get(key)
        if value is not None and values.get(value, 0) > 0:
            return False
    return True


BoolArray = npt.NDArray[np.bool_]


def passing_rows(state: PreFilterState, labels: LabelIndex) -> BoolArray:
    """The three Filter checks for every snapshot row at once, from the label columns
    and PreFilter's counts: the same verdicts as running them node by node."""
    passing = np.ones(len(labels), dtype=np.bool_)
    if state.required:
        pods_exist = np.ones(len(labels), dtype=np.bool_)
        for term in state.required:
            column = labels.column(term.topology_key)
            passing &= column.present()  # every topology key of the terms is needed
            pods_exist &= state.affinity_counts.rows_counted(term.topology_key, column)
        # The first pod of a group selecting itself may go where no match exists yet.
        if state.affinity_counts or not state.matches_itself:
            passing &= pods_exist
    if state.anti_affinity_counts:
        for term in state.required_anti:
            passing &= ~state.anti_affinity_counts.rows_counted(
                term.topology_key, labels.column(term.topology_key))
    existing = state.existing_anti_affinity_counts
    for key in existing.counted_keys():
        passing &= ~existing.rows_counted(key, labels.column(key))
    return passing
