"""What the Kubernetes CEL environment (apiserver/pkg/cel/environment/base.go at v1.36)
has beyond cel-expr-python's standard environment and extensions:

- Kubernetes' lists library (apiserver/pkg/cel/library/lists.go): `isSorted`, `sum`,
  `min`, `max`, and `indexOf` / `lastIndexOf` on lists;
- cel-go's lists extension, version 3 (ext/lists.go): `slice`, `flatten`, `sort`,
  `sortBy`, `lists.range`, `reverse`, `distinct` (declared by cel-cpp's own extension,
  which has the sortBy macro; implemented here);
- cel-go's sets extension (ext/sets.go): `sets.contains`, `sets.equivalent`,
  `sets.intersects`;
- two-variable comprehensions (ext.TwoVarComprehensions), which cel-cpp has: enabled
  by name, with `cel.@mapInsert` (what transformMap and transformMapEntry expand to)
  implemented here, cel-expr-python having none;
- cel.CrossTypeNumericComparisons: `1 < 1.5`, `2u > 1` (the runtime has them; the
  checker's ordering declarations are replaced by ones that include them).

Selectors are type-checked in an environment that declares these with cel-go's type
parameters and overload ids (cel-expr-python takes those only from an environment
config, whose functions cannot share a name with an extension's: so the strings
extension's functions, `indexOf` and `lastIndexOf` among them, are declared there too,
and the checking environment leaves the extension out). The checked program then runs
in the runtime environment, where cel_adapt renames each library call to one of the
`@kp.` functions below (plain list parameters, implemented here); calls of the strings
extension keep their names and run in cel-cpp.

Each function charges what cel-go's cost tracker does for it (the call's 1 is in the
metered copy's block): cel-go's overload trackers for the extensions (known only when
the checker resolved exactly one overload, as cel-go's planner), library.CostEstimator's
traversal of the list for Kubernetes' functions. Values reach Python as cel-expr-python
converts them: uints become ints (`[1u, 2u].sum()` is an int here, a uint upstream).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cel_expr_python import cel
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_LIST_CREATE, _TRAVERSAL = 10, 0.1  # common.ListCreateBaseCost, StringTraversalCostFactor

# Types whose values compare, by the names the two libraries use in overload ids.
_K8S_COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string",
                   "bytes")
_K8S_SUMMABLE = ("int", "uint", "double", "duration")
_EXT_COMPARABLE = {"int": "int", "uint": "uint", "double": "double", "bool": "bool",
                   "google.protobuf.Duration": "duration",
                   "google.protobuf.Timestamp": "timestamp", "string": "string",
                   "bytes": "bytes"}


@dataclass(slots=True, frozen=True)
class _Decl:
    """One checker overload: a member's target first in `params`."""

    id: str
    params: tuple[str, ...]
    result: str
    member: bool = True


def _declarations() -> dict[str, list[_Decl]]:
    d = _Decl
    decls: dict[str, list[_Decl]] = {
        # The strings extension, version 2 (ext/strings.go).
        "charAt": [d("string_char_at_int", ("string", "int"), "string")],
        "indexOf": [d("string_index_of_string", ("string", "string"), "int"),
                    d("string_index_of_string_int", ("string", "string", "int"), "int"),
                    d("list_a_index_of_int", ("list(A)", "A"), "int")],
        "lastIndexOf": [
            d("string_last_index_of_string", ("string", "string"), "int"),
            d("string_last_index_of_string_int", ("string", "string", "int"), "int"),
            d("list_a_last_index_of_int", ("list(A)", "A"), "int")],
        "lowerAscii": [d("string_lower_ascii", ("string",), "string")],
        "upperAscii": [d("string_upper_ascii", ("string",), "string")],
        "replace": [
            d("string_replace_string_string", ("string", "string", "string"), "string"),
            d("string_replace_string_string_int", ("string", "string", "string", "int"),
              "string")],
        "split": [d("string_split_string", ("string", "string"), "list(string)"),
                  d("string_split_string_int", ("string", "string", "int"), "list(string)")],
        "substring": [d("string_substring_int", ("string", "int"), "string"),
                      d("string_substring_int_int", ("string", "int", "int"), "string")],
        "trim": [d("string_trim", ("string",), "string")],
        "format": [d("string_format", ("string", "list(dyn)"), "string")],
        "strings.quote": [d("strings_quote", ("string",), "string", member=False)],
        "join": [d("list_join", ("list(string)",), "string"),
                 d("list_join_string", ("list(string)", "string"), "string")],
        # Kubernetes' lists library.
        "isSorted": [d(f"list_{t}_is_sorted_bool", (f"list({t})",), "bool")
                     for t in _K8S_COMPARABLE],
        "sum": [d(f"list_{t}_sum_{t}", (f"list({t})",), t) for t in _K8S_SUMMABLE],
        "max": [d(f"list_{t}_max_{t}", (f"list({t})",), t) for t in _K8S_COMPARABLE],
        "min": [d(f"list_{t}_min_{t}", (f"list({t})",), t) for t in _K8S_COMPARABLE],
        # cel-go's lists extension (slice, flatten, sort, sortBy, lists.range, reverse,
        # distinct) is cel-cpp's, enabled by name: it brings the sortBy macro, which a
        # config cannot declare. Its overload ids are cel-go's but for lists.range.
        # cel.CrossTypeNumericComparisons: ordering across int, uint and double, besides
        # the standard library's (whose declarations these replace).
        **{operator: [d(f"{word}_{_ORDERED[t]}", (t, t), "bool", member=False)
                      for t in _ORDERED]
           + [d(f"{word}_{_NUMBERS[a]}_{_NUMBERS[b]}", (a, b), "bool", member=False)
              for a in _NUMBERS for b in _NUMBERS if a != b]
           for operator, word in _COMPARISONS.items()},
        # Kubernetes' regex library (cel_regex.py).
        "find": [d("string_find_string", ("string", "string"), "string")],
        "findAll": [d("string_find_all_string", ("string", "string"), "list(string)"),
                    d("string_find_all_string_int", ("string", "string", "int"),
                      "list(string)")],
        # Kubernetes' IP and CIDR libraries (cel_network.py); `string` keeps the standard
        # library's overloads (whose declaration this replaces).
        "ip": [d("string_to_ip", ("string",), _IP, member=False),
               d("cidr_ip", (_CIDR,), _IP)],
        "isIP": [d("is_ip", ("string",), "bool", member=False)],
        "ip.isCanonical": [d("ip_is_canonical", ("string",), "bool", member=False)],
        "family": [d("ip_family", (_IP,), "int")],
        **{name: [d(overload, (_IP,), "bool")] for name, overload in (
            ("isUnspecified", "ip_is_unspecified"), ("isLoopback", "ip_is_loopback"),
            ("isLinkLocalMulticast", "ip_is_link_local_multicast"),
            ("isLinkLocalUnicast", "ip_is_link_local_unicast"),
            ("isGlobalUnicast", "ip_is_global_unicast"))},
        "cidr": [d("string_to_cidr", ("string",), _CIDR, member=False)],
        "isCIDR": [d("is_cidr", ("string",), "bool", member=False)],
        "containsIP": [d("cidr_contains_ip_string", (_CIDR, "string"), "bool"),
                       d("cidr_contains_ip_ip", (_CIDR, _IP), "bool")],
        "containsCIDR": [d("cidr_contains_cidr_string", (_CIDR, "string"), "bool"),
                         d("cidr_contains_cidr", (_CIDR, _CIDR), "bool")],
        "prefixLength": [d("cidr_prefix_length", (_CIDR,), "int")],
        "masked": [d("cidr_masked", (_CIDR,), _CIDR)],
        "string": [*(d(f"{word}_to_string", (t,), "string", member=False)
                     for word, t in _TO_STRING.items()),
                   d("ip_to_string", (_IP,), "string", member=False),
                   d("cidr_to_string", (_CIDR,), "string", member=False)],
        # cel-go's sets extension.
        "sets.contains": [d("list_sets_contains_list", ("list(T)", "list(T)"), "bool", False)],
        "sets.equivalent": [d("list_sets_equivalent_list", ("list(T)", "list(T)"), "bool",
                              False)],
        "sets.intersects": [d("list_sets_intersects_list", ("list(T)", "list(T)"), "bool",
                              False)],
    }
    return decls


_COMPARISONS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater",
                "_>=_": "greater_equals"}
_NUMBERS = {"int": "int64", "uint": "uint64", "double": "double"}
_ORDERED = {"bool": "bool", "int": "int64", "uint": "uint64", "double": "double",
            "string": "string", "bytes": "bytes", "google.protobuf.Timestamp": "timestamp",
            "google.protobuf.Duration": "duration"}
_TYPE_PARAMS = ("A", "T")
_IP, _CIDR = "net.IP", "net.CIDR"
_TO_STRING = {"string": "string", "bytes": "bytes", "bool": "bool", "double": "double",
              "int64": "int", "uint64": "uint", "timestamp": "google.protobuf.Timestamp",
              "duration": "google.protobuf.Duration"}
# Standard functions whose declarations the checker's config replaces (their overloads
# redeclared, the runtime's implementations kept).
_REPLACED = (*_COMPARISONS, "string")


def _type_spec(text: str) -> dict[str, Any]:
    """`list(list(T))` as an environment config's type: list, map and type parameters."""
    name, _, inner = text.partition("(")
    if name in _TYPE_PARAMS:
        return {"type_name": name, "is_type_param": True}
    spec: dict[str, Any] = {"type_name": name}
    if inner:
        spec["params"] = [_type_spec(inner[:-1])]
    return spec


# ext.TwoVarComprehensions (all/exists/existsOne with two variables, transformList,
# transformMap, transformMapEntry): cel-cpp has them, enabled by name in a config.
TWO_VARIABLE_LOOPS = [{"name": "two-var-comprehensions"}]
_EXT_LIST_IDS = frozenset((
    "list_slice", "list_flatten", "list_flatten_int", "list_range", "list_reverse",
    "list_distinct", *(f"list_{name}_sort" for name in _EXT_COMPARABLE),
    *(f"list_{name}_sortByAssociatedKeys" for name in _EXT_COMPARABLE)))


def checker_config() -> cel.EnvConfig:
    """The declarations above as an environment config (YAML; JSON is YAML)."""
    functions = []
    for name, overloads in _declarations().items():
        entries = []
        for decl in overloads:
            entry: dict[str, Any] = {"id": decl.id, "return": _type_spec(decl.result)}
            params = [_type_spec(param) for param in decl.params]
            if decl.member:
                entry["target"], params = params[0], params[1:]
            entry["args"] = params
            entries.append(entry)
        functions.append({"name": name, "overloads": entries})
    return cel.NewEnvConfigFromYaml(json.dumps({
        "name": "kpysched-dra-checker",
        "extensions": [*TWO_VARIABLE_LOOPS, {"name": "lists"}],
        "stdlib": {"exclude_functions": [{"name": name} for name in _REPLACED]},
        "functions": functions}))


def checker_impls() -> dict[str, Callable[..., Any]]:
    """Placeholders the checking environment needs to plan a program it never runs."""
    standard = {f"{word}_to_string" for word in _TO_STRING}
    return {decl.id: _never for name, overloads in _declarations().items()
            if name not in _COMPARISONS for decl in overloads if decl.id not in standard}


def _never(*_: Any) -> Any:
    raise RuntimeError("internal error: a selector ran in the checking environment")


# --- which runtime function serves a checked call -----------------------------------------

# library.CostEstimator prices these by function name: one traversal of the list, and
# nothing for the call itself.
K8S_TRAVERSED = frozenset(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"))


def runtime_name(function: str, overloads: Sequence[str]) -> str | None:
    """The `@kp.` function that runs a call the checker resolved to `overloads`, or None
    for calls that keep their name (everything outside these libraries)."""
    if function == MAP_INSERT:  # cel-expr-python declares it but has no implementation
        return "@kp.mapInsert"
    ids = set(overloads)
    network = {NETWORK_RUNTIME.get(overload) for overload in ids}
    if ids and len(network) == 1 and None not in network:
        return network.pop()
    if not ids or not ids <= _LIBRARY_IDS:
        return None
    if function in ("sum", "max", "min"):
        kinds = {overload.split("_")[1] for overload in ids}
        kind = kinds.pop() if len(kinds) == 1 else "int"
        if function == "sum":
            return f"@kp.list.sum.{kind}"
        return f"@kp.list.{function}" + (f".{kind}" if kind in _TIME_KINDS else "")
    if function in ("indexOf", "lastIndexOf"):
        return f"@kp.list.{function}"
    base = function.removeprefix("@")
    if base in ("sort", "sortByAssociatedKeys") and len(ids) > 1:
        return f"@kp.list.{base}.unpriced"  # no overload id: cel-go charges the call's 1
    return f"@kp.{base}" if "." in base else f"@kp.list.{base}"


# The IP, CIDR and regex libraries' overloads and the `@kp.` function that runs each
# (cel_network.py, cel_regex.py).
NETWORK_RUNTIME = {
    "string_to_ip": "@kp.ip", "is_ip": "@kp.isIP", "ip_is_canonical": "@kp.ip.isCanonical",
    "ip_family": "@kp.ip.family", "ip_is_unspecified": "@kp.ip.isUnspecified",
    "ip_is_loopback": "@kp.ip.isLoopback",
    "ip_is_link_local_multicast": "@kp.ip.isLinkLocalMulticast",
    "ip_is_link_local_unicast": "@kp.ip.isLinkLocalUnicast",
    "ip_is_global_unicast": "@kp.ip.isGlobalUnicast", "ip_to_string": "@kp.ip.string",
    "string_to_cidr": "@kp.cidr", "is_cidr": "@kp.isCIDR", "cidr_ip": "@kp.cidr.ip",
    "cidr_prefix_length": "@kp.cidr.prefixLength", "cidr_masked": "@kp.cidr.masked",
    "cidr_to_string": "@kp.cidr.string",
    "cidr_contains_ip_string": "@kp.cidr.containsIP",
    "cidr_contains_ip_ip": "@kp.cidr.containsIP",
    "cidr_contains_cidr_string": "@kp.cidr.containsCIDR",
    "cidr_contains_cidr": "@kp.cidr.containsCIDR",
    "string_find_string": "@kp.string.find",
    "string_find_all_string": "@kp.string.findAll",
    "string_find_all_string_int": "@kp.string.findAll",
}
# Functions library.CostEstimator prices whole (no call cost besides): the list
# traversals, the network functions but `string()`, and the regex ones; their
# implementations charge it.
WHOLLY_PRICED = K8S_TRAVERSED | frozenset((
    "ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback",
    "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "cidr", "isCIDR",
    "prefixLength", "masked", "containsIP", "containsCIDR", "find", "findAll"))
# Runtime functions (and operand counts) whose operands after the first reach them in a
# list: a Python function's parameter cannot be of any type in cel-expr-python.
WRAPPED_OPERANDS = frozenset((("@kp.list.indexOf", 2), ("@kp.list.lastIndexOf", 2),
                              ("@kp.mapInsert", 3)))
# What the two-variable transformMap and transformMapEntry macros expand to.
MAP_INSERT = "cel.@mapInsert"
# Result types a Python function must declare (dyn results cannot be durations or
# timestamps).
_TIME_KINDS = ("duration", "timestamp")

_LIBRARY_IDS = _EXT_LIST_IDS | frozenset(
    decl.id for name, overloads in _declarations().items() for decl in overloads
    if decl.id.startswith(("list_", "lists_")) and decl.id not in ("list_join",
                                                                    "list_join_string"))


def library_call(function: str, overloads: Sequence[str]) -> bool:
    return runtime_name(function, overloads) is not None


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
        result = list(range(count)) if count > 0 else []
        self._charge(_allocating(1, len(result)))
        return result

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
