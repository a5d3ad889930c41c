"""The worst-case cel-go cost and comprehension iterations of a DRA selector on any
device the API server admits (cel_cost.py's prices, the device's size limits). A selector
whose bound fits well within the limit and cel-cpp's iteration budget runs unmetered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kpysched.plugins.dynamic_resources.cel_ast import (
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
    SIZED,
    STRING,
    STRUCT,
    UNKNOWN,
    Checked,
    Expr,
    const_value,
)
from kpysched.plugins.dynamic_resources.cel_cost import (
    QUALIFIERS,
    arm_discount,
    call_cost,
    in_bytes,
    is_conditional,
    overload_id,
    own_cost,
    set_membership,
    static_size,
)
from kpysched.plugins.dynamic_resources.cel_declarations import (
    K8S_TRAVERSED,
    WHOLLY_PRICED,
    library_call,
)
from kpysched.plugins.dynamic_resources.cel_named_formats import MAX_REGEX_SIZE

# What a device can hold (k8s.io/api/resource/v1 limits), for the upper bound.
_MAX_ENTRIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_MAX_DOMAIN, _MAX_ID, _MAX_VALUE, _MAX_DRIVER = 63, 32, 64, 63
_MAX_UTF8 = 4  # bytes a rune takes in UTF-8, at most

_INF = math.inf


@dataclass(slots=True, frozen=True)
class _Size:
    """Upper bound of a value's size; `element` for what iterating it yields, `member`
    for what selecting or indexing it yields (the device's known shape)."""

    kind: int
    size: float
    element: _Size | None = None
    member: _Size | None = None
    fields: dict[str, _Size] = field(default_factory=dict)


_ANY = _Size(UNKNOWN, _INF)
_ONE = _Size(SCALAR, 1)
_ATTRIBUTE = _Size(UNKNOWN, _MAX_VALUE)  # int, bool, string or semver
_ATTRIBUTES = _Size(MAP_KIND, _MAX_ENTRIES, _Size(STRING, _MAX_ID), _ATTRIBUTE)
_CAPACITIES = _Size(MAP_KIND, _MAX_ENTRIES, _Size(STRING, _MAX_ID), _Size(MESSAGE, 1))
_DEVICE = _Size(MAP_KIND, 4, _Size(STRING, 24), _ANY, {
    "driver": _Size(STRING, _MAX_DRIVER), "allowMultipleAllocations": _ONE,
    "attributes": _Size(MAP_KIND, _MAX_ENTRIES, _Size(STRING, _MAX_DOMAIN), _ATTRIBUTES),
    "capacity": _Size(MAP_KIND, _MAX_ENTRIES, _Size(STRING, _MAX_DOMAIN), _CAPACITIES)})


def _join(sizes: Sequence[_Size]) -> _Size:
    if not sizes:
        return _Size(UNKNOWN, 0)
    kinds = {size.kind for size in sizes}
    return _Size(kinds.pop() if len(kinds) == 1 else UNKNOWN, max(s.size for s in sizes))


def _traversal(size: _Size | None) -> float:
    """Upper bound of library.traversalCost (a string priced by its bytes)."""
    if size is None or size.size == _INF:
        return _INF
    if size.kind == LIST_KIND:
        return size.size * _traversal(size.element) if size.size else 0
    if size.kind == MAP_KIND:
        return size.size * (_traversal(size.element) + _traversal(size.member)) if (
            size.size) else 0
    if size.kind == STRING:
        return math.floor(size.size * _MAX_UTF8 * 0.1)
    if size.kind in (SCALAR, MESSAGE):
        return 1
    return max(1.0, math.floor(size.size * _MAX_UTF8 * 0.1))  # a string, or no size


def _int_constant(node: Expr) -> float:
    value = const_value(node) if node.kind == CONST else None
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else _INF


def _library_bound(node: Expr, overloads: list[str], args: list[_Size]) -> float:
    """What a library function charges beyond own_cost, at most (cel_lists.py,
    cel_network.py, cel_regex.py)."""
    if node.name in K8S_TRAVERSED:
        return _traversal(args[0])
    if node.name in ("find", "findAll"):
        length, pattern = args[0].size, args[1].size
        if _INF in (length, pattern):
            return _INF
        return math.ceil((1 + length) * 0.1) * math.ceil(pattern * 0.25)
    if node.name == "validate":  # the format library's
        length = args[1].size
        return _INF if length == _INF else math.ceil((1 + length) * 0.1) * math.ceil(
            MAX_REGEX_SIZE * 0.25)
    if node.name.startswith("format."):
        return 0
    if node.name in WHOLLY_PRICED:  # the IP and CIDR functions
        text = args[-1] if args and args[-1].kind in (STRING, UNKNOWN) else None
        parse = (0.0 if text is None else _INF if text.size == _INF
                 else math.ceil(text.size * 0.1))
        if node.name == "ip.isCanonical":
            return 2 * parse
        if node.name in ("containsIP", "containsCIDR"):
            return 7 + parse  # up to 16 bytes compared twice, once more and one for a CIDR
        return max(parse, 1)
    if node.name in ("string", "format"):
        return 0
    sizes = [arg.size for arg in args]
    if node.name.startswith("sets."):
        return sizes[0] * sizes[1] * (2 if node.name == "sets.equivalent" else 1)
    if node.name in ("sort", "@sortByAssociatedKeys") and len(overloads) > 1:
        return 0
    if node.name in ("sort", "distinct"):
        return 10 + sizes[0] * sizes[0] * 2.1
    if node.name == "@sortByAssociatedKeys":
        return 10 + sizes[1] * sizes[1] * 2.1
    if node.name == "lists.range":
        return 10 + _int_constant(node.args[0])
    if node.name == "flatten":
        depth = _int_constant(node.args[0]) if node.args else 1
        return 10 + depth * sizes[0]
    return 10 + max(sizes[0], 1)  # slice, reverse: the result is no longer than the list


@dataclass(slots=True)
class Bound:
    """Worst-case cost and comprehension iterations of a checked selector on any device
    the API server admits; math.inf where a size cannot be bounded."""

    checked: Checked
    cost: float = 0
    iterations: float = 0

    def __post_init__(self) -> None:
        self.cost, self.iterations, _ = self._walk(self.checked.root, {"device": _DEVICE})

    def _walk(self, node: Expr, scope: dict[str, _Size]) -> tuple[float, float, _Size]:
        if node.kind == COMPREHENSION:
            return self._comprehension(node, scope)
        if node.kind == CALL and set_membership(node) and not node.args[1].args:
            return 0, 0, _ONE  # `x in []` folds to false: x is never evaluated
        cost = iterations = 0.0
        children: list[_Size] = []
        for child in node.children():
            child_cost, child_iterations, size = self._walk(child, scope)
            cost, iterations = cost + child_cost, iterations + child_iterations
            children.append(size)
        size = self._size(node, scope, children)
        static: float | None = own_cost(node, self.checked)
        if (static is not None and node.kind == CALL
                and library_call(node.name, self.checked.overloads(node.id))):
            static += _library_bound(node, self.checked.overloads(node.id), children)
        own = (static if static is not None else
               self._call_bound(node.name, overload_id(node, self.checked), children, size,
                                in_bytes(node, 0)))
        if is_conditional(node):
            own -= sum(arm_discount(arm, self.checked) for arm in node.args[1:])
        return cost + own, iterations, size

    def _comprehension(self, node: Expr, scope: dict[str, _Size]) -> tuple[float, float,
                                                                            _Size]:
        parts = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step,
                 node.result)
        assert all(part is not None for part in parts)
        iter_range, init, condition, step, result = parts
        assert iter_range and init and condition and step and result
        range_cost, range_iterations, range_size = self._walk(iter_range, scope)
        init_cost, init_iterations, init_size = self._walk(init, scope)
        inner = dict(scope)
        inner[node.iter_var] = range_size.element or _ANY
        if node.iter_var2:
            inner[node.iter_var2] = range_size.member or _ANY
        accu_info = self.checked.types.get(init.id)
        inner[node.accu_var] = (init_size if iter_range.kind == LIST and not iter_range.args
                                else _ONE if accu_info and accu_info.kind == SCALAR else _ANY)
        loop_cost, loop_iterations, _ = self._walk(condition, inner)
        step_cost, step_iterations, _ = self._walk(step, inner)
        result_cost, result_iterations, result_size = self._walk(result, inner)
        count = range_size.size if range_size.kind in SIZED else _INF
        if iter_range.kind == LIST and not iter_range.args:
            count = 0  # cel.bind
        per_item_cost, per_item_iterations = loop_cost + step_cost, (
            1 + loop_iterations + step_iterations)
        cost = range_cost + init_cost + result_cost + (count * per_item_cost if count else 0)
        iterations = (range_iterations + init_iterations + result_iterations
                      + (count * per_item_iterations if count else 0))
        return cost, iterations, result_size

    def _size(self, node: Expr, scope: dict[str, _Size], children: list[_Size]) -> _Size:
        info = self.checked.types.get(node.id)
        if info is not None and info.kind in (SCALAR, MESSAGE):
            return _Size(info.kind, 1)
        known = static_size(node, self.checked)
        if node.kind == IDENT:
            return scope.get(node.name, _ANY)
        if node.kind == SELECT and not node.test_only:
            return children[0].fields.get(node.name) or children[0].member or _ANY
        if node.kind == CALL and node.name in QUALIFIERS and len(children) == 2:
            key = node.args[1] if node.target is None else None
            name = const_value(key) if key is not None and key.kind == CONST else None
            base = children[0]
            return (base.fields.get(name) if isinstance(name, str) else None) or (
                base.member or _ANY)
        if known is not None:
            kind, size = known
            elements = [child.size for child in children] if node.kind == LIST else []
            return _Size(kind, size, _Size(UNKNOWN, max(elements, default=0)))
        if node.kind == LIST:
            return _Size(LIST_KIND, len(node.args), _join(children))
        if node.kind == STRUCT and not node.name:
            return _Size(MAP_KIND, len(node.entries), _join(children[0::2]))
        if node.kind == CALL and node.name == "_+_" and len(children) == 2 and (
                children[0].kind in SIZED):
            element = _join([c.element for c in children if c.element is not None])
            return _Size(children[0].kind, children[0].size + children[1].size, element)
        if node.kind == CALL and node.name == "_?_:_":
            return _join(children[1:])
        if node.kind == CALL and node.name in ("slice", "reverse", "sort", "distinct",
                                               "@sortByAssociatedKeys") and (
                library_call(node.name, self.checked.overloads(node.id))):
            return children[0]  # no longer than the list, made of its elements
        if node.kind == CALL and node.name in ("max", "min") and (
                library_call(node.name, self.checked.overloads(node.id))):
            return children[0].element or _ANY
        if node.kind == CALL and node.name == "lists.range" and (
                library_call(node.name, self.checked.overloads(node.id))):
            return _Size(LIST_KIND, _int_constant(node.args[0]), _ONE)
        return _Size(info.kind if info is not None else UNKNOWN, _INF)

    @staticmethod
    def _call_bound(function: str, overload: str, args: list[_Size], result: _Size,
                    utf8_target: bool) -> float:
        if any(arg.size == _INF for arg in args) or (function == "join"
                                                      and result.size == _INF):
            return _INF
        # An argument of unknown kind may be a string (the costly case) or not.
        worst = [(STRING if a.kind == UNKNOWN else a.kind, a.size) for a in args]
        if utf8_target and worst[0][0] == STRING:
            worst[0] = (STRING, worst[0][1] * _MAX_UTF8)  # priced by bytes, sized in runes
        unit = [(SCALAR if a.kind == UNKNOWN else a.kind, a.size) for a in args]
        target = (result.kind, result.size)
        return max(call_cost(function, overload, worst, target),
                   call_cost(function, overload, unit, target))
