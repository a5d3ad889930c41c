"""Some snapshot rows seen as a sequence (RowView): of NodeInfo (NodeRows) or of node names
(RowNames), built only when read.

The vector path finds the feasible nodes as row indices. Most cycles never look at
them as objects (vector scores read columns), and their names are read only when a
recorded decision is explained. Making 500-item lists every cycle anyway cost about a
sixth of kpysched's CPU per pod at 5000 nodes (each item touches an object far from
the last), so these views make the list on first iteration or slice and keep it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo

T = TypeVar("T")


class RowView(Sequence[T]):
    """The items of `source` at `rows`, in that order; a list is made on first
    iteration or slice, and kept."""

    __slots__ = ("_list", "_source", "rows")

    def __init__(self, source: Sequence[T], rows: npt.NDArray[np.int64]) -> None:
        self._source = source
        self.rows = rows
        self._list: list[T] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return self.as_list()[index]
        return self._source[int(self.rows[index])]

    def __iter__(self) -> Iterator[T]:
        return iter(self.as_list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowView):
            return self.as_list() == other.as_list()
        return isinstance(other, list) and self.as_list() == other

    __hash__ = None  # type: ignore[assignment]

    def as_list(self) -> list[T]:
        if self._list is None:
            self._list = list(map(self._source.__getitem__, self.rows.tolist()))
        return self._list


class RowNames(RowView[str]):
    """Node names of some rows. The source is a snapshot's names tuple, which is never
    changed in place (a new one comes with a new node order), so a recorded decision
    may keep it."""

    __slots__ = ()


class NodeRows(RowView[NodeInfo]):
    """Feasible nodes as snapshot rows; `infos` and `names` are a snapshot's, row for
    row."""

    __slots__ = ("_names",)

    def __init__(self, infos: list[NodeInfo], names: tuple[str, ...],
                 rows: npt.NDArray[np.int64]) -> None:
        super().__init__(infos, rows)
        self._names = names

    def names(self) -> RowNames:
        return RowNames(self._names, self.rows)

    def names_of(self, positions: npt.NDArray[np.int64]) -> RowNames:
        """The names at `positions` (indices into this view)."""
        return RowNames(self._names, self.rows[positions])
