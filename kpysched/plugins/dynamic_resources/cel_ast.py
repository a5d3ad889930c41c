"""The checked CEL AST that cel-expr-python serialises (an Any holding a
cel.expr.CheckedExpr), read into a small tree and written back, so that cel_meter.py can
rebuild a selector with cost meters and hand it to `Env.deserialize`.

Only the wire format is needed: the messages are decoded by field number (cel/expr/
syntax.proto and checked.proto), not through generated classes, which the package does
not ship. A node keeps its checked id, so the reference and type maps stay valid for
the nodes it keeps; new nodes take ids above every id in the expression.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

CONST, IDENT, SELECT, CALL, LIST, STRUCT, COMPREHENSION = 3, 4, 5, 6, 7, 8, 9
_CHECKED_EXPR_URL = b"type.googleapis.com/cel.expr.CheckedExpr"


# --- protobuf wire format -----------------------------------------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, Any]]:
    """A message's (field number, value) pairs: ints, or bytes for length-delimited."""
    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        kind = key & 7
        value: int | bytes
        if kind == 0:
            value, i = _varint(buf, i)
        elif kind == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif kind in (1, 5):
            width = 8 if kind == 1 else 4
            value, i = buf[i:i + width], i + width
        else:
            raise ValueError(f"wire type {kind}")
        out.append((key >> 3, value))
    return out


def varints(buf: bytes) -> list[int]:
    """A packed repeated integer field's values."""
    out: list[int] = []
    i = 0
    while i < len(buf):
        value, i = _varint(buf, i)
        out.append(value)
    return out


def first(pairs: list[tuple[int, Any]], number: int, default: Any = b"") -> Any:
    return next((value for num, value in pairs if num == number), default)


def _put_varint(out: bytearray, value: int) -> None:
    value &= (1 << 64) - 1  # negative int64s travel as ten-byte two's complement
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put(out: bytearray, number: int, value: int | bytes | str) -> None:
    if isinstance(value, int):
        _put_varint(out, number << 3)
        _put_varint(out, value)
        return
    payload = value.encode() if isinstance(value, str) else value
    _put_varint(out, number << 3 | 2)
    _put_varint(out, len(payload))
    out += payload


# --- the tree -----------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class Entry:
    """A map or message literal's entry: field_key for messages, key for maps."""

    id: int
    value: Expr
    key: Expr | None = None
    field_key: str = ""
    optional: bool = False


@dataclass(slots=True, eq=False)
class Expr:
    id: int
    kind: int
    const: bytes = b""  # the cel.expr.Constant message, as read
    name: str = ""  # ident name, selected field, function, message name
    test_only: bool = False
    target: Expr | None = None  # select operand or member call target
    args: list[Expr] = field(default_factory=list)  # call arguments, list elements
    optional_indices: list[int] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Expr | None = None
    accu_init: Expr | None = None
    loop_condition: Expr | None = None
    loop_step: Expr | None = None
    result: Expr | None = None

    def children(self) -> list[Expr]:
        out = [self.target] if self.target is not None else []
        out += self.args
        for entry in self.entries:
            if entry.key is not None:
                out.append(entry.key)
            out.append(entry.value)
        out += [part for part in (self.iter_range, self.accu_init, self.loop_condition,
                                  self.loop_step, self.result) if part is not None]
        return out


def decode_expr(buf: bytes) -> Expr:
    pairs = fields(buf)
    node = Expr(id=first(pairs, 2, 0), kind=CONST)
    for number, body in pairs:
        if number == 2 or not isinstance(body, bytes):
            continue
        node.kind = number
        inner = fields(body)
        if number == CONST:
            node.const = body
        elif number == IDENT:
            node.name = first(inner, 1).decode()
        elif number == SELECT:
            node.target = decode_expr(first(inner, 1))
            node.name = first(inner, 2).decode()
            node.test_only = bool(first(inner, 3, 0))
        elif number == CALL:
            target = first(inner, 1, None)
            node.target = decode_expr(target) if target is not None else None
            node.name = first(inner, 2).decode()
            node.args = [decode_expr(value) for num, value in inner if num == 3]
        elif number == LIST:
            node.args = [decode_expr(value) for num, value in inner if num == 1]
            for num, value in inner:
                if num == 2 and isinstance(value, int):
                    node.optional_indices.append(value)
                elif num == 2:  # packed
                    i = 0
                    while i < len(value):
                        index, i = _varint(value, i)
                        node.optional_indices.append(index)
        elif number == STRUCT:
            node.name = first(inner, 1).decode()
            node.entries = [_decode_entry(value) for num, value in inner if num == 2]
        elif number == COMPREHENSION:
            node.iter_var = first(inner, 1).decode()
            node.accu_var = first(inner, 3).decode()
            node.iter_var2 = first(inner, 8).decode()
            node.iter_range = decode_expr(first(inner, 2))
            node.accu_init = decode_expr(first(inner, 4))
            node.loop_condition = decode_expr(first(inner, 5))
            node.loop_step = decode_expr(first(inner, 6))
            node.result = decode_expr(first(inner, 7))
    return node


def _decode_entry(buf: bytes) -> Entry:
    pairs = fields(buf)
    key = first(pairs, 3, None)
    return Entry(id=first(pairs, 1, 0), value=decode_expr(first(pairs, 4)),
                 key=decode_expr(key) if key is not None else None,
                 field_key=first(pairs, 2).decode(), optional=bool(first(pairs, 5, 0)))


def encode_expr(node: Expr) -> bytes:
    inner = bytearray()
    if node.kind == CONST:
        inner += node.const
    elif node.kind == IDENT:
        _put(inner, 1, node.name)
    elif node.kind == SELECT:
        assert node.target is not None
        _put(inner, 1, encode_expr(node.target))
        _put(inner, 2, node.name)
        if node.test_only:
            _put(inner, 3, 1)
    elif node.kind == CALL:
        if node.target is not None:
            _put(inner, 1, encode_expr(node.target))
        _put(inner, 2, node.name)
        for arg in node.args:
            _put(inner, 3, encode_expr(arg))
    elif node.kind == LIST:
        for element in node.args:
            _put(inner, 1, encode_expr(element))
        if node.optional_indices:
            packed = bytearray()
            for index in node.optional_indices:
                _put_varint(packed, index)
            _put(inner, 2, bytes(packed))
    elif node.kind == STRUCT:
        if node.name:
            _put(inner, 1, node.name)
        for entry in node.entries:
            _put(inner, 2, _encode_entry(entry))
    else:
        parts = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step,
                 node.result)
        assert all(part is not None for part in parts)
        _put(inner, 1, node.iter_var)
        _put(inner, 3, node.accu_var)
        for number, part in zip((2, 4, 5, 6, 7), parts, strict=True):
            assert part is not None
            _put(inner, number, encode_expr(part))
        if node.iter_var2:
            _put(inner, 8, node.iter_var2)
    out = bytearray()
    _put(out, 2, node.id)
    _put(out, node.kind, bytes(inner))
    return bytes(out)


def _encode_entry(entry: Entry) -> bytes:
    out = bytearray()
    _put(out, 1, entry.id)
    if entry.key is not None:
        _put(out, 3, encode_expr(entry.key))
    else:
        _put(out, 2, entry.field_key)
    _put(out, 4, encode_expr(entry.value))
    if entry.optional:
        _put(out, 5, 1)
    return bytes(out)


# --- constants and types ------------------------------------------------------------------

def const_value(node: Expr) -> Any:
    """A constant's Python value (bytes stay bytes); None for null and the rest."""
    for number, value in fields(node.const):
        if number == 2:
            return bool(value)
        if number in (3, 4):
            return value - (1 << 64) if number == 3 and value >= 1 << 63 else value
        if number == 5:
            return struct.unpack("<d", value)[0]
        if number == 6:
            return value.decode()
        if number == 7:
            return bytes(value)
    return None


def int_const(node_id: int, value: int) -> Expr:
    out = bytearray()
    _put(out, 3, value)
    return Expr(id=node_id, kind=CONST, const=bytes(out))


def bool_const(node_id: int, value: bool) -> Expr:
    out = bytearray()
    _put(out, 2, int(value))
    return Expr(id=node_id, kind=CONST, const=bytes(out))


def null_const(node_id: int) -> Expr:
    out = bytearray()
    _put(out, 1, 0)
    return Expr(id=node_id, kind=CONST, const=bytes(out))


# Kinds of a checked type, as far as costs and conversions care.
STRING, BYTES, LIST_KIND, MAP_KIND, MESSAGE, SCALAR, UNKNOWN = 1, 2, 3, 4, 5, 6, 0
SIZED = (STRING, BYTES, LIST_KIND, MAP_KIND)


@dataclass(slots=True, frozen=True)
class TypeInfo:
    kind: int
    is_type_value: bool = False  # the type of a type name such as `int`
    # Survives a trip through Python unchanged: no dyn, optional, type parameter, uint,
    # timestamp or duration anywhere inside.
    plain: bool = False


def type_info(buf: bytes) -> TypeInfo:
    """Classify a cel.expr.Type (dyn 1, null 2, primitive 3, wrapper 4, well_known 5, list 6,
    map 7, message 9, type param 10, type 11, error 12, abstract 14)."""
    for number, value in fields(buf):
        if number == 3:
            # Not uint: a Python int comes back as a CEL int.
            kind = {5: STRING, 6: BYTES}.get(value, SCALAR)
            return TypeInfo(kind, plain=value in (1, 2, 4, 5, 6))
        if number == 2:
            return TypeInfo(SCALAR, plain=True)
        if number == 5:
            return TypeInfo(SCALAR)  # timestamps and durations: Python's lose nanoseconds
        if number == 9:
            return TypeInfo(MESSAGE, plain=True)
        if number == 11:
            return TypeInfo(SCALAR, is_type_value=True)
        if number in (6, 7):
            parts = [type_info(part) for num, part in fields(value) if num in (1, 2)]
            return TypeInfo(LIST_KIND if number == 6 else MAP_KIND,
                            plain=all(part.plain for part in parts))
        if number == 4:
            return TypeInfo(SCALAR)
    return TypeInfo(UNKNOWN)


# --- the checked expression ---------------------------------------------------------------

@dataclass(slots=True)
class Checked:
    root: Expr
    references: dict[int, bytes]  # id -> cel.expr.Reference
    types: dict[int, TypeInfo]
    raw_types: bytes  # the type_map entries, written back as read
    source_info: bytes
    # Kinds upstream's checker knows where this one sees dyn, by node id (cel_cost fills
    # it: keys of the device's maps).
    upstream_kinds: dict[int, int] | None = None
    # `==`/`!=` between messages, which cel_adapt runs as compareTo (cel.py fills it).
    equalities: frozenset[int] = frozenset()
    # Calls of the list and set libraries, by id: the `@kp.` function that runs each.
    library_calls: dict[int, str] = field(default_factory=dict)
    # Variables naming a `cel.bind` alias of device.attributes / device.capacity.
    device_aliases: frozenset[int] = frozenset()

    def reference_name(self, node_id: int) -> str:
        reference = self.references.get(node_id)
        return first(fields(reference), 1).decode() if reference is not None else ""

    def overloads(self, node_id: int) -> list[str]:
        reference = self.references.get(node_id)
        if reference is None:
            return []
        return [value.decode() for num, value in fields(reference) if num == 3]

    def max_id(self) -> int:
        highest, stack = 0, [self.root]
        while stack:
            node = stack.pop()
            highest = max(highest, node.id, *(entry.id for entry in node.entries))
            stack += node.children()
        return highest


def decode_checked(serialized: bytes) -> Checked:
    checked = fields(first(fields(serialized), 2))
    references: dict[int, bytes] = {}
    types: dict[int, TypeInfo] = {}
    raw_types = bytearray()
    for number, value in checked:
        if number == 2:
            entry = fields(value)
            references[first(entry, 1, 0)] = first(entry, 2)
        elif number == 3:
            entry = fields(value)
            types[first(entry, 1, 0)] = type_info(first(entry, 2))
            _put(raw_types, 3, value)
    return Checked(decode_expr(first(checked, 4)), references, types, bytes(raw_types),
                   first(checked, 5))


def encode_checked(checked: Checked, root: Expr, references: dict[int, bytes]) -> bytes:
    """`root` as a serialised CheckedExpr for Env.deserialize."""
    body = bytearray()
    for node_id, reference in references.items():
        entry = bytearray()
        _put(entry, 1, node_id)
        _put(entry, 2, reference)
        _put(body, 2, bytes(entry))
    body += checked.raw_types
    _put(body, 4, encode_expr(root))
    _put(body, 5, checked.source_info)
    out = bytearray()
    _put(out, 1, _CHECKED_EXPR_URL)
    _put(out, 2, bytes(body))
    return bytes(out)


def string_const(node_id: int, value: str) -> Expr:
    out = bytearray()
    _put(out, 6, value)
    return Expr(id=node_id, kind=CONST, const=bytes(out))
