"""Pieces both halves of InterPodAffinity share: the incoming pod's terms with their
namespace selectors resolved, and per-topology-pair counters.

Upstream resolves the incoming pod's namespaceSelector once per cycle into the
set of namespace names it selects (an empty selector stays "every namespace").
Here the same answer is computed lazily per namespace and remembered for the
cycle: an unknown namespace is never selected, as a name the namespace lister
does not return. v1.36 resolves the names but keeps the selector too, and matches
it against no labels at all: a selector that an unlabelled namespace satisfies
(NotIn, DoesNotExist) then selects every namespace (`unresolved_selectors`); v1.37
drops the selector once resolved. Existing pods' terms, by contrast, are matched against the
incoming pod's namespace labels (an empty set when the namespace is unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelColumn
from kpysched.cache.node_info import NodeInfo
from kpysched.objects import api
from kpysched.objects.pod_affinity import AffinityTerm, WeightedAffinityTerm

NamespaceLabels = Callable[[str], Mapping[str, str] | None]
BoolArray = npt.NDArray[np.bool_]


@dataclass(slots=True, eq=False)
class IncomingTerm:
    """One of the incoming pod's terms, matching existing pods without namespace lookups
    beyond the first per namespace."""

    term: AffinityTerm
    namespace_labels: NamespaceLabels
    weight: int = 0
    # v1.36: the kept selector satisfied by no labels, so every namespace is selected.
    every_namespace: bool = False
    _selected: dict[str, bool] = field(default_factory=dict)

    @property
    def topology_key(self) -> str:
        return self.term.topology_key

    def selects_namespace(self, namespace: str) -> bool:
        selected = self._selected.get(namespace)
        if selected is None:
            term = self.term
            if (namespace in term.namespaces or term.namespace_selector.empty
                    or self.every_namespace):
                selected = True
            elif term.namespace_selector.nothing:
                selected = False
            else:
                labels = self.namespace_labels(namespace)
                selected = labels is not None and term.namespace_selector.matches(labels)
            self._selected[namespace] = selected
        return selected

    def matches(self, pod: api.Pod) -> bool:
        metadata = pod.metadata
        return (self.selects_namespace(metadata.namespace)
                and self.term.selector.matches(metadata.labels))


class NamespaceGate:
    """Whether any of some terms can select pods of a namespace: lets a walk over every
    pod skip, with one lookup, the pods of namespaces no term looks at."""

    __slots__ = ("_terms", "known")

    def __init__(self, terms: Iterable[IncomingTerm]) -> None:
        self._terms = tuple(terms)
        self.known: dict[str, bool] = {}

    def admits(self, namespace: str) -> bool:
        admitted = self.known.get(namespace)
        if admitted is None:
            admitted = self.known[namespace] = any(
                term.selects_namespace(namespace) for term in self._terms)
        return admitted


_NO_LABELS: Mapping[str, str] = {}


def _selects_unlabelled(term: AffinityTerm, unresolved_selectors: bool) -> bool:
    """Whether v1.36's kept selector, matched against no labels, admits every namespace."""
    selector = term.namespace_selector
    return (unresolved_selectors and not (selector.empty or selector.nothing)
            and selector.matches(_NO_LABELS))


def incoming_terms(terms: Iterable[AffinityTerm], namespace_labels: NamespaceLabels, *,
                   unresolved_selectors: bool = False) -> tuple[IncomingTerm, ...]:
    return tuple(IncomingTerm(term, namespace_labels,
                              every_namespace=_selects_unlabelled(term, unresolved_selectors))
                 for term in terms)


def incoming_weighted_terms(terms: Iterable[WeightedAffinityTerm],
                            namespace_labels: NamespaceLabels, *,
                            unresolved_selectors: bool = False) -> tuple[IncomingTerm, ...]:
    return tuple(IncomingTerm(term.term, namespace_labels, term.weight,
                              _selects_unlabelled(term.term, unresolved_selectors))
                 for term in terms)


def reads_namespace_labels(term: IncomingTerm) -> bool:
    """Whether the term picks namespaces by their labels, which may change without any
    node's pods changing."""
    selector = term.term.namespace_selector
    return not (selector.empty or selector.nothing)


def counted_under(terms: Iterable[IncomingTerm], namespaces_version: int) -> int | None:
    """What the terms' per-node counts depend on beside the nodes' pods (RowCountsCache's
    version): the namespaces' labels (`namespaces_version`, the handle's
    namespace_labels_version) when a term picks namespaces by them, else nothing. A term's
    verdict on a namespace is remembered (IncomingTerm), so counts kept for it hold only
    while no namespace changed."""
    return namespaces_version if any(map(reads_namespace_labels, terms)) else None


def matching_one(term: IncomingTerm) -> Callable[[NodeInfo], int]:
    """How many of a node's pods the term selects (RowCounts' question for one term)."""
    return lambda node: sum(1 for other in node.pods.values() if term.matches(other.pod))


def matches_all(terms: tuple[IncomingTerm, ...], pod: api.Pod) -> bool:
    """Upstream's podMatchesAllAffinityTerms: no terms match nothing."""
    if not terms:
        return False
    return all(term.matches(pod) for term in terms)


class TopologyCounts:
    """Counts per (topology key, value); pairs that drop to zero are forgotten, so an
    empty counter means no pair counts at all.

    A key counted over the snapshot's label columns may stay a sum per domain code of
    its column (`add_domain_sums`): the vector Filter reads those as they are
    (`rows_counted`), and only a reader by value (the per-node Filter, AddPod/RemovePod,
    a diagnosis) turns them into counts per value, once. Per-hostname keys have a domain
    per node, so the round trip through values cost more than the counting."""

    __slots__ = ("_by_code", "_by_key")

    def __init__(self, by_key: dict[str, dict[str, int]] | None = None) -> None:
        self._by_key: dict[str, dict[str, int]] = by_key if by_key is not None else {}
        # Keys not yet read by value: their column and the (positive) count per code.
        self._by_code: dict[str, tuple[LabelColumn, npt.NDArray[np.int64]]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_key) or bool(self._by_code)

    def __repr__(self) -> str:
        return f"TopologyCounts({self.pairs()!r})"

    def _by_value(self) -> dict[str, dict[str, int]]:
        """The counts per value, the keys kept by code turned into them first."""
        if self._by_code:
            pending, self._by_code = self._by_code, {}
            for key, (column, sums) in pending.items():
                found = np.flatnonzero(sums)
                values = column.values
                self.add_all(key, zip([values[code] for code in found.tolist()],
                                      sums[found].tolist(), strict=True))
        return self._by_key

    def get(self, key: str, value: str) -> int:
        values = self._by_value().get(key)
        return 0 if values is None else values.get(value, 0)

    def values_of(self, key: str) -> Mapping[str, int] | None:
        """Counts per value under one topology key (None when none counts)."""
        return self._by_value().get(key)

    def items(self) -> Iterable[tuple[str, dict[str, int]]]:
        return self._by_value().items()

    def counted_keys(self) -> tuple[str, ...]:
        """The keys with a count, without turning counts by code into counts by value."""
        return (*self._by_key, *self._by_code)

    def pairs(self) -> dict[tuple[str, str], int]:
        return {(key, value): count for key, values in self._by_value().items()
                for value, count in values.items()}

    def add(self, key: str, value: str, delta: int) -> None:
        values = self._by_value().setdefault(key, {})
        count = values.get(value, 0) + delta
        if count:
            values[value] = count
        else:
            values.pop(value, None)
            if not values:
                del self._by_key[key]

    def add_all(self, key: str, pairs: Iterable[tuple[str, int]]) -> None:
        """`add` for many pairs of one key, each value once (a domain sum per value): a key
        not counted yet takes them in one go (per-hostname keys have a domain per node)."""
        if key in self._by_key or key in self._by_code:
            for value, delta in pairs:
                self.add(key, value, delta)
            return
        taken = {value: delta for value, delta in pairs if delta}
        if taken:
            self._by_key[key] = taken

    def add_domain_sums(self, key: str, column: LabelColumn,
                        sums: npt.NDArray[np.int64]) -> None:
        """Add a count (>= 0) per domain code of `column`, the key's label column in the
        snapshot (`sums[code]` for `column.values[code]`), kept so until read by value."""
        if not sums.any():
            return
        if key in self._by_key:
            found = np.flatnonzero(sums)
            values = column.values
            self.add_all(key, zip([values[code] for code in found.tolist()],
                                  sums[found].tolist(), strict=True))
            return
        kept = self._by_code.get(key)
        if kept is None:
            self._by_code[key] = (column, sums)
        elif kept[0] is column and len(kept[1]) == len(sums):
            self._by_code[key] = (column, kept[1] + sums)
        else:
            self._by_value()
            self.add_domain_sums(key, column, sums)

    def rows_counted(self, key: str, column: LabelColumn) -> BoolArray:
        """Rows whose value under `key` (`column`, its label column) has a positive count;
        rows without the key never do."""
        kept = self._by_code.get(key)
        if kept is not None and kept[0] is column and len(kept[1]) == len(column.values):
            # One more False entry: where ABSENT (-1) indexes. Filled in place and read
            # with take: np.append and fancy indexing cost twice as much per call, and
            # this runs for every key of every vector Filter.
            table = np.zeros(len(kept[1]) + 1, dtype=np.bool_)
            np.greater(kept[1], 0, out=table[:-1])
            found: BoolArray = table.take(column.codes)
            return found
        counts = self._by_value().get(key) or {}
        return column.any_of([value for value, count in counts.items() if count > 0])

    def copy(self) -> TopologyCounts:
        return TopologyCounts({key: dict(values) for key, values in self._by_value().items()})
