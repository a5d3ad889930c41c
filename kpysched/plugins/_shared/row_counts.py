"""A per-node figure for every snapshot row at once, kept across scheduling cycles.

Plugins that count pods per node (PodTopologySpread's matching pods, InterPodAffinity's
pods matching a term) ask the same question of every node for every pod of a workload.
The snapshot replaces a row's NodeInfo whenever its node or pods change, so a figure
taken from the very same NodeInfo object still holds: one identity pass over the row
list finds the rows to count again, and the rest is an array the caller can sum over
topology domains with numpy. That pass is a Python call per row (~75 us at 1000 rows);
given the snapshot's row versions (ResourceColumns.version: a new number, unique across
snapshots, each time a row's NodeInfo is written) it is one numpy comparison instead.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelColumn
from kpysched.cache.node_info import NodeInfo
from kpysched.plugins._shared.domain_sums import DomainSums

IntArray = npt.NDArray[np.int64]

# Stands in the remembered row list before a row was counted: never any row's NodeInfo.
NEVER_COUNTED = NodeInfo("")


def _changed_rows(rows: Sequence[NodeInfo], remembered: Sequence[NodeInfo]) -> IntArray:
    """The rows whose NodeInfo is not the very object remembered for them (one identity
    check per row, in C)."""
    found: IntArray = np.flatnonzero(np.fromiter(map(operator.is_not, rows, remembered),
                                                 dtype=np.bool_, count=len(rows)))
    return found


def changed_since(rows: Sequence[NodeInfo], remembered: Sequence[NodeInfo],
                  versions: IntArray | None, remembered_versions: IntArray | None) -> IntArray:
    """The rows whose NodeInfo is not the very object remembered for them: by the rows'
    versions when both calls had them for as many rows (a version names one write of
    one row's NodeInfo, so an equal version is the very same object), else by
    identity."""
    if (versions is not None and remembered_versions is not None
            and len(versions) == len(remembered_versions) == len(rows)):
        # nonzero()[0] rather than np.flatnonzero: the same rows without its ravel and
        # wrapper, a microsecond per call, paid by each kept figure every cycle.
        found: IntArray = (versions != remembered_versions).nonzero()[0]
        return found
    return _changed_rows(rows, remembered)


class RowCounts:
    """`count(node)` for every row, recounting only rows whose NodeInfo changed."""

    __slots__ = ("_count", "_counted", "_counts", "_domains", "_versions")

    def __init__(self, count: Callable[[NodeInfo], int]) -> None:
        self._count = count
        self._counted: list[NodeInfo] = []
        self._versions: IntArray | None = None
        self._counts: IntArray = np.zeros(0, dtype=np.int64)
        # The counts summed per domain of a topology key, kept (domain_sums).
        self._domains: dict[str, DomainSums] = {}

    def counts(self, rows: Sequence[NodeInfo], versions: IntArray | None = None) -> IntArray:
        """The figure per row of `rows` (read-only; valid until the next call). `versions`:
        the snapshot's row versions for `rows` (Snapshot.columns.version), when they are
        its rows."""
        size = len(rows)
        if size != len(self._counted):
            self._counted = [NEVER_COUNTED] * size
            self._versions = None
            self._counts = np.zeros(size, dtype=np.int64)
            self._domains = {}
        changed = changed_since(rows, self._counted, versions, self._versions)
        count, counted, domains = self._count, self._counted, self._domains.values()
        for row in changed.tolist():
            self._counts[row] = count(rows[row])
            counted[row] = rows[row]  # a few rows a cycle: cheaper than a copy of all
            for sums in domains:
                sums.touch(row)
        self._versions = None if versions is None else versions.copy()
        return self._counts

    def domain_sums(self, key: str, column: LabelColumn) -> IntArray:
        """The counts as of the last `counts` call summed per domain code of `column`
        (the snapshot's label column of topology key `key`); rows without the key add
        nothing. A copy, kept up to date from the rows counted again (domain_sums.py)."""
        sums = self._domains.get(key)
        if sums is None:
            sums = self._domains[key] = DomainSums()
        counts = self._counts
        return sums.read(column, lambda row: int(counts[row]), lambda: counts)


class RowCountsCache:
    """RowCounts by what they count (a selector, a term), the least recently used
    dropped past `capacity`, so that pods bringing ever new selectors cost bounded
    memory (one array and one row list each)."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._found: OrderedDict[Hashable, tuple[RowCounts, Hashable]] = OrderedDict()

    def get(self, key: Hashable, count: Callable[[NodeInfo], int],
            version: Hashable = None) -> RowCounts:
        """The RowCounts for `key`, made with `count` the first time. `version` names
        what the figures depend on beside the rows' NodeInfo (say, the namespaces' labels
        a term reads): when it is not the one they were counted under, they are dropped
        and counted afresh with this `count`, which sees the world as it is now."""
        found = self._found.get(key)
        if found is None or found[1] != version:
            counts = RowCounts(count)
            self._found[key] = (counts, version)
            self._found.move_to_end(key)
            if len(self._found) > self._capacity:
                self._found.popitem(last=False)
            return counts
        self._found.move_to_end(key)
        return found[0]
