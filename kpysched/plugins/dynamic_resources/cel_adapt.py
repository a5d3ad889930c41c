"""The program cel-cpp runs for a checked selector, adapted where a CEL map or a message
cannot behave as upstream's Go values do. Costs and bounds are computed on the tree as
the selector was written; only what runs changes.

A domain the device lacks.

DeviceMatches hands cel-go `device.attributes` and `device.capacity` as maps whose
lookup of an unknown key finds an empty map (newStringInterfaceMapWithDefault), while
`in`, size() and iteration see only the domains the device has. A CEL map value cannot
do that, so the lookups themselves are rewritten where the tree names the device's
maps, directly or through a `cel.bind` of them:

- `M[k]` and `M.k` become `M[?k].orValue({})`;
- `M[?k]` and `M.?k` become `optional.of(M[?k].orValue({}))` (always present upstream);
- `has(M.k)` becomes `true` (the lookup always finds something upstream).

Inside a loop driven from Python (cel_rewrite), an alias is read through `@kp.var`;
those reads are named by the metered copy. A device map reached any other way (inside
a list, through dyn) keeps plain map semantics: indexing a missing domain there fails
with `no such key: <domain>`.

Library calls. The list and set libraries' calls become calls of the `@kp.` functions
that implement them (cel_declarations.runtime_name), with a member call's target as first argument.

The format library's `format.named` and `validate` answer optionals, which cannot
leave a Python function: theirs answer a list of at most one value, and the call
becomes `@kp.format.named(n)[?0]`. A constant format (`format.dns1123Label()`) becomes
`@kp.format.constant("dns1123Label")`.

Equality of quantities. Quantity.Equal compares amounts, and a quantity message also
records how apimachinery holds an amount that it does not call an integer
(cel_library.quantity_message), so `a == b` and `a != b` between two values the checker
typed as quantities become `a.compareTo(b) == 0` / `!= 0`. Equality through dyn, lists
or `in` stays message equality.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kpysched.plugins.dynamic_resources.cel_ast import (
    CALL,
    COMPREHENSION,
    IDENT,
    LIST,
    SELECT,
    STRUCT,
    Checked,
    Entry,
    Expr,
    bool_const,
    int_const,
    string_const,
)
from kpysched.plugins.dynamic_resources.cel_declarations import (
    OPTIONAL_RESULTS,
    WRAPPED_OPERANDS,
    runtime_name,
)
from kpysched.plugins.dynamic_resources.cel_literals import type_names

_DEVICE_MAPS = ("attributes", "capacity")


def library_calls(checked: Checked) -> dict[int, str]:
    """The calls of the list and set libraries, with the `@kp.` function that runs each
    (cel_declarations.runtime_name)."""
    found: dict[int, str] = {}
    stack = [checked.root]
    while stack:
        node = stack.pop()
        stack += node.children()
        if node.kind == CALL:
            name = runtime_name(node.name, checked.overloads(node.id))
            if name is not None:
                found[node.id] = name
    return found


def message_equalities(checked: Checked) -> frozenset[int]:
    """The `==`/`!=` calls between two values typed as quantities."""
    names = type_names(checked)
    found: set[int] = set()
    stack = [checked.root]
    while stack:
        node = stack.pop()
        stack += node.children()
        if node.kind == CALL and node.name in ("_==_", "_!=_") and len(node.args) == 2 and all(
                names.get(arg.id) == "kubernetes.Quantity" for arg in node.args):
            found.add(node.id)
    return frozenset(found)


def _unguarded(node: Expr) -> Expr:
    """The value inside the metered copy's `@kp.tick(n) ? value : null` (cel_rewrite)."""
    while (node.kind == CALL and node.name == "_?_:_" and len(node.args) == 3
           and node.args[0].kind == CALL and node.args[0].name == "@kp.tick"):
        node = node.args[1]
    return node


class _Adapter:
    def __init__(self, next_id: Callable[[], int], checked: Checked,
                 captured: frozenset[int]) -> None:
        self._id = next_id
        self._equalities = checked.equalities
        self._library = checked.library_calls
        self._captured = captured
        self.changed = False
        self.alias_idents: set[int] = set()

    def _is_device_map(self, node: Expr, aliases: frozenset[str], device_visible: bool
                       ) -> bool:
        if node.kind == IDENT:
            return node.name in aliases
        if node.kind == CALL and node.name == "@kp.var":
            return node.id in self._captured  # an alias a driven loop reads from Python
        return (node.kind == SELECT and not node.test_only and node.name in _DEVICE_MAPS
                and device_visible and node.target is not None
                and node.target.kind == IDENT and node.target.name == "device")

    def _lookup(self, operand: Expr, key: Expr) -> Expr:
        self.changed = True
        found = Expr(self._id(), CALL, name="_[?_]", args=[operand, key])
        empty = Expr(self._id(), STRUCT)
        return Expr(self._id(), CALL, name="orValue", target=found, args=[empty])

    def walk(self, node: Expr, aliases: frozenset[str], device_visible: bool) -> Expr:
        if node.kind == IDENT and node.name in aliases:
            self.alias_idents.add(node.id)
        if node.kind == CALL and node.id in self._equalities:
            self.changed = True
            left, right = (self.walk(arg, aliases, device_visible) for arg in node.args)
            order = Expr(self._id(), CALL, name="compareTo", target=left, args=[right])
            return Expr(node.id, CALL, name=node.name, args=[order, int_const(self._id(), 0)])
        if node.kind == CALL and node.id in self._library:
            self.changed = True
            operands = [self.walk(operand, aliases, device_visible) for operand in
                        ([node.target] if node.target is not None else []) + node.args]
            name = self._library[node.id]
            if (name, len(operands)) in WRAPPED_OPERANDS:
                operands[1:] = [Expr(self._id(), LIST, args=operands[1:])]
            if name == "@kp.format.constant":
                operands = [string_const(self._id(), node.name.removeprefix("format."))]
            call = Expr(self._id(), CALL, name=name, args=operands)
            if name in OPTIONAL_RESULTS:  # a list of at most one value: its optional
                return Expr(self._id(), CALL, name="_[?_]",
                            args=[call, int_const(self._id(), 0)])
            return call
        if node.kind == COMPREHENSION:
            return self._comprehension(node, aliases, device_visible)
        if node.kind == SELECT and node.target is not None and self._is_device_map(
                node.target, aliases, device_visible):
            operand = self.walk(node.target, aliases, device_visible)
            if node.test_only:
                self.changed = True
                return bool_const(node.id, True)
            return self._lookup(operand, string_const(self._id(), node.name))
        if (node.kind == CALL and node.name in ("_[_]", "_[?_]", "_?._")
                and node.target is None and len(node.args) == 2
                and self._is_device_map(node.args[0], aliases, device_visible)):
            operand = self.walk(node.args[0], aliases, device_visible)
            key = self.walk(node.args[1], aliases, device_visible)
            value = self._lookup(operand, key)
            if node.name == "_[_]":
                return value
            return Expr(node.id, CALL, name="optional.of", args=[value])
        target = (self.walk(node.target, aliases, device_visible)
                  if node.target is not None else None)
        args = [self.walk(arg, aliases, device_visible) for arg in node.args]
        entries = [Entry(entry.id, self.walk(entry.value, aliases, device_visible),
                         self.walk(entry.key, aliases, device_visible)
                         if entry.key is not None else None,
                         entry.field_key, entry.optional) for entry in node.entries]
        return dataclasses.replace(node, target=target, args=args, entries=entries)

    def _comprehension(self, node: Expr, aliases: frozenset[str], device_visible: bool
                       ) -> Expr:
        iter_range, init, condition, step, result = (
            node.iter_range, node.accu_init, node.loop_condition, node.loop_step,
            node.result)
        assert iter_range and init and condition and step and result
        is_bind = iter_range.kind == LIST and not iter_range.args
        new_range = self.walk(iter_range, aliases, device_visible)
        new_init = self.walk(init, aliases, device_visible)
        # The accumulator is seen by the loop and the result; the iteration variables
        # only by the loop.
        accu = node.accu_var
        outer = aliases - {accu}
        if is_bind and self._is_device_map(_unguarded(init), aliases, device_visible):
            outer = outer | {accu}
        result_visible = device_visible and accu != "device"
        loop_aliases = outer - {node.iter_var, node.iter_var2}
        loop_visible = device_visible and "device" not in (accu, node.iter_var,
                                                           node.iter_var2)
        return dataclasses.replace(
            node, iter_range=new_range, accu_init=new_init,
            loop_condition=self.walk(condition, loop_aliases, loop_visible),
            loop_step=self.walk(step, loop_aliases, loop_visible),
            result=self.walk(result, outer, result_visible))


def adapted(root: Expr, next_id: Callable[[], int], checked: Checked,
            captured: frozenset[int] = frozenset()) -> Expr | None:
    """`root` (the checked selector's tree or a copy of it) as cel-cpp should run it,
    new nodes numbered by next_id; None when nothing changes. Reads the checked
    selector's `equalities` and `library_calls`; `captured`: the `@kp.var` calls of a
    driven loop's part that read a `cel.bind` alias of a device map (cel_rewrite)."""
    adapter = _Adapter(next_id, checked, captured)
    out = adapter.walk(root, frozenset(), True)
    return out if adapter.changed else None


def device_aliases(checked: Checked) -> frozenset[int]:
    """The variables (node ids) that name a `cel.bind` alias of a device map."""
    adapter = _Adapter(lambda: 0, checked, frozenset())
    adapter.walk(checked.root, frozenset(), True)
    return frozenset(adapter.alias_idents)
