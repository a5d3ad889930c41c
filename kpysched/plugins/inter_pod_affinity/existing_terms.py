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
rows finds those to read again (a numpy comparison of the rows' versions when the caller
has them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelColumn
from kpysched.cache.node_info import NodeInfo
from kpysched.plugins._shared.domain_sums import DomainSums
from kpysched.plugins._shared.row_counts import NEVER_COUNTED, changed_since

Term = TypeVar("Term")
IntArray = npt.NDArray[np.int64]



class TermRows:
    """The rows holding pods with one term, and how many such pods each has: two arrays
    kept in step with every change (a row's entry rewritten in place, a row that no
    longer holds the term swapped out for the last entry), so that reading them each
    cycle costs nothing however many rows hold the term."""

    __slots__ = ("_domains", "_pods", "_rows", "_size", "_slot")

    def __init__(self) -> None:
        self._slot: dict[int, int] = {}  # row -> its entry in the arrays
        self._rows: IntArray = np.zeros(4, dtype=np.int64)
        self._pods: IntArray = np.zeros(4, dtype=np.int64)
        self._size = 0
        # The pods summed per domain of a topology key, kept (domain_sums).
        self._domains: dict[str, DomainSums] = {}

    def __bool__(self) -> bool:
        return self._size > 0

    def add(self, row: int, pods: int) -> None:
        """`pods` more (or fewer, when negative) pods with the term on `row`."""
        for sums in self._domains.values():
            sums.touch(row)
        slot = self._slot.get(row)
        if slot is None:
            slot = self._slot[row] = self._size
            if slot == len(self._rows):
                self._rows = np.concatenate((self._rows, np.zeros_like(self._rows)))
                self._pods = np.concatenate((self._pods, np.zeros_like(self._pods)))
            self._rows[slot] = row
            self._pods[slot] = 0
            self._size += 1
        left = int(self._pods[slot]) + pods
        if left:
            self._pods[slot] = left
            return
        last = self._size - 1
        if slot != last:
            moved = int(self._rows[last])
            self._rows[slot] = moved
            self._pods[slot] = self._pods[last]
            self._slot[moved] = slot
        del self._slot[row]
        self._size = last

    def arrays(self) -> tuple[IntArray, IntArray]:
        """(rows, pods on each): views, valid until the next change."""
        return self._rows[:self._size], self._pods[:self._size]

    def pods_on(self, row: int) -> int:
        slot = self._slot.get(row)
        return 0 if slot is None else int(self._pods[slot])

    def domain_sums(self, key: str, column: LabelColumn) -> IntArray:
        """Pods with the term per domain code of `column` (the snapshot's label column of
        topology key `key`); rows without the key add nothing. A copy, kept up to date
        from the rows changed since (domain_sums.py)."""
        sums = self._domains.get(key)
        if sums is None:
            sums = self._domains[key] = DomainSums()

        def every_row() -> IntArray:
            dense = np.zeros(len(column.codes), dtype=np.int64)
            rows, pods = self.arrays()
            dense[rows] = pods
            return dense

        return sums.read(column, self.pods_on, every_row)


class ExistingTerms(Generic[Term]):
    """Per distinct (term, weight) of the existing pods, the rows holding it.

    `terms_of(node)` lists, for one NodeInfo, a (term, weight) pair per term of each
    of its pods that counts (weight 1 where only presence matters)."""

    def __init__(self, terms_of: Callable[[NodeInfo], Iterable[tuple[Term, int]]]) -> None:
        self._terms_of = terms_of
        self._read: list[NodeInfo] = []
        self._versions: IntArray | None = None
        # Per row: ((id(term), weight), pods with it) for each term read there.
        self._row_keys: list[tuple[tuple[tuple[int, int], int], ...]] = []
        # (id(term), weight) -> the term and its rows; the entry keeps the term alive,
        # so no other object can take its id while it is here.
        self._terms: dict[tuple[int, int], tuple[Term, int, TermRows]] = {}

    def current(self, rows: Sequence[NodeInfo], versions: IntArray | None = None
                ) -> Iterator[tuple[Term, int, TermRows]]:
        """Every (term, weight, rows) as `rows` stand now; `versions` as in
        RowCounts.counts (the snapshot's row versions for `rows`)."""
        size = len(rows)
        if size != len(self._read):
            self._read = [NEVER_COUNTED] * size
            self._versions = None
            self._row_keys = [()] * size
            self._terms = {}
        changed = changed_since(rows, self._read, versions, self._versions)
        for row in changed.tolist():
            self._forget(row)
            self._learn(row, rows[row])
            self._read[row] = rows[row]
        self._versions = None if versions is None else versions.copy()
        return iter(list(self._terms.values()))

    def _forget(self, row: int) -> None:
        for key, pods in self._row_keys[row]:
            held = self._terms[key][2]
            held.add(row, -pods)
            if not held:
                del self._terms[key]
        self._row_keys[row] = ()

    def _learn(self, row: int, node: NodeInfo) -> None:
        pods_by_key: dict[tuple[int, int], int] = {}
        for term, weight in self._terms_of(node):
            key = (id(term), weight)
            if key not in self._terms:
                self._terms[key] = (term, weight, TermRows())
            pods_by_key[key] = pods_by_key.get(key, 0) + 1
        for key, pods in pods_by_key.items():
            self._terms[key][2].add(row, pods)
        self._row_keys[row] = tuple(pods_by_key.items())


# ExistingTerms pays an identity check per row each cycle (tens of ns); a walk over the
# pods with terms pays about a microsecond per pod. Below this many rows per node that
# holds such pods, the walk is the cheaper one (and exactly as right).
ROWS_PER_HOLDING_NODE = 16


def worth_keeping(holding_nodes: int, rows: int) -> bool:
    """Whether to ask ExistingTerms rather than walk the `holding_nodes` nodes."""
    return holding_nodes * ROWS_PER_HOLDING_NODE > rows
