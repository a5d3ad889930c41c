"""A figure kept per snapshot row, summed per topology domain and kept so across cycles.

RowCounts (a plugin's per-node count of matching pods) and InterPodAffinity's TermRows
(the rows holding an existing term) are summed per domain code of a label column every
cycle: masks, a bincount and a cast over every row, several times a cycle, though
between two cycles only the rows whose NodeInfo the snapshot replaced can differ (a
pod placed, a pod confirmed, a node relabelled: the snapshot replaces the row's
NodeInfo then). DomainSums keeps the sums and, for each row, the code and figure it
was summed under; the owner marks the rows it read again (`touch`), and the next read
moves just those rows' figures from their old code to their current one. A column the
sums were not made over (the snapshot rebuilt its order and its label index) is summed
afresh.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import ABSENT, LabelColumn

IntArray = npt.NDArray[np.int64]


class DomainSums:
    """Sum per domain code of one label column of a figure per row."""

    __slots__ = ("_codes", "_column", "_figures", "_pending", "_sums")

    def __init__(self) -> None:
        self._column: LabelColumn | None = None
        self._sums: IntArray = np.zeros(0, dtype=np.int64)
        # Per row: the code and the figure it is counted under in _sums.
        self._codes: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._figures: IntArray = np.zeros(0, dtype=np.int64)
        self._pending: set[int] = set()

    def touch(self, row: int) -> None:
        """The row's figure (or its node's labels) may have changed since the last read."""
        self._pending.add(row)

    def read(self, column: LabelColumn, figure_of: Callable[[int], int],
             figures: Callable[[], IntArray]) -> IntArray:
        """The figure summed per code of `column` (rows without the key add nothing), one
        entry per value of the column; a copy the caller may keep. `figure_of(row)`: a
        row's figure now; `figures()`: every row's (for summing afresh)."""
        codes = column.codes
        if column is not self._column or len(codes) != len(self._codes):
            every = figures()
            present = codes != ABSENT
            self._sums = np.bincount(codes[present], weights=every[present],
                                     minlength=len(column.values)).astype(np.int64)
            self._column = column
            self._codes = codes.copy()
            self._figures = np.array(every, dtype=np.int64)
            self._pending.clear()
            return self._sums.copy()
        if len(self._sums) < len(column.values):  # a relabel brought new values
            self._sums = np.concatenate(
                (self._sums, np.zeros(len(column.values) - len(self._sums), dtype=np.int64)))
        sums, kept_codes, kept_figures = self._sums, self._codes, self._figures
        for row in self._pending:
            old_code = int(kept_codes[row])
            if old_code != ABSENT:
                sums[old_code] -= kept_figures[row]
            code, figure = int(codes[row]), figure_of(row)
            if code != ABSENT:
                sums[code] += figure
            kept_codes[row], kept_figures[row] = code, figure
        self._pending.clear()
        return sums.copy()
