"""cel-go's runtime cost of a DRA selector, as kube-scheduler v1.36 counts it.

Upstream (k8s.io/dynamic-resource-allocation/cel compile.go) builds each selector's
program with cel.CostLimit(resourceapi.CELSelectorExpressionMaxCost = 1,000,000) on the
Kubernetes base environment, whose program options are OptOptimize, OptTrackCost,
PresenceTestHasCost(false) and CostTracking(&library.CostEstimator{}). cel-go's
interpreter.CostTracker then charges, after each step it evaluates (cel-go v0.26):

- a variable 1; a selection or index 1 for its qualifier, except that an index whose
  key is itself an attribute costs what the key costs and no more, and a key that is no
  attribute or a `?:` costs 1 more; selecting from a value that is no attribute costs 1
  more (the relative attribute); `.?f`/`[?k]` charge the qualifier only when present;
  `has()`, constants and type names 0;
- a list literal 10, a map literal 30, a message literal 40, except that OptOptimize
  folds literals of constants (and type conversions of a constant) into constants, and
  `x in [constants]` into a set lookup that costs nothing itself;
- `&&`, `||`, `?:`, `or`/`orValue` of optionals and comprehensions nothing themselves,
  only what they evaluate; an arm of `?:` that is an attribute is resolved without
  charging its root (the variable or relative attribute): arm_discount;
- a call: library.CostEstimator.CallCost (by function name) when it answers, else
  cel-go's defaults (runtimecost.go costCall, by the overload the planner knows: only
  when the checker resolved exactly one), which depend on the sizes of strings, bytes,
  lists and maps for a few overloads, else 1 (call_cost).

When the running total passes the limit, evaluation stops with "operation cancelled:
actual cost limit exceeded". This module holds the arithmetic; cel_bound.py an upper
bound that lets a selector skip metering when its worst case fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kpysched.plugins.dynamic_resources.cel_ast import (
    BYTES,
    CALL,
    COMPREHENSION,
    CONST,
    IDENT,
    LIST,
    LIST_KIND,
    MAP_KIND,
    MESSAGE,
    SCALAR,
    SELECT,
    STRING,
    STRUCT,
    UNKNOWN,
    Checked,
    Expr,
    const_value,
)
from kpysched.plugins.dynamic_resources.cel_declarations import WHOLLY_PRICED, library_call

COST_LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost (= celconfig.PerCallLimit)
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
_LIST_CREATE, _MAP_CREATE, _STRUCT_CREATE = 10, 30, 40  # cel-go common/cost.go
_STRING_TRAVERSAL, _REGEX_LENGTH = 0.1, 0.25


_SHORT_CIRCUIT = ("_&&_", "_||_", "_?_:_")
_OPTIONAL_OR = {"or": "optional_or_optional", "orValue": "optional_orValue_value"}
QUALIFIERS = ("_[_]", "_[?_]", "_?._")
_CONVERSIONS = ("bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp",
                "type", "uint")
_LIBRARY_UNIT = ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
                 "isLessThan", "compareTo", "add", "sub", "major", "minor", "patch")
# library.CostEstimator prices these by function name, from their sizes (join: result).
_LIBRARY_SIZED = frozenset(("indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "substring",
                            "trim", "replace", "split", "join", "quantity", "isQuantity",
                            "semver", "isSemver", "_==_"))
# library.traversalCost prices these by the bytes of their string target (UTF-8), where
# every other price counts runes: the size given for that target is its length in bytes.
BYTE_COUNTED = frozenset(("indexOf", "lastIndexOf"))
# cel-go's costCall prices these overloads from sizes; it knows the overload only when
# the checker resolved exactly one (==/!= always: evalEq/evalNe).
_TENTH_OF_FIRST = frozenset(("starts_with_string", "ends_with_string", "string_to_bytes",
                             "bytes_to_string", "strings_quote", "string_format"))
_TENTH_OF_SHORTER = frozenset((
    "equals", "not_equals", "less_string", "greater_string", "less_equals_string",
    "greater_equals_string", "less_bytes", "greater_bytes", "less_equals_bytes",
    "greater_equals_bytes"))
_SIZED_OVERLOADS = _TENTH_OF_FIRST | _TENTH_OF_SHORTER | {
    "in_list", "add_string", "add_bytes", "matches_string", "contains_string"}


def _tenths(size: float) -> int:
    # Go's uint64(math.Ceil(float64(n) * StringTraversalCostFactor)), rounding included.
    return math.ceil(size * _STRING_TRAVERSAL)


def call_cost(function: str, overload: str, args: Sequence[tuple[int, float]],
              result: tuple[int, float] = (SCALAR, 1)) -> float:
    """The cost cel-go charges for one call, from the (kind, size) of each argument (a
    member call's target first) and of its result; size is 1 for a value without one
    (or a failed one). `overload` is the overload id cel-go's planner knows, or ""."""
    kinds = [kind for kind, _ in args]
    sizes = [size for _, size in args]
    # k8s.io/apiserver/pkg/cel/library: CostEstimator.CallCost, by function name.
    if function in ("indexOf", "lastIndexOf"):
        # traversalCost: truncated, not rounded up; a string's size is its bytes here.
        return int(sizes[0] * _STRING_TRAVERSAL) if kinds[0] in (STRING, BYTES) else 1
    if function in ("lowerAscii", "upperAscii", "substring", "trim", "quantity",
                    "isQuantity", "semver", "isSemver"):
        return _tenths(sizes[0])
    if function in ("replace", "split"):
        return math.ceil(sizes[0] * 2 * _STRING_TRAVERSAL)
    if function == "join":
        return math.ceil(result[1] * 2 * _STRING_TRAVERSAL)
    if function in _LIBRARY_UNIT or (function == "_==_" and kinds[0] == MESSAGE):
        return 1
    # cel-go interpreter.CostTracker.costCall, by overload id.
    if overload in _TENTH_OF_FIRST:
        return _tenths(sizes[0])
    if overload == "in_list":
        return sizes[1]
    if overload in _TENTH_OF_SHORTER:
        return _tenths(min(sizes[0], sizes[1]))
    if overload in ("add_string", "add_bytes"):
        return _tenths(sizes[0] + sizes[1])
    if overload == "matches_string":
        return (math.ceil((1.0 + sizes[0]) * _STRING_TRAVERSAL)
                * math.ceil(sizes[1] * _REGEX_LENGTH))
    if overload == "contains_string":
        return _tenths(sizes[0]) * _tenths(sizes[1])
    return 1


_TYPED_OPERATORS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater",
                    "_>=_": "greater_equals", "_+_": "add"}


def overload_id(node: Expr, checked: Checked) -> str:
    """The overload cel-go's planner names for a call (resolveFunction), or ""."""
    if node.name in ("_==_", "_!=_"):
        return "equals" if node.name == "_==_" else "not_equals"
    overloads = checked.overloads(node.id)
    if len(overloads) == 1:
        return overloads[0]
    if node.name in _TYPED_OPERATORS:
        # Upstream declares `device` as an object whose driver is a string, where this
        # environment has map(string, dyn): its checker resolves what ours cannot.
        kinds = {_upstream_kind(operand, checked) for operand in call_operands(node)}
        for kind, suffix in ((STRING, "string"), (BYTES, "bytes")):
            if kind in kinds:
                return f"{_TYPED_OPERATORS[node.name]}_{suffix}"
    return ""


def _upstream_kind(node: Expr, checked: Checked) -> int:
    info = checked.types.get(node.id)
    if info is not None and info.kind != UNKNOWN:
        return info.kind
    if checked.upstream_kinds is None:
        checked.upstream_kinds = {}
        _mark_device_keys(checked.root, {}, checked.upstream_kinds)
    if node.id in checked.upstream_kinds:
        return checked.upstream_kinds[node.id]
    if (node.kind == SELECT and node.name == "driver" and not node.test_only
            and node.target is not None and node.target.kind == IDENT
            and node.target.name == "device"):
        return STRING
    if node.kind == CALL and node.name == "_+_":
        kinds = {_upstream_kind(operand, checked) for operand in call_operands(node)}
        return next((kind for kind in (STRING, BYTES) if kind in kinds), UNKNOWN)
    if node.kind == CALL and node.name == "_?_:_":
        arms = {_upstream_kind(arm, checked) for arm in node.args[1:]}
        return arms.pop() if len(arms) == 1 else UNKNOWN
    return UNKNOWN


def size_dependent(node: Expr, checked: Checked) -> bool:
    return node.name in _LIBRARY_SIZED or overload_id(node, checked) in _SIZED_OVERLOADS


# --- the static part ----------------------------------------------------------------------

def is_constant(node: Expr) -> bool:
    """What OptOptimize turns into a constant before cost tracking sees it."""
    if node.kind == CONST:
        return True
    if node.kind == LIST:
        return not node.optional_indices and all(is_constant(e) for e in node.args)
    if node.kind == STRUCT:
        return not node.name and all(
            entry.key is not None and not entry.optional and is_constant(entry.key)
            and is_constant(entry.value) for entry in node.entries)
    if node.kind == CALL:
        return (node.name in _CONVERSIONS and node.target is None and len(node.args) == 1
                and is_constant(node.args[0]))
    return False


def set_membership(node: Expr) -> bool:
    """`x in [constants]` that OptOptimize turns into a set lookup (primitive, not bytes)."""
    if node.kind != CALL or node.name != "@in" or len(node.args) != 2:
        return False
    values = node.args[1]
    return values.kind == LIST and is_constant(values) and all(
        element.kind == CONST and isinstance(const_value(element), (bool, int, float, str))
        for element in values.args)


def own_cost(node: Expr, checked: Checked) -> int | None:
    """What the node itself costs, children aside; None for a call whose cost depends on
    sizes that are not known before it runs."""
    if node.kind in (CONST, COMPREHENSION) or is_constant(node):
        return 0
    if node.kind == IDENT:
        return 0 if _type_name(node, checked) else 1
    if node.kind == SELECT:
        if node.test_only:
            return 0  # PresenceTestHasCost(false)
        assert node.target is not None
        return 1 + _relative(node.target, checked)
    if node.kind == LIST:
        return _LIST_CREATE
    if node.kind == STRUCT:
        return _STRUCT_CREATE if node.name else _MAP_CREATE
    if node.name in _SHORT_CIRCUIT or optional_or(node, checked) or set_membership(node):
        return 0
    if library_call(node.name, checked.overloads(node.id)):
        # The library functions charge the rest from their values (cel_lists.py,
        # cel_network.py); some have no call cost besides.
        return 0 if node.name in WHOLLY_PRICED else 1
    if node.name in QUALIFIERS:
        # The planner makes the key a qualifier of the operand's attribute: a constant
        # costs 1, an attribute what it costs anyway, anything else 1 more.
        operand, key = call_operands(node)
        extra = 0 if is_attribute(key, checked) and not is_conditional(key) else 1
        return _relative(operand, checked) + extra
    if size_dependent(node, checked):
        operands = call_operands(node)
        known = [static_size(arg, checked, in_bytes(node, position))
                 for position, arg in enumerate(operands)]
        if node.name != "join" and all(size is not None for size in known):
            return int(call_cost(node.name, overload_id(node, checked),
                                 [k for k in known if k is not None]))
        return None
    return 1


def _type_name(node: Expr, checked: Checked) -> bool:
    info = checked.types.get(node.id)
    return info is not None and info.is_type_value


def is_attribute(node: Expr, checked: Checked) -> bool:
    """What cel-go's planner makes an attribute: variables, selections, indexes and `?:`."""
    if node.kind == IDENT:
        return not _type_name(node, checked)
    return node.kind == SELECT or (node.kind == CALL and node.name in (*QUALIFIERS,
                                                                       "_?_:_"))


def is_conditional(node: Expr) -> bool:
    return node.kind == CALL and node.name == "_?_:_"


def optional_qualifier(node: Expr) -> bool:
    """`x.?f` or `x[?"k"]`: cel-go charges the qualifier only when the value is present."""
    return (node.kind == CALL and node.name in ("_[?_]", "_?._") and len(node.args) == 2
            and node.args[1].kind == CONST)


def arm_discount(arm: Expr, checked: Checked) -> int:
    """What cel-go does not charge for an arm of `?:`: an arm that is an attribute is
    resolved through it without observing its root (the variable, or the relative
    attribute around a value); its qualifiers are charged."""
    node = arm
    while True:
        if node.kind == IDENT:
            return 0 if _type_name(node, checked) else 1
        if node.kind == SELECT and not node.test_only and node.target is not None:
            operand = node.target
        elif node.kind == CALL and node.name in QUALIFIERS:
            operand = call_operands(node)[0]
        else:
            return 0
        if not is_attribute(operand, checked):
            return 1
        if is_conditional(operand):
            return 0
        node = operand


def _relative(operand: Expr, checked: Checked) -> int:
    # Selecting from a value that is no attribute wraps it in a relative attribute,
    # whose evaluation cel-go charges like an identifier's.
    return 0 if is_attribute(operand, checked) else 1


def optional_or(node: Expr, checked: Checked) -> bool:
    """`or`/`orValue` of an optional, which cel-go evaluates lazily (decorateOptionalOr)."""
    return (node.kind == CALL and node.name in _OPTIONAL_OR and node.target is not None
            and len(node.args) == 1 and bool(set(checked.overloads(node.id))
                                              & set(_OPTIONAL_OR.values())))


_KEY = -1  # in _mark_device_keys' scope: a variable iterating over a device map


def _device_map_level(node: Expr, scope: dict[str, int]) -> int:
    """1 for device.attributes or device.capacity, 2 for one domain of them (both
    string-keyed maps), 0 for anything else."""
    if node.kind == IDENT:
        return max(scope.get(node.name, 0), 0)
    operand = (node.target if node.kind == SELECT and not node.test_only
               else node.args[0] if node.kind == CALL and node.name == "_[_]" else None)
    if operand is None:
        return 0
    if operand.kind == IDENT and operand.name == "device" and "device" not in scope:
        return 1 if node.kind == SELECT and node.name in ("attributes", "capacity") else 0
    return 2 if _device_map_level(operand, scope) == 1 else 0


def _mark_device_keys(node: Expr, scope: dict[str, int], out: dict[int, int]) -> None:
    """Record as strings the variables that iterate over the device's maps (upstream
    declares their key types; here they are dyn)."""
    if node.kind == IDENT and scope.get(node.name) == _KEY:
        out[node.id] = STRING
    if node.kind != COMPREHENSION:
        for child in node.children():
            _mark_device_keys(child, scope, out)
        return
    iter_range, init, condition, step, result = (
        node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
    assert iter_range and init and condition and step and result
    _mark_device_keys(iter_range, scope, out)
    _mark_device_keys(init, scope, out)
    is_bind = iter_range.kind == LIST and not iter_range.args
    inner = {**scope, node.accu_var: _device_map_level(init, scope) if is_bind else 0}
    loop = {**inner, node.iter_var: _KEY if _device_map_level(iter_range, scope) else 0}
    _mark_device_keys(condition, loop, out)
    _mark_device_keys(step, loop, out)
    _mark_device_keys(result, inner, out)


def call_operands(node: Expr) -> list[Expr]:
    return ([node.target] if node.target is not None else []) + node.args


def in_bytes(call: Expr, position: int) -> bool:
    """Is the call's operand at this position (its target first) priced by its bytes."""
    return position == 0 and call.target is not None and call.name in BYTE_COUNTED


def static_size(node: Expr, checked: Checked, utf8: bool = False,
                ) -> tuple[int, float] | None:
    """(kind, size) when known without evaluating: constants, and values without a size.
    A string's size is its runes, or with `utf8` its bytes."""
    if node.kind == CONST:
        value = const_value(node)
        if isinstance(value, str):
            return STRING, len(value.encode()) if utf8 else len(value)
        if isinstance(value, bytes):
            return BYTES, len(value)
        return SCALAR, 1
    if node.kind == LIST and is_constant(node):
        return LIST_KIND, len(node.args)
    if node.kind == STRUCT and not node.name and is_constant(node):
        return MAP_KIND, len(node.entries)
    info = checked.types.get(node.id)
    if info is not None and info.kind in (SCALAR, MESSAGE):
        return info.kind, 1
    return None
