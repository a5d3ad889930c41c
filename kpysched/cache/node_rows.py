"""Some snapshot rows seen as a sequence of NodeInfo (NodeRows) or of node names
(RowNames), built only when read.

The vector path finds the feasible nodes as row indices. Most cycles never look at
them as objects (vector scores read columns), and their names are read only when a
recorded decision is explained. Making 500-item lists every cycle anyway cost about a
sixth of kpysched's CPU per pod at 5000 nodes (each item touches an object far from
the last), so these views make the list on first iteration or slice and keep it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo


class NodeRows(Sequence[NodeInfo]):
    __slots__ = ("_infos", "_list", "_names", "rows")

    def __init__(self, infos: list[NodeInfo], names: tuple[str, ...],
                 rows: npt.NDArray[np.int64]) -> None:
        """`infos` and `names` are a snapshot's, row for row."""
        self._infos = infos
        self._names = names
        self.rows = rows
        self._list: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(index, slice):
            return self.as_list()[index]
        return self._infos[int(self.rows[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.as_list())

    def as_list(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = list(map(self._infos.__getitem__, self.rows.tolist()))
        return self._list

    def names(self) -> RowNames:
        return RowNames(self._names, self.rows)

    def names_of(self, positions: npt.NDArray[np.int64]) -> RowNames:
        """The names at `positions` (indices into this view)."""
        return RowNames(self._names, self.rows[positions])


class RowNames(Sequence[str]):
    """Node names of some rows; `names` is a snapshot's names tuple, which is never
    changed in place (a new one comes with a new node order), so a recorded decision
    may keep it."""

    __slots__ = ("_list", "_names", "_rows")

    def __init__(self, names: tuple[str, ...], rows: npt.NDArray[np.int64]) -> None:
        self._names = names
        self._rows = rows
        self._list: list[str] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return self.as_list()[index]
        return self._names[int(self._rows[index])]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowNames):
            return self.as_list() == other.as_list()
        return isinstance(other, list) and self.as_list() == other

    __hash__ = None  # type: ignore[assignment]

    def as_list(self) -> list[str]:
        if self._list is None:
            self._list = list(map(self._names.__getitem__, self._rows.tolist()))
        return self._list
