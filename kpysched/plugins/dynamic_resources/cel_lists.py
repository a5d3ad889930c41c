"""The list and set functions of the Kubernetes CEL environment, run in Python
(cel_declarations.py declares them and names which runs each call):

- Kubernetes' lists library (apiserver/pkg/cel/library/lists.go): `isSorted`, `sum`,
  `min`, `max`, and `indexOf` / `lastIndexOf` on lists;
- cel-go's lists extension, version 3 (ext/lists.go): `slice`, `flatten`, `sort`,
  `@sortByAssociatedKeys` (what `sortBy` expands to), `lists.range`, `reverse`,
  `distinct`;
- cel-go's sets extension (ext/sets.go): `sets.contains`, `sets.equivalent`,
  `sets.intersects`;
- `cel.@mapInsert` of the two-variable comprehensions.

Each function charges what cel-go's cost tracker does for it (the call's 1 is in the
metered copy's block): cel-go's overload trackers for the extensions (known only when
the checker resolved exactly one overload, as cel-go's planner), library.CostEstimator's
traversal of the list for Kubernetes' functions. Values reach Python as cel-expr-python
converts them: uints become ints (`[1u, 2u].sum()` is an int here, a uint upstream).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from cel_expr_python import cel
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_LIST_CREATE, _TRAVERSAL = 10, 0.1  # common.ListCreateBaseCost, StringTraversalCostFactor

# --- CEL semantics on converted values ---------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def equal(first: Any, second: Any) -> bool:
    """CEL's heterogeneous equality on values as cel-expr-python hands them over."""
    if _is_number(first) and _is_number(second):
        return bool(first == second)
    if type(first) is not type(second) and not (
            isinstance(first, Message) and isinstance(second, Message)):
        return False
    if isinstance(first, list):
        return len(first) == len(second) and all(
            equal(a, b) for a, b in zip(first, second, strict=True))
    if isinstance(first, dict):
        return len(first) == len(second) and all(
            any(equal(key, other) and equal(value, second[other]) for other in second)
            for key, value in first.items())
    return bool(first == second)


def _contains(values: list[Any], item: Any) -> bool:
    return any(equal(value, item) for value in values)


def traversal_cost(value: Any) -> int:
    """library.traversalCost: a string's bytes (not runes) times 0.1, truncated."""
    if isinstance(value, str):
        return int(len(value.encode()) * _TRAVERSAL)
    if isinstance(value, bytes):
        return int(len(value) * _TRAVERSAL)
    if isinstance(value, list):
        return sum(traversal_cost(item) for item in value)
    if isinstance(value, dict):
        return sum(traversal_cost(key) + traversal_cost(item) for key, item in value.items())
    return 1


def _allocating(factor: float, size: int) -> int:
    """trackAllocatingListCall: the call's 1 is charged by the metered block."""
    return int(size * factor) + _LIST_CREATE


def _self_compare(values: list[Any]) -> int:
    factor = 2.0
    if values and isinstance(values[0], str | bytes):
        factor += _TRAVERSAL
    return _allocating(factor, len(values) * len(values))


_RANK = {bool: 0, int: 1, float: 1, str: 2, bytes: 3, timedelta: 4, datetime: 5}


def _comparable(values: list[Any]) -> None:
    if values and type(values[0]) not in _RANK:
        raise ValueError("list elements must be comparable")
    first = type(values[0]) if values else None
    if any(type(value) is not first for value in values):
        raise ValueError("list elements must have the same type")


class Library:
    """The runtime functions; `charge(cost)` adds to the running evaluation's cost when it
    is metered (cel_meter.Runtime)."""

    def __init__(self, charge: Callable[[int], None]) -> None:
        self._charge = charge

    def functions(self) -> list[cel.FunctionDecl]:
        t = cel.Type
        lst, dyn = t.LIST, t.DYN

        def decl(name: str, params: list[cel.Type], result: cel.Type,
                 impl: Callable[..., Any]) -> cel.FunctionDecl:
            return cel.FunctionDecl(name, [cel.Overload(name.replace(".", "_"), result, params,
                                                        is_member=False, impl=impl)])

        sums = [decl(f"@kp.list.sum.{kind}", [lst], result, self._summer(zero))
                for kind, zero, result in (("int", 0, dyn), ("uint", 0, dyn),
                                           ("double", 0.0, dyn),
                                           ("duration", timedelta(0), t.DURATION))]
        extremes = [decl(f"@kp.list.{name}{suffix}", [lst], result, self._extreme(name))
                    for name in ("max", "min")
                    for suffix, result in (("", dyn), (".duration", t.DURATION),
                                           (".timestamp", t.TIMESTAMP))]
        return [
            decl("@kp.list.isSorted", [lst], t.BOOL, self._is_sorted),
            *sums,
            *extremes,
            decl("@kp.list.indexOf", [lst, lst], t.INT, self._index_of),
            decl("@kp.list.lastIndexOf", [lst, lst], t.INT, self._last_index_of),
            decl("@kp.list.slice", [lst, t.INT, t.INT], lst, self._slice),
            cel.FunctionDecl("@kp.list.flatten", [
                cel.Overload("@kp_list_flatten", lst, [lst], is_member=False,
                             impl=lambda v: self._flatten(v, 1, 1)),
                cel.Overload("@kp_list_flatten_int", lst, [lst, t.INT], is_member=False,
                             impl=lambda v, depth: self._flatten(v, depth, depth))]),
            decl("@kp.list.sort", [lst], lst, lambda v: self._sort(v, priced=True)),
            decl("@kp.list.sort.unpriced", [lst], lst, lambda v: self._sort(v, priced=False)),
            decl("@kp.list.sortByAssociatedKeys", [lst, lst], lst,
                 lambda v, k: self._sort_by(v, k, priced=True)),
            decl("@kp.list.sortByAssociatedKeys.unpriced", [lst, lst], lst,
                 lambda v, k: self._sort_by(v, k, priced=False)),
            decl("@kp.lists.range", [t.INT], lst, self._range),
            decl("@kp.list.reverse", [lst], lst, self._reverse),
            decl("@kp.list.distinct", [lst], lst, self._distinct),
            cel.FunctionDecl("@kp.mapInsert", [
                cel.Overload("@kp_mapInsert_map_map", t.MAP, [t.MAP, t.MAP], is_member=False,
                             impl=_map_insert_map),
                cel.Overload("@kp_mapInsert_map_key_value", t.MAP, [t.MAP, lst],
                             is_member=False, impl=lambda m, kv: _map_insert(m, *kv))]),
            decl("@kp.sets.contains", [lst, lst], t.BOOL, self._sets(1, _sets_contains)),
            decl("@kp.sets.equivalent", [lst, lst], t.BOOL,
                 self._sets(2, lambda a, b: _sets_contains(a, b) and _sets_contains(b, a))),
            decl("@kp.sets.intersects", [lst, lst], t.BOOL,
                 self._sets(1, lambda a, b: any(_contains(b, item) for item in a))),
        ]

    # Kubernetes' lists library: each costs one traversal of the list.

    def _is_sorted(self, values: list[Any]) -> bool:
        self._charge(traversal_cost(values))
        return all(not _greater(a, b) for a, b in itertools.pairwise(values))

    def _summer(self, zero: Any) -> Callable[[list[Any]], Any]:
        def total(values: list[Any]) -> Any:
            self._charge(traversal_cost(values))
            result = zero
            for value in values:
                result = result + value
                if isinstance(result, int) and not _INT64_MIN <= result <= _INT64_MAX:
                    raise ValueError("integer overflow")
            return result
        return total

    def _extreme(self, name: str) -> Callable[[list[Any]], Any]:
        def pick(values: list[Any]) -> Any:
            self._charge(traversal_cost(values))
            if not values:
                raise ValueError(f"{name} called on empty list")
            best = values[0]
            for value in values[1:]:
                if _greater(value, best) if name == "max" else _greater(best, value):
                    best = value
            return best
        return pick

    def _index_of(self, values: list[Any], wrapped: list[Any]) -> int:
        self._charge(traversal_cost(values))
        return next((i for i, value in enumerate(values) if equal(value, wrapped[0])), -1)

    def _last_index_of(self, values: list[Any], wrapped: list[Any]) -> int:
        self._charge(traversal_cost(values))
        return next((i for i in range(len(values) - 1, -1, -1)
                     if equal(values[i], wrapped[0])), -1)

    # cel-go's lists extension.

    def _slice(self, values: list[Any], start: int, end: int) -> list[Any]:
        problem = None
        if start < 0 or end < 0:
            problem = "negative indexes not supported"
        elif start > end:
            problem = "start index must be less than or equal to end index"
        elif len(values) < end:
            problem = f"list is length {len(values)}"
        self._charge(_allocating(1, 1 if problem else end - start))
        if problem:
            raise ValueError(f"cannot slice({start}, {end}), {problem}")
        return _cel_list(values[start:end])

    def _flatten(self, values: list[Any], depth: int, factor: int) -> list[Any]:
        self._charge(_allocating(factor, len(values)))
        if depth < 0:
            raise ValueError("level must be non-negative")
        return _cel_list(_flattened(values, depth))

    def _sort(self, values: list[Any], priced: bool) -> list[Any]:
        if priced:
            self._charge(_self_compare(values))
        if not values:
            return values
        _comparable(values)
        return _cel_list(sorted(values))

    def _sort_by(self, values: list[Any], keys: list[Any], priced: bool) -> list[Any]:
        """What the sortBy macro calls: the values in the order of their keys."""
        if priced:
            self._charge(_self_compare(keys))
        if len(values) != len(keys):
            raise ValueError(
                "@sortByAssociatedKeys() expected a list of the same size as the associated "
                f"keys list, but got {len(values)} and {len(keys)} elements respectively")
        if not values:
            return values
        _comparable(keys)
        order = sorted(range(len(keys)), key=lambda i: keys[i])
        return _cel_list([values[i] for i in order])

    def _range(self, count: int) -> list[int]:
        # Charged before the list is built, so a count past the limit builds nothing.
        self._charge(_allocating(1, max(count, 0)))
        return list(range(count)) if count > 0 else []

    def _reverse(self, values: list[Any]) -> list[Any]:
        self._charge(_allocating(1, len(values)))
        return _cel_list(values[::-1])

    def _distinct(self, values: list[Any]) -> list[Any]:
        self._charge(_self_compare(values))
        unique: list[Any] = []
        for value in values:
            if not _contains(unique, value):
                unique.append(value)
        return _cel_list(unique)

    # cel-go's sets extension: the product of the sizes, times 1 or 2.

    def _sets(self, factor: int, test: Callable[[list[Any], list[Any]], bool]
              ) -> Callable[[list[Any], list[Any]], bool]:
        def run(first: list[Any], second: list[Any]) -> bool:
            self._charge(int(len(first) * len(second) * factor))
            return test(first, second)
        return run


def _cel_list(values: list[Any]) -> list[Any]:
    """A list result for cel-expr-python, which takes timestamps and durations inside a
    list only as their well-known messages."""
    return [_cel_value(value) for value in values]


def _cel_value(value: Any) -> Any:
    if isinstance(value, datetime):
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(value)
        return stamp
    if isinstance(value, timedelta):
        span = duration_pb2.Duration()
        span.FromTimedelta(value)
        return span
    if isinstance(value, list):
        return _cel_list(value)
    return value


def _map_insert(values: dict[Any, Any], key: Any, value: Any) -> dict[Any, Any]:
    """types.InsertMapKeyValue: a new key only."""
    if any(equal(key, other) for other in values):
        raise ValueError(f"insert failed: key {_go_text(key)} already exists")
    return {**values, key: _cel_value(value)}


def _map_insert_map(values: dict[Any, Any], update: dict[Any, Any]) -> dict[Any, Any]:
    for key, value in update.items():
        values = _map_insert(values, key, value)
    return values


def _go_text(value: Any) -> str:
    """fmt's %v of a CEL key (int, uint, bool, string)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _sets_contains(values: list[Any], sublist: list[Any]) -> bool:
    return all(_contains(values, item) for item in sublist)


def _flattened(values: list[Any], depth: int) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, list) and depth > 0:
            out += _flattened(value, depth - 1)
        else:
            out.append(value)
    return out


def _greater(first: Any, second: Any) -> bool:
    """first.Compare(second) == 1 for comparable CEL values (numbers across types)."""
    if _is_number(first) and _is_number(second):
        if isinstance(first, float) and math.isnan(first):
            return False
        return bool(first > second)
    if type(first) is not type(second):
        raise ValueError("no such overload")
    return bool(first > second)
