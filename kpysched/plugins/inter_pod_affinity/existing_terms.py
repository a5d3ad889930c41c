"""Existing pods' affinity terms by the rows that hold them, kept across cycles.

InterPodAffinity asks, for every incoming pod, which existing pods' terms select it
(required anti-affinity for Filter; required affinity and preferred terms for Score),
and adds each selecting pod at its node's topology value. Walking every pod with
affinity for every cycle costs as much as the cluster has such pods. Yet the pods
of a workload share their parsed terms (objects/pod_affinity.py interns equal
terms), so the question is really "which distinct terms select this pod", asked of
a handful of terms, followed by a sum over the rows holding them.

ExistingTerms keeps, per distinct (term, weight), how many such pods each row has.
As RowCounts does (plugins/_shared/row_counts.py), it relies on the snapshot replacing a
row's NodeInfo whenever the node or its pods change: one identity pass over the
rows finds those to read again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import ABSENT, LabelColumn
from kpysched.cache.node_info import NodeInfo
from kpysched.plugins._shared.row_counts import NEVER_COUNTED, changed_rows

Term = TypeVar("Term")
IntArray = npt.NDArray[np.int64]



class TermRows:
    """The rows holding pods with one term, and how many such pods each has."""

    __slots__ = ("by_row",)

    def __init__(self) -> None:
        self.by_row: dict[int, int] = {}

    def arrays(self) -> tuple[IntArray, IntArray]:
        rows = np.fromiter(self.by_row.keys(), dtype=np.int64, count=len(self.by_row))
        pods = np.fromiter(self.by_row.values(), dtype=np.int64, count=len(self.by_row))
        return rows, pods


class ExistingTerms(Generic[Term]):
    """Per distinct (term, weight) of the existing pods, the rows holding it.

    `terms_of(node)` lists, for one NodeInfo, a (term, weight) pair per term of each
    of its pods that counts (weight 1 where only presence matters)."""

    def __init__(self, terms_of: Callable[[NodeInfo], Iterable[tuple[Term, int]]]) -> None:
        self._terms_of = terms_of
        self._read: list[NodeInfo] = []
        self._row_keys: list[tuple[tuple[int, int], ...]] = []
        # (id(term), weight) -> the term and its rows; the entry keeps the term alive,
        # so no other object can take its id while it is here.
        self._terms: dict[tuple[int, int], tuple[Term, int, TermRows]] = {}

    def current(self, rows: Sequence[NodeInfo]) -> Iterator[tuple[Term, int, TermRows]]:
        """Every (term, weight, rows) as `rows` stand now."""
        size = len(rows)
        if size != len(self._read):
            self._read = [NEVER_COUNTED] * size
            self._row_keys = [()] * size
            self._terms = {}
        changed = changed_rows(rows, self._read)
        for row in changed.tolist():
            self._forget(row)
            self._learn(row, rows[row])
        if len(changed):
            self._read = list(rows)
        return iter(list(self._terms.values()))

    def _forget(self, row: int) -> None:
        for key in self._row_keys[row]:
            held = self._terms[key][2]
            left = held.by_row[row] - 1
            if left:
                held.by_row[row] = left
            else:
                del held.by_row[row]
                if not held.by_row:
                    del self._terms[key]
        self._row_keys[row] = ()

    def _learn(self, row: int, node: NodeInfo) -> None:
        keys = []
        for term, weight in self._terms_of(node):
            key = (id(term), weight)
            found = self._terms.get(key)
            if found is None:
                found = self._terms[key] = (term, weight, TermRows())
            found[2].by_row[row] = found[2].by_row.get(row, 0) + 1
            keys.append(key)
        self._row_keys[row] = tuple(keys)


# ExistingTerms pays an identity check per row each cycle (tens of ns); a walk over the
# pods with terms pays about a microsecond per pod. Below this many rows per node that
# holds such pods, the walk is the cheaper one (and exactly as right).
ROWS_PER_HOLDING_NODE = 16


def worth_keeping(holding_nodes: int, rows: int) -> bool:
    """Whether to ask ExistingTerms rather than walk the `holding_nodes` nodes."""
    return holding_nodes * ROWS_PER_HOLDING_NODE > rows


def counts_by_code(column: LabelColumn, held: TermRows) -> IntArray:
    """Pods per domain code of `column` among the rows in `held` (rows without the key
    add nothing): TopologyCounts.add_domain_sums' form of `sums_by_value` at weight 1."""
    rows, pods = held.arrays()
    codes = column.codes[rows]
    present = codes != ABSENT
    counts: IntArray = np.bincount(codes[present], weights=pods[present],
                                   minlength=len(column.values)).astype(np.int64)
    return counts


def sums_by_value(column: LabelColumn, held: TermRows,
                  weight: int) -> Iterator[tuple[str, int]]:
    """(topology value, weight times pods) for each value of `column` among the rows in
    `held` (rows without the key add nothing), including values whose sum is 0."""
    rows, pods = held.arrays()
    codes = column.codes[rows]
    present = codes != ABSENT
    codes, pods = codes[present], pods[present]
    if not len(codes):
        return
    seen = np.bincount(codes, minlength=len(column.values))
    sums = np.bincount(codes, weights=pods * weight, minlength=len(column.values))
    found = np.flatnonzero(seen)
    # Whole lists, not a numpy scalar per domain: per-hostname keys have a domain per node.
    values = column.values
    yield from zip([values[code] for code in found.tolist()],
                   sums[found].astype(np.int64).tolist(), strict=True)
