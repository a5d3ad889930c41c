"""CEL for DRA device selectors: k8s.io/dynamic-resource-allocation/cel, on cel-expr-python.

The `device` variable holds `driver`, `allowMultipleAllocations`, `attributes` and
`capacity` (domain -> id -> value; a bare name belongs to the driver's domain). Attribute
values are int, bool, string or `kubernetes.Semver`; capacities are `kubernetes.Quantity`.
The Kubernetes quantity and semver libraries (cel_library.py), `cel.bind`, the strings
extension and optional types are declared; what upstream's environment has beyond that
is listed in docs/dra-cel.md. This module turns devices into the `device` variable,
compiles and caches selectors, bounds their cost and words errors as cel-go does.

The runtime cost limit: cel-expr-python tracks no cost, so each program's cost is bounded
when it is compiled, from its checked AST, counting what cel-go's tracker counts for calls,
selections and comprehension iterations (an under-estimate: string sizes are not counted).
A program over resourceapi.CELSelectorExpressionMaxCost fails every match with cel-go's
"operation cancelled: actual cost limit exceeded". User CEL never reaches Python's eval.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from cel_expr_python import cel

from kpysched.objects.quantity import QuantityError, parse_quantity
from kpysched.objects.resource import Device
from kpysched.plugins.dynamic_resources.cel_library import (
    go_quantity_error,
    new_env,
    parse_semver,
    quantity_message,
)

MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength (apiserver)
_MAX_MAP_SIZE = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class SelectorError(Exception):
    """A selector that does not compile or fails at runtime; str() is upstream's text."""


# --- messages in cel-go's words --------------------------------------------------------

_STATUS = re.compile(r"^[A-Z_]+: ")
_RUNTIME_TEXTS = (
    (re.compile(r'^Key not found in map : "(.*)"$', re.S), r"no such key: \1"),
    (re.compile(r"^Key not found in map : (.*)$", re.S), r"no such key: \1"),
    (re.compile(r"^No matching overloads found : .*$", re.S), "no such overload"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^modulus by zero$"), "modulus by zero"),
)
_TYPE_WORDS = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double",
               "STRING": "string", "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn",
               "LIST": "list", "MAP": "map", "TYPE": "type", "ERROR": "*error*",
               "DURATION": "google.protobuf.Duration",
               "TIMESTAMP": "google.protobuf.Timestamp"}


def _runtime_text(message: str) -> str:
    message = _STATUS.sub("", message, count=1)
    for pattern, replacement in _RUNTIME_TEXTS:
        if pattern.match(message):
            return pattern.sub(replacement, message)
    return message


def _type_text(cel_type: cel.Type) -> str:
    """cel-go's spelling of a type: list(int), map(string, dyn), google.protobuf.Duration."""
    name = re.sub(r"\b[A-Z_]+\b", lambda m: _TYPE_WORDS.get(m[0], m[0]), cel_type.name())
    return name.replace("<", "(").replace(">", ")")


# --- cost bound from the checked AST ----------------------------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, Any]]:
    """A protobuf message's (field number, value) pairs: ints, or bytes for length-delimited."""
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


def _one(fields: list[tuple[int, Any]], number: int) -> Any:
    return next((value for num, value in fields if num == number), b"")


def _cost(expr: bytes) -> tuple[int, int]:
    """(cost, size) of a cel.expr.Expr: cel-go's tracker charges 1 per identifier,
    selection and call; a comprehension its range, its init, its result and, per element
    of the range, its condition and step. Maps reachable from `device` hold at most 32
    entries; a literal's size is its element count."""
    for number, body in _fields(expr):
        if number == 4:  # ident
            return 1, 1
        if number == 5:  # select
            return 1 + _cost(_one(_fields(body), 1))[0], _MAX_MAP_SIZE
        if number == 6:  # call
            call = _fields(body)
            parts = [_cost(value) for num, value in call if num in (1, 3)]
            size = _MAX_MAP_SIZE if _one(call, 2) == b"_[_]" else 1
            if _one(call, 2) == b"_+_":
                size = sum(part[1] for part in parts)
            return 1 + sum(part[0] for part in parts), size
        if number in (7, 8):  # list, map or message literal
            items = [value for num, value in _fields(body) if num in (1, 2)]
            costs = 0
            for item in items:
                if number == 7:
                    costs += _cost(item)[0]
                else:
                    costs += sum(_cost(v)[0] for n, v in _fields(item) if n in (3, 4))
            return 1 + costs, len(items)
        if number == 9:  # comprehension
            loop = dict(_fields(body))
            range_cost, range_size = _cost(loop.get(2, b""))
            per_item = _cost(loop.get(5, b""))[0] + _cost(loop.get(6, b""))[0]
            total = (range_cost + _cost(loop.get(4, b""))[0] + range_size * per_item
                     + _cost(loop.get(7, b""))[0])
            return total, range_size
    return 0, 1  # a constant


def estimate_cost(serialized: bytes) -> int:
    """The cost bound of a compiled expression (Expression.serialize(): an Any holding a
    cel.expr.CheckedExpr); 0 when the bytes cannot be read."""
    try:
        checked = _one(_fields(serialized), 2)
        return _cost(_one(_fields(checked), 4))[0]
    except (ValueError, IndexError, RecursionError):
        return 0


# --- the device as CEL sees it ------------------------------------------------------------

def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_variable(driver: str, device: Device) -> dict[str, Any]:
    """CompilationResult.DeviceMatches' input maps; raises SelectorError as it errs."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        value: Any
        if attribute.int_value is not None:
            value = attribute.int_value
        elif attribute.bool_value is not None:
            value = attribute.bool_value
        elif attribute.string is not None:
            value = attribute.string
        elif attribute.version is not None:
            try:
                value = parse_semver(attribute.version)
            except ValueError as err:
                raise SelectorError(f"attribute {name}: parse semantic version: {err}") from None
        else:
            raise SelectorError(f"attribute {name}: unsupported attribute value")
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, entry in device.capacity.items():
        domain, ident = _split(name, driver)
        try:
            capacity.setdefault(domain, {})[ident] = quantity_message(parse_quantity(entry.value))
        except QuantityError as err:  # decoding validated it; kept for a hand-made Device
            raise SelectorError(f"capacity {name}: {go_quantity_error(err)}") from None
    return {"driver": driver, "allowMultipleAllocations": bool(device.allow_multiple_allocations),
            "attributes": attributes, "capacity": capacity}


_DEVICE_USE = re.compile(r"\bdevice\b(?!\s*\.\s*(?:driver\b|allowMultipleAllocations\b|"
                         r"(?:attributes|capacity)\s*\[))")
_LITERAL = re.compile(r"\"([^\"\\\n]*)\"|'([^'\\\n]*)'")


def _default_domains(expression: str) -> tuple[str, ...]:
    """Upstream's attribute and capacity maps answer an unknown domain with an empty map.
    A CEL map cannot, so the domains an expression names as plain literals get one, but
    only when `device.attributes` / `device.capacity` are never used whole (where `in`,
    size() or a macro would see the padding)."""
    if _DEVICE_USE.search(expression):
        return ()
    return tuple(dict.fromkeys(a or b for a, b in _LITERAL.findall(expression) if a or b))


class _Devices:
    """Devices as CEL activations, by (driver, id(device)) and then by the padding a
    selector wants. The cache holds each device, so an id is not reused while its entry
    lives; devices are replaced, never edited, by the informers, which is what makes the
    identity key sound."""

    def __init__(self, env: cel.Env, max_size: int) -> None:
        self._env = env
        self._max_size = max_size
        self._entries: dict[tuple[str, int], _DeviceEntry] = {}

    def get(self, driver: str, device: Device, domains: tuple[str, ...]) -> cel.Activation:
        key = (driver, id(device))
        entry = self._entries.get(key)
        if entry is None or entry.device is not device:
            if len(self._entries) >= self._max_size:
                del self._entries[next(iter(self._entries))]
            entry = self._entries[key] = _DeviceEntry(device, driver)
        if entry.error is not None:
            raise SelectorError(entry.error)
        activation = entry.activations.get(domains)
        if activation is None:
            variable = _pad(entry.variable, domains) if domains else entry.variable
            activation = entry.activations[domains] = self._env.Activation({"device": variable})
        return activation


class _DeviceEntry:
    __slots__ = ("activations", "device", "error", "variable")

    def __init__(self, device: Device, driver: str) -> None:
        self.device = device
        self.activations: dict[tuple[str, ...], cel.Activation] = {}
        self.error: str | None = None
        self.variable: dict[str, Any] = {}
        try:
            self.variable = device_variable(driver, device)
        except SelectorError as err:
            self.error = str(err)


# --- compiled selectors and their cache --------------------------------------------------

class CompiledSelector:
    """One compiled selector; matches() evaluates it for a device of a driver."""

    __slots__ = ("_cost_exceeded", "_devices", "_domains", "_program", "expression")

    def __init__(self, expression: str, program: cel.Expression, devices: _Devices,
                 cost_limit: int) -> None:
        self.expression = expression
        self._program = program
        self._devices = devices
        self._domains = _default_domains(expression)
        self._cost_exceeded = estimate_cost(program.serialize()) > cost_limit

    def matches(self, driver: str, device: Device) -> bool:
        activation = self._devices.get(driver, device, self._domains)
        if self._cost_exceeded:
            raise SelectorError(COST_LIMIT_EXCEEDED)
        try:
            result = self._program.eval(activation)
        except RuntimeError as err:  # cel-cpp's own iteration budget (docs/dra-cel.md)
            text = _runtime_text(str(err)).removesuffix(" [INTERNAL]")
            raise SelectorError(COST_LIMIT_EXCEEDED if "budget" in text else text) from None
        value = result.value()
        if value is True or value is False:
            return value
        if result.type() == cel.Type.ERROR:
            raise SelectorError(_runtime_text(str(value)))
        kind = _type_text(result.type())
        raise SelectorError(f"CEL result of type {kind} could not be converted to bool: "
                            f"type conversion error from {kind.capitalize()} to 'bool'")


def _pad(variable: dict[str, Any], domains: tuple[str, ...]) -> dict[str, Any]:
    padded = variable
    for field in ("attributes", "capacity"):
        maps = variable[field]
        missing = [domain for domain in domains if domain not in maps]
        if missing:
            if padded is variable:
                padded = dict(variable)
            padded[field] = {**maps, **{domain: {} for domain in missing}}
    return padded


_ACCEPTED_RESULTS = ("BOOL", "DYN", "google.protobuf.Any")


class CelCache:
    """Compiled selectors by expression, least recently used dropped first (cel.Cache)."""

    def __init__(self, max_size: int = 64, cost_limit: int = MAX_COST,
                 max_devices: int = 65536) -> None:
        self._max_size = max_size
        self._cost_limit = cost_limit
        self._env = new_env()
        self._devices = _Devices(self._env, max_devices)
        self._entries: OrderedDict[str, CompiledSelector | SelectorError] = OrderedDict()

    def compile(self, expression: str) -> CompiledSelector:
        entry = self._entries.get(expression)
        if entry is None:
            entry = self._compile(expression)
            self._entries[expression] = entry
            if len(self._entries) > self._max_size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(expression)
        if isinstance(entry, SelectorError):
            raise SelectorError(str(entry))
        return entry

    def _compile(self, expression: str) -> CompiledSelector | SelectorError:
        try:
            program = self._env.compile(expression)
        except RuntimeError as err:
            text = _STATUS.sub("", str(err), count=1).removesuffix(" [INVALID_ARGUMENT]")
            return SelectorError(f"compilation failed: {text}")
        result = program.return_type()
        if result.name() not in _ACCEPTED_RESULTS:
            return SelectorError(
                f"must evaluate to bool or the unknown type, not {_type_text(result)}")
        return CompiledSelector(expression, program, self._devices, self._cost_limit)
