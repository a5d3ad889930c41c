"""CEL for DRA device selectors: k8s.io/dynamic-resource-allocation/cel, on cel-expr-python.

The `device` variable holds `driver`, `allowMultipleAllocations`, `attributes` and
`capacity` (domain -> id -> value; a bare name belongs to the driver's domain). Attribute
values are int, bool, string or `kubernetes.Semver`; capacities are `kubernetes.Quantity`.
The Kubernetes quantity and semver libraries, `cel.bind`, the strings extension and
optional types are declared; what upstream's environment has beyond that is listed in
docs/dra-cel.md. cel-expr-python (the CEL project's C++ runtime) cannot hold Python
objects as CEL values, so Quantity and Semver travel as two tiny protobuf messages whose
fields are chosen so that protobuf equality is the library's `==`.

The runtime cost limit: cel-expr-python tracks no cost, so each program's cost is bounded
when it is compiled, from its checked AST, counting what cel-go's tracker counts for calls,
selections and comprehension iterations (an under-estimate: string sizes are not counted).
A program over resourceapi.CELSelectorExpressionMaxCost fails every match with cel-go's
"operation cancelled: actual cost limit exceeded". User CEL never reaches Python's eval.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kpysched.objects.quantity import Quantity, QuantityError, parse_quantity
from kpysched.objects.resource import Device

MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength (apiserver)
_MAX_MAP_SIZE = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class SelectorError(Exception):
    """A selector that does not compile or fails at runtime; str() is upstream's text."""


# --- Quantity and Semver as protobuf messages ----------------------------------------

def _message_classes() -> tuple[descriptor_pool.DescriptorPool, type[Any], type[Any]]:
    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="kpysched/dra_cel.proto", package="kubernetes", syntax="proto3")
    fields = {"Quantity": [("key", proto.TYPE_STRING)],
              "Semver": [("major", proto.TYPE_UINT64), ("minor", proto.TYPE_UINT64),
                         ("patch", proto.TYPE_UINT64), ("pre", proto.TYPE_STRING)]}
    for name, declared in fields.items():
        message = file.message_type.add(name=name)
        for number, (field, kind) in enumerate(declared, 1):
            message.field.add(name=field, number=number, type=kind, label=proto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    find = pool.FindMessageTypeByName
    return (pool, message_factory.GetMessageClass(find("kubernetes.Quantity")),
            message_factory.GetMessageClass(find("kubernetes.Semver")))


_POOL, _QuantityMsg, _SemverMsg = _message_classes()
_QUANTITY = cel.Type("kubernetes.Quantity")
_SEMVER = cel.Type("kubernetes.Semver")


def _quantity_msg(quantity: Quantity) -> Any:
    """The message for an exact amount: value * 10**scale with trailing zeros folded into
    the scale, so that equal amounts (1Ki and 1024) are equal messages, as Quantity.Equal."""
    value, scale = quantity.value, quantity.scale
    if value == 0:
        scale = 0
    while value and value % 10 == 0:
        value //= 10
        scale += 1
    return _QuantityMsg(key=f"{value}e{scale}")


@lru_cache(maxsize=4096)
def _amount(key: str) -> tuple[int, int]:
    value, scale = key.split("e")
    return int(value), int(scale)


def _quantity(msg: Any) -> Quantity:
    value, scale = _amount(msg.key)
    return Quantity(value, scale, not _INT64_MIN <= value <= _INT64_MAX)


def _go_quantity_error(err: QuantityError) -> str:
    text = str(err)
    if "suffix" in text:
        return "unable to parse quantity's suffix"
    if "numeric" in text:
        return "unable to parse numeric part of quantity"
    return ("quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _string_to_quantity(text: str) -> Any:
    try:
        return _quantity_msg(parse_quantity(text))
    except QuantityError as err:
        raise ValueError(_go_quantity_error(err)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _integer(msg: Any) -> int | None:
    """Quantity.AsInt64 of the amount: None unless it is a whole number within int64."""
    value, scale = _amount(msg.key)
    if scale < 0:
        return None
    whole = value * 10**scale if scale < 20 or value == 0 else _INT64_MAX + 1
    return whole if _INT64_MIN <= whole <= _INT64_MAX else None


def _as_integer(msg: Any) -> int:
    whole = _integer(msg)
    if whole is None:
        raise ValueError("cannot convert value to integer")
    return whole


def _approximate_float(msg: Any) -> float:
    value, scale = _amount(msg.key)
    return float(Decimal(value).scaleb(scale))


def _sign(msg: Any) -> int:
    value = _amount(msg.key)[0]
    return (value > 0) - (value < 0)


def _add(first: Any, second: Quantity) -> Any:
    return _quantity_msg(_quantity(first) + second)


def _negate(quantity: Quantity) -> Quantity:
    return Quantity(-quantity.value, quantity.scale, quantity.is_dec)


_NUMERIC = re.compile(r"[0-9]*")
_ALPHANUM = re.compile(r"[0-9A-Za-z-]*")


def _q(text: str) -> str:
    """Go's %q, for the printable text a version holds."""
    return json.dumps(text, ensure_ascii=False)


def _number(text: str, what: str) -> int:
    """blang/semver's checks of one of MAJOR.MINOR.PATCH, with its messages."""
    if not _NUMERIC.fullmatch(text):
        raise ValueError(f"Invalid character(s) found in {what.lower()} number {_q(text)}")
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{what} number must not contain leading zeroes {_q(text)}")
    if not text:
        raise ValueError('strconv.ParseUint: parsing "": invalid syntax')
    number = int(text)
    if number >= 1 << 64:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return number


def _parse_semver(text: str) -> Any:
    """semver.Parse (blang/semver/v4); build metadata is checked, then dropped as EQ does."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "Major"), _number(parts[1], "Minor")
    patch, _, build = parts[2].partition("+")
    patch, dash, pre = patch.partition("-")
    for identifier in pre.split(".") if dash else ():
        if not identifier:
            raise ValueError("Prerelease is empty")
        if not _ALPHANUM.fullmatch(identifier):
            raise ValueError(f"Invalid character(s) found in prerelease {_q(identifier)}")
        if identifier.isdigit() and len(identifier) > 1 and identifier[0] == "0":
            raise ValueError(
                f"Numeric PreRelease version must not contain leading zeroes {_q(identifier)}")
    for identifier in build.split(".") if "+" in parts[2] else ():
        if not identifier:
            raise ValueError("Build meta data is empty")
        if not _ALPHANUM.fullmatch(identifier):
            raise ValueError(f"Invalid character(s) found in build meta data {_q(identifier)}")
    return _SemverMsg(major=major, minor=minor, patch=_number(patch, "Patch"), pre=pre)


def _normalize_semver(text: str) -> str:
    """library.normalizeAndParse's relaxed form: a v prefix, leading zeros, short versions."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            parts[i] = trimmed if trimmed[:1].isdigit() else "0" + trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _semver(text: str, normalize: bool = False) -> Any:
    return _parse_semver(_normalize_semver(text) if normalize else text)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _semver(text, normalize)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=1024)
def _pre_key(pre: str) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in pre.split("."))


def _semver_compare(first: Any, second: Any) -> int:
    mine, theirs = (first.major, first.minor, first.patch), (second.major, second.minor,
                                                             second.patch)
    if mine != theirs:
        return 1 if mine > theirs else -1
    if first.pre == second.pre:
        return 0
    if not first.pre or not second.pre:  # a release outranks its pre-releases
        return 1 if not first.pre else -1
    a, b = _pre_key(first.pre), _pre_key(second.pre)
    return (a > b) - (a < b)


def _overload(name: str, ret: cel.Type, params: list[cel.Type], impl: Callable[..., Any],
              member: bool = True) -> cel.Overload:
    return cel.Overload(name, ret, params, is_member=member, impl=impl)


def _compare(first: Any, second: Any) -> int:
    if isinstance(first, _QuantityMsg) and isinstance(second, _QuantityMsg):
        return _quantity(first).compare(_quantity(second))
    if isinstance(first, _SemverMsg) and isinstance(second, _SemverMsg):
        return _semver_compare(first, second)
    raise ValueError("no such overload")


def _both(suffix: str, ret: cel.Type, impl: Callable[..., Any]) -> list[cel.Overload]:
    return [cel.Overload(f"quantity_{suffix}", ret, [_QUANTITY, _QUANTITY], is_member=True,
                         impl=impl),
            cel.Overload(f"semver_{suffix}", ret, [_SEMVER, _SEMVER], is_member=True)]


def _functions() -> list[cel.FunctionDecl]:
    q, s, t = _QUANTITY, _SEMVER, cel.Type
    decls: dict[str, list[cel.Overload]] = {
        "quantity": [_overload("string_to_quantity", q, [t.STRING], _string_to_quantity,
                               False)],
        "isQuantity": [_overload("is_quantity_string", t.BOOL, [t.STRING], _is_quantity,
                                 False)],
        "sign": [_overload("quantity_sign", t.INT, [q], _sign, False)],
        # The runtime picks an implementation by argument kind, and both types are
        # messages: one implementation serves the Quantity and the Semver overload.
        "isGreaterThan": _both("is_greater_than", t.BOOL, lambda a, b: _compare(a, b) == 1),
        "isLessThan": _both("is_less_than", t.BOOL, lambda a, b: _compare(a, b) == -1),
        "compareTo": _both("compare_to", t.INT, _compare),
        "asApproximateFloat": [_overload("quantity_get_float", t.DOUBLE, [q],
                                         _approximate_float)],
        "asInteger": [_overload("quantity_get_int", t.INT, [q], _as_integer)],
        "isInteger": [_overload("quantity_is_integer", t.BOOL, [q],
                                lambda a: _integer(a) is not None)],
        "add": [_overload("quantity_add", q, [q, q], lambda a, b: _add(a, _quantity(b))),
                _overload("quantity_add_int", q, [q, t.INT],
                          lambda a, n: _add(a, Quantity(n, 0)))],
        "sub": [_overload("quantity_sub", q, [q, q],
                          lambda a, b: _add(a, _negate(_quantity(b)))),
                _overload("quantity_sub_int", q, [q, t.INT],
                          lambda a, n: _add(a, Quantity(-n, 0)))],
        "semver": [_overload("string_to_semver", s, [t.STRING], _semver, False),
                   _overload("string_bool_to_semver", s, [t.STRING, t.BOOL], _semver, False)],
        "isSemver": [_overload("is_semver_string", t.BOOL, [t.STRING], _is_semver, False),
                     _overload("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL],
                               _is_semver, False)],
        "major": [_overload("semver_major", t.INT, [s], lambda v: v.major)],
        "minor": [_overload("semver_minor", t.INT, [s], lambda v: v.minor)],
        "patch": [_overload("semver_patch", t.INT, [s], lambda v: v.patch)],
    }
    return [cel.FunctionDecl(name, overloads) for name, overloads in decls.items()]


def new_env() -> cel.Env:
    """The DRA selector environment (one per CelCache; building it takes a few ms)."""
    return cel.NewEnv(
        _POOL,
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings(),
                    ext_optional.ExtOptional()],
        functions=_functions(),
    )


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
                value = _parse_semver(attribute.version)
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
            capacity.setdefault(domain, {})[ident] = _quantity_msg(parse_quantity(entry.value))
        except QuantityError as err:  # decoding validated it; kept for a hand-made Device
            raise SelectorError(f"capacity {name}: {_go_quantity_error(err)}") from None
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
