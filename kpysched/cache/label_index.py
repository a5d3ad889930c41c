"""Node labels as columns over snapshot rows, so label selectors judge every node at once.

A column holds, for one label key, each row's value as a small integer code into the
values seen under that key (ABSENT where the node lacks the key). Columns are built
lazily, the first time a selector names the key, and outlive scheduling cycles: a pod
assumed on a node replaces its NodeInfo but keeps its Node, so only a node added,
removed (the snapshot rebuilds its order and starts a new index) or relabelled (its
row is rewritten in every built column) costs anything. Requirement masks are
memoised on top, since the pods of one workload repeat the same selectors; the memo
is dropped whenever a row's labels change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kpysched.objects.labels import SelectorError

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo

BoolArray = npt.NDArray[np.bool_]

ABSENT = -1
# Past this many memoised requirement masks the memo starts over: a bound on memory
# (one byte per node each) when pods bring ever new selectors.
_MEMO_LIMIT = 512


def _integer_bound(values: Sequence[str]) -> int | None:
    """The one value of a Gt/Lt requirement as an integer; None (matches nothing) when
    there is not exactly one or it does not read as one."""
    if len(values) != 1:
        return None
    try:
        return int(values[0])
    except ValueError:
        return None


class LabelColumn:
    """One label key (or the node name) over all rows: value codes and the values they
    stand for."""

    __slots__ = ("_code_of", "codes", "values")

    def __init__(self, row_values: Iterable[str | None], count: int) -> None:
        self.values: list[str] = []
        self._code_of: dict[str, int] = {}
        self.codes = np.fromiter(map(self._intern, row_values), dtype=np.int32, count=count)

    def _intern(self, value: str | None) -> int:
        if value is None:
            return ABSENT
        code = self._code_of.get(value)
        if code is None:
            code = self._code_of[value] = len(self.values)
            self.values.append(value)
        return code

    def set_row(self, row: int, value: str | None) -> None:
        self.codes[row] = self._intern(value)

    def _rows_where(self, table: BoolArray) -> BoolArray:
        """Rows whose value code is True in `table` (one entry per known value). The
        table gains a last False entry, which is where ABSENT (-1) indexes."""
        extended = np.append(table, False)
        picked: BoolArray = extended[self.codes]
        return picked

    def any_of(self, wanted: Sequence[str]) -> BoolArray:
        """Rows that have the key with one of the wanted values."""
        table = np.zeros(len(self.values), dtype=np.bool_)
        for value in wanted:
            code = self._code_of.get(value)
            if code is not None:
                table[code] = True
        return self._rows_where(table)

    def present(self) -> BoolArray:
        found: BoolArray = self.codes != ABSENT
        return found

    def weighted(self, weights: Mapping[str, int],
                 rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
        """Each row's weight by its value (0 without the key or for a value not in
        `weights`), for every row or only `rows`. The table gains a last 0 entry, which
        is where ABSENT (-1) indexes."""
        table = np.zeros(len(self.values) + 1, dtype=np.int64)
        code_of = self._code_of
        for value, weight in weights.items():
            code = code_of.get(value)
            if code is not None:
                table[code] = weight
        codes = self.codes if rows is None else self.codes[rows]
        picked: npt.NDArray[np.int64] = table[codes]
        return picked

    def compared(self, greater: bool, bound: int) -> BoolArray:
        """Rows whose value reads as an integer (Python's int(), as the per-node matcher
        reads it) above (`greater`) or below `bound`; a value that does not read never
        matches."""
        table = np.zeros(len(self.values), dtype=np.bool_)
        for code, value in enumerate(self.values):
            try:
                have = int(value)
            except ValueError:
                continue
            table[code] = have > bound if greater else have < bound
        return self._rows_where(table)


class LabelIndex:
    """Label columns, and the node-name column, over one node order (the snapshot's rows)."""

    __slots__ = ("_columns", "_infos", "_memo", "_names")

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        # The snapshot's own row list: a column built later reads the rows as they are
        # then, and replace() keeps built columns in step.
        self._infos = infos
        self._columns: dict[str, LabelColumn] = {}
        self._names: LabelColumn | None = None
        # (is a field requirement, operator, key, values) -> rows
        self._memo: dict[tuple[bool, str, str, tuple[str, ...]], BoolArray] = {}

    def __len__(self) -> int:
        return len(self._infos)

    def column(self, key: str) -> LabelColumn:
        found = self._columns.get(key)
        if found is None:
            found = self._columns[key] = LabelColumn(
                (info.labels.get(key) for info in self._infos), len(self._infos))
        return found

    def _name_column(self) -> LabelColumn:
        # A row's name never changes in place (replace() keeps the row's node), so this
        # column lives as long as the index.
        if self._names is None:
            self._names = LabelColumn((info.name for info in self._infos), len(self._infos))
        return self._names

    def relabel(self, row: int, old: Mapping[str, str], new: Mapping[str, str]) -> None:
        """Row `row` now has labels `new` (it had `old`)."""
        if old == new:
            return
        for key, column in self._columns.items():
            column.set_row(row, new.get(key))
        self._memo.clear()

    def requirement(self, operator: str, key: str, values: Sequence[str]) -> BoolArray:
        """Rows whose labels satisfy one requirement, with the per-node matcher's
        semantics (objects/labels.py). Read-only: it may be shared with later calls."""
        return self._memoised(False, operator, key, values)

    def name_requirement(self, operator: str, values: Sequence[str]) -> BoolArray:
        """Rows whose node name satisfies a requirement, as the per-node matcher judges
        a `metadata.name` field (the name standing as the only label). Read-only."""
        return self._memoised(True, operator, "", values)

    def _memoised(self, on_name: bool, operator: str, key: str,
                  values: Sequence[str]) -> BoolArray:
        memo_key = (on_name, operator, key, tuple(values))
        found = self._memo.get(memo_key)
        if found is None:
            column = self._name_column() if on_name else self.column(key)
            found = self._evaluate(operator, column, values)
            found.flags.writeable = False
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[memo_key] = found
        return found

    def _evaluate(self, operator: str, column: LabelColumn, values: Sequence[str]) -> BoolArray:
        if operator == "In":
            return column.any_of(values)
        if operator == "NotIn":
            return ~column.any_of(values)
        if operator == "Exists":
            return column.present()
        if operator == "DoesNotExist":
            return ~column.present()
        if operator in ("Gt", "Lt"):
            bound = _integer_bound(values)
            if bound is None:
                return np.zeros(len(self._infos), dtype=np.bool_)
            return column.compared(operator == "Gt", bound)
        raise SelectorError(f"unknown operator {operator!r}")
