"""The checking side of the DRA selector environment: what the Kubernetes CEL
environment (apiserver/pkg/cel/environment/base.go at v1.36) declares beyond
cel-expr-python's standard environment and extensions, and which runtime function
runs each such call.

- Kubernetes' lists (`isSorted`, `sum`, `min`, `max`, `indexOf`/`lastIndexOf` on lists),
  regex (`find`, `findAll`), IP, CIDR, URL and format libraries;
- cel-go's lists extension, version 3 (`slice`, `flatten`, `sort`, `sortBy`,
  `lists.range`, `reverse`, `distinct`: cel-cpp's own extension, enabled by name,
  declares them with the sortBy macro) and sets extension (`sets.contains`,
  `sets.equivalent`, `sets.intersects`);
- two-variable comprehensions (ext.TwoVarComprehensions), which cel-cpp has, enabled by
  name; `cel.@mapInsert`, what transformMap and transformMapEntry expand to, has no
  implementation in cel-expr-python and runs in Python;
- cel.CrossTypeNumericComparisons: `1 < 1.5`, `2u > 1` (the runtime has them; the
  checker's ordering declarations are replaced by ones that include them).

Selectors are type-checked in an environment built from checker_config(), which
declares these with cel-go's type parameters and overload ids (cel-expr-python takes
type parameters only from an environment config, whose functions cannot share a name
with an extension's or the standard library's: so the strings extension's functions,
`indexOf` and `lastIndexOf` among them, are declared here too, and the standard
ordering operators and `string()` are replaced). The checked program runs in the
runtime environment, where cel_adapt renames each library call to the `@kp.` function
runtime_name() names (cel_lists.py, cel_network.py, cel_regex.py, cel_urls.py, and
cel_format.py for the strings extension's `format`); the other calls of the strings
extension keep their names and run in cel-cpp.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

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
        # Kubernetes' URL library (cel_urls.py).
        "url": [d("string_to_url", ("string",), _URL, member=False)],
        "isURL": [d("is_url_string", ("string",), "bool", member=False)],
        **{name: [d(overload, (_URL,), "string")] for name, overload in (
            ("getScheme", "url_get_scheme"), ("getHost", "url_get_host"),
            ("getHostname", "url_get_hostname"), ("getPort", "url_get_port"),
            ("getEscapedPath", "url_get_escaped_path"))},
        "getQuery": [d("url_get_query", (_URL,), "map(string, list(string))")],
        # Kubernetes' format library (cel_named_formats.py).
        "format.named": [d("format_named", ("string",), f"optional_type({_FORMAT})",
                           member=False)],
        **{f"format.{key}": [d(f"format_{key}", (), _FORMAT, member=False)]
           for key in NAMED_FORMATS},
        "validate": [d("format_validate", (_FORMAT, "string"),
                       "optional_type(list(string))")],
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
_IP, _CIDR, _URL = "net.IP", "net.CIDR", "kubernetes.URL"
_FORMAT = "kubernetes.NamedFormat"
# The format library's constant formats (`format.<key>()`; cel_named_formats.FORMATS).
NAMED_FORMATS = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
                 "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
                 "labelValue", "uri", "uuid", "byte", "date", "datetime")
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
        params, depth, start = [], 0, 0
        inner = inner[:-1]
        for i, char in enumerate(inner):  # split at the commas between parameters
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and depth == 0:
                params.append(inner[start:i].strip())
                start = i + 1
        params.append(inner[start:].strip())
        spec["params"] = [_type_spec(param) for param in params]
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


# The IP, CIDR, regex, URL and format libraries' overloads and the `@kp.` function that
# runs each (cel_network.py, cel_regex.py, cel_urls.py, cel_named_formats.py).
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
    "string_to_url": "@kp.url", "is_url_string": "@kp.isURL",
    "url_get_scheme": "@kp.url.getScheme", "url_get_host": "@kp.url.getHost",
    "url_get_hostname": "@kp.url.getHostname", "url_get_port": "@kp.url.getPort",
    "url_get_escaped_path": "@kp.url.getEscapedPath", "url_get_query": "@kp.url.getQuery",
    "string_format": "@kp.string.format",
    "format_named": "@kp.format.named", "format_validate": "@kp.format.validate",
    **{f"format_{key}": "@kp.format.constant" for key in NAMED_FORMATS},
}
# Functions library.CostEstimator prices whole (no call cost besides): the list
# traversals, the network functions but `string()`, and the regex ones; their
# implementations charge it.
WHOLLY_PRICED = K8S_TRAVERSED | frozenset((
    "ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback",
    "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "cidr", "isCIDR",
    "prefixLength", "masked", "containsIP", "containsCIDR", "find", "findAll", "url",
    "validate"))
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
# Runtime functions answering a list of at most one value for upstream's optional
# (cel_adapt indexes it with `[?0]`).
OPTIONAL_RESULTS = frozenset(("@kp.format.named", "@kp.format.validate"))
