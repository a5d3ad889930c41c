"""PreScore's weights per topology pair, where a key summed over the snapshot's label
columns stays a sum per domain code.

PreScore adds, for every topology pair (key, value), the weights of the pods there
that the incoming pod's preferred terms like and of the existing pods whose terms
like it. The kept counts (the incoming pod's few terms, the existing pods' distinct
terms) are summed per domain code of the key's label column by numpy; per-hostname
keys have a domain per node, so turning each sum into a {value: weight} entry, adding
two such dicts pair by pair and looking every value up again for the vector Score
cost more than all the counting (about 0.5 ms a cycle at 1000 nodes). Here such a key
stays (column, sum per code, codes any pod sits under) through the adding and the
vector Score, and becomes a dict only for a reader by value (the per-node Score, a
test comparing with the walk).

A pair exists where any contributing pod sits, even when the weights cancel to 0
there (the walk keeps it, and an empty map makes PreScore skip): `seen` keeps those
codes apart from the sums.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelColumn, LabelIndex

TopologyScore = dict[str, dict[str, int]]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class ScoreSums:
    """Weights per (topology key, value); see the module docstring."""

    __slots__ = ("_by_code", "_by_key")

    def __init__(self, by_key: TopologyScore | None = None) -> None:
        self._by_key: TopologyScore = by_key if by_key is not None else {}
        # key -> (its label column, weight per code, codes some pod sits under)
        self._by_code: dict[str, tuple[LabelColumn, IntArray, BoolArray]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_key) or bool(self._by_code)  # coded keys have a seen code

    def __repr__(self) -> str:
        return f"ScoreSums({self.as_dict()!r})"

    def add_codes(self, key: str, column: LabelColumn, sums: IntArray,
                  seen: BoolArray) -> None:
        """Add a weight per domain code of `column` (the key's label column in the
        snapshot); `seen`: the codes some pod sits under (their pairs exist even at 0)."""
        if not seen.any():
            return
        if key in self._by_key:
            self._add_by_value(key, column, sums, seen)
            return
        kept = self._by_code.get(key)
        if kept is None:
            self._by_code[key] = (column, sums, seen)
        elif kept[0] is column and len(kept[1]) == len(sums):
            self._by_code[key] = (column, kept[1] + sums, kept[2] | seen)
        else:
            self._to_values(key)
            self._add_by_value(key, column, sums, seen)

    def add_pairs(self, key: str, pairs: Iterable[tuple[str, int]]) -> None:
        """Add weights by value, each value at most once in `pairs`."""
        if key in self._by_code:
            self._to_values(key)
        values = self._by_key.get(key)
        if values is None:
            taken = dict(pairs)
            if taken:
                self._by_key[key] = taken
            return
        for value, weight in pairs:
            values[value] = values.get(value, 0) + weight

    def add(self, other: ScoreSums) -> None:
        """Add every pair of `other` (pairs summing to 0 kept)."""
        for key, (column, sums, seen) in other._by_code.items():
            self.add_codes(key, column, sums, seen)
        for key, values in other._by_key.items():
            self.add_pairs(key, values.items())

    def as_dict(self) -> TopologyScore:
        """Every pair by value (the coded keys turned into values for good)."""
        for key in list(self._by_code):
            self._to_values(key)
        return self._by_key

    def rows(self, labels: LabelIndex, rows: IntArray | None = None) -> IntArray:
        """Each row's total over every key (its value's weight; 0 without the key), for
        every row of the snapshot whose label index is `labels`, or for `rows`."""
        total = np.zeros(len(labels) if rows is None else len(rows), dtype=np.int64)
        for key in list(self._by_code):
            column, sums, _ = self._by_code[key]
            if labels.column(key) is not column or len(sums) != len(column.values):
                self._to_values(key)  # not this snapshot's column as it is: by value
                continue
            table = np.zeros(len(sums) + 1, dtype=np.int64)  # the last: where ABSENT is
            table[:-1] = sums
            total += table[column.codes if rows is None else column.codes[rows]]
        for key, values in self._by_key.items():
            total += labels.column(key).weighted(values, rows)
        return total

    def _to_values(self, key: str) -> None:
        column, sums, seen = self._by_code.pop(key)
        self._add_by_value(key, column, sums, seen)

    def _add_by_value(self, key: str, column: LabelColumn, sums: IntArray,
                      seen: BoolArray) -> None:
        found = np.flatnonzero(seen).tolist()
        values = column.values
        self.add_pairs(key, zip([values[code] for code in found], sums[found].tolist(),
                                strict=True))
