"""The Kubernetes environment's homogeneous aggregate literals, which cel-cpp's checker
does not enforce: cel.HomogeneousAggregateLiterals and
cel.ValidateHomogeneousAggregateLiterals (apiserver/pkg/cel/environment/base.go) refuse
a list literal whose elements, or a map literal whose keys or values, differ in type
(`x in [7, "x"]`), except inside `format()`'s arguments. The message and its
`<input>:line:col` excerpt are cel-go's.
"""

from __future__ import annotations

from kpysched.plugins.dynamic_resources.cel_ast import (
    CALL,
    LIST,
    STRUCT,
    Checked,
    Expr,
    fields,
    first,
    varints,
)

_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "timestamp", 3: "duration"}
_MAX_SNIPPET = 16384


def type_name(buf: bytes) -> str:
    """cel-go's FormatCELType of a cel.expr.Type."""
    for number, value in fields(buf):
        if number == 1:
            return "dyn"
        if number == 2:
            return "null"
        if number == 3:
            return str(_PRIMITIVES.get(value, "dyn"))
        if number == 4:
            return f"wrapper({_PRIMITIVES.get(value, 'dyn')})"
        if number == 5:
            return _WELL_KNOWN.get(value, "dyn")
        if number == 6:
            return f"list({type_name(first(fields(value), 1))})"
        if number == 7:
            inner = fields(value)
            return f"map({type_name(first(inner, 1))}, {type_name(first(inner, 2))})"
        if number in (9, 10):
            return str(value.decode())
        if number == 11:
            return f"type({type_name(value)})" if value else "type"
        if number == 12:
            return "!error!"
        if number == 14:
            inner = fields(value)
            params = [type_name(p) for num, p in inner if num == 2]
            name = first(inner, 1).decode()
            return f"{name}({', '.join(params)})" if params else name
    return "dyn"


def type_names(checked: Checked) -> dict[int, str]:
    """cel-go's name of each checked node's type, by id."""
    out: dict[int, str] = {}
    for number, value in fields(checked.raw_types):
        if number == 3:
            entry = fields(value)
            out[first(entry, 1, 0)] = type_name(first(entry, 2))
    return out


def _unwrap_optional(name: str) -> str:
    return name[len("optional_type("):-1] if name.startswith("optional_type(") else name


def _mismatches(node: Expr, types: dict[int, str], exempt: bool,
                out: list[tuple[int, str]]) -> None:
    if node.kind == CALL and node.name == "format":
        exempt = True
    if not exempt and node.kind == LIST:
        expected: str | None = None
        for index, element in enumerate(node.args):
            name = types.get(element.id, "dyn")
            if index in node.optional_indices:
                name = _unwrap_optional(name)
            if expected is None:
                expected = name
            elif name != expected:
                out.append((element.id, f"expected type '{expected}' but found '{name}'"))
                break
    if not exempt and node.kind == STRUCT and not node.name:
        key_type = value_type = None
        for entry in node.entries:
            assert entry.key is not None
            key, value = types.get(entry.key.id, "dyn"), types.get(entry.value.id, "dyn")
            if entry.optional:
                value = _unwrap_optional(value)
            if key_type is None:
                key_type, value_type = key, value
                continue
            if key != key_type:
                out.append((entry.key.id, f"expected type '{key_type}' but found '{key}'"))
            if value != value_type:
                out.append((entry.value.id,
                            f"expected type '{value_type}' but found '{value}'"))
    for child in node.children():
        _mismatches(child, types, exempt, out)


def _positions(source_info: bytes) -> tuple[list[int], dict[int, int]]:
    line_offsets: list[int] = []
    positions: dict[int, int] = {}
    for number, value in fields(source_info):
        if number == 3:
            line_offsets += [value] if isinstance(value, int) else varints(value)
        elif number == 4:
            entry = fields(value)
            positions[first(entry, 1, 0)] = first(entry, 2, 0)
    return line_offsets, positions


def _display(expression: str, line_offsets: list[int], offset: int, message: str) -> str:
    line, start = 1, 0
    for line_end in line_offsets:
        if offset < line_end:
            break
        line, start = line + 1, line_end
    column = offset - start
    text = f"ERROR: <input>:{line}:{column + 1}: {message}"
    lines = expression.split("\n")
    snippet = lines[line - 1] if line - 1 < len(lines) else ""
    if len(snippet.encode()) > _MAX_SNIPPET:
        return text
    snippet = snippet.replace("\t", " ")
    marks = "".join("\uff0e" if len(ch.encode()) > 1 else "." for ch in snippet[:column])
    caret = "\uff3e" if column < len(snippet) and len(snippet[column].encode()) > 1 else "^"
    return f"{text}\n | {snippet}\n | {marks}{caret}"


def literal_errors(expression: str, checked: Checked) -> str | None:
    """cel-go's issues for mixed-type literals, or None when every literal is
    homogeneous."""
    found: list[tuple[int, str]] = []
    _mismatches(checked.root, type_names(checked), False, found)
    if not found:
        return None
    line_offsets, positions = _positions(checked.source_info)
    located = sorted(((positions.get(node_id, 0), message) for node_id, message in found),
                     key=lambda item: item[0])
    return "\n".join(_display(expression, line_offsets, offset, message)
                     for offset, message in located)
