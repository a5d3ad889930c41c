"""The Kubernetes CEL libraries DRA selectors use, for cel-expr-python: the quantity
library (`quantity("1Gi")`, `isGreaterThan`, `compareTo`, `asInteger`, `add`, ...) and
the semver library (`semver("1.2.3")`, `major`, `isLessThan`, ...), with the `device`
variable's environment (new_env).

cel-expr-python (the CEL project's C++ runtime) cannot hold Python objects as CEL
values, so Quantity and Semver travel as two tiny protobuf messages whose fields are
chosen so that protobuf equality is the library's `==`. Quantities are compared and
computed with kpysched.objects.quantity, apimachinery's arithmetic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kpysched.objects.quantity import Quantity, QuantityError, parse_quantity
from kpysched.plugins.dynamic_resources.cel_declarations import (
    TWO_VARIABLE_LOOPS,
    checker_config,
    checker_impls,
)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _message_classes() -> tuple[descriptor_pool.DescriptorPool, type[Any], type[Any]]:
    proto = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    packages = {
        "kubernetes": {"Quantity": [("key", proto.TYPE_STRING), ("held", proto.TYPE_STRING)],
                       "Semver": [("major", proto.TYPE_UINT64), ("minor", proto.TYPE_UINT64),
                                  ("patch", proto.TYPE_UINT64), ("pre", proto.TYPE_STRING)],
                       # Go's URL.String() of the URL (cel_urls.py).
                       "URL": [("text", proto.TYPE_STRING)],
                       # The name of one of the format library's formats
                       # (cel_named_formats.py), which Format.Equal compares.
                       "NamedFormat": [("name", proto.TYPE_STRING)]},
        # Go's canonical text of a netip.Addr / netip.Prefix (cel_network.py), under the
        # type names upstream's library gives them.
        "net": {"IP": [("addr", proto.TYPE_STRING)], "CIDR": [("prefix", proto.TYPE_STRING)]},
    }
    for package, messages in packages.items():
        file = descriptor_pb2.FileDescriptorProto(
            name=f"kpysched/dra_cel_{package}.proto", package=package, syntax="proto3")
        for name, declared in messages.items():
            message = file.message_type.add(name=name)
            for number, (field, kind) in enumerate(declared, 1):
                message.field.add(name=field, number=number, type=kind,
                                  label=proto.LABEL_OPTIONAL)
        pool.Add(file)
    find = pool.FindMessageTypeByName
    return (pool, message_factory.GetMessageClass(find("kubernetes.Quantity")),
            message_factory.GetMessageClass(find("kubernetes.Semver")))


_POOL, _QuantityMsg, _SemverMsg = _message_classes()
_QUANTITY = cel.Type("kubernetes.Quantity")
_SEMVER = cel.Type("kubernetes.Semver")
IP_TYPE = cel.Type("net.IP")
CIDR_TYPE = cel.Type("net.CIDR")
URL_TYPE = cel.Type("kubernetes.URL")
FORMAT_TYPE = cel.Type("kubernetes.NamedFormat")


def kp_function(name: str, result: cel.Type, params: list[cel.Type],
                impl: Callable[..., Any]) -> cel.FunctionDecl:
    """A `@kp.` function (what cel_adapt renames a library call to) with one global
    overload, whose id is the name with its dots as underscores."""
    return cel.FunctionDecl(name, [cel.Overload(name.replace(".", "_"), result, params,
                                                is_member=False, impl=impl)])


def kp_overloads(name: str, *signatures: tuple[cel.Type, list[cel.Type], Callable[..., Any]]
                 ) -> cel.FunctionDecl:
    """A `@kp.` function with several global overloads (result, params, impl), their ids
    the name with its dots as underscores and the overload's index."""
    return cel.FunctionDecl(name, [
        cel.Overload(f"{name}_{i}".replace(".", "_"), result, params, is_member=False,
                     impl=impl)
        for i, (result, params, impl) in enumerate(signatures)])


def parses(parse: Callable[[str], object], error: type[Exception] = ValueError
           ) -> Callable[[str], bool]:
    """The is<Kind>() form of a parser: whether it accepts the text."""
    def accepted(text: str) -> bool:
        try:
            parse(text)
        except error:
            return False
        return True
    return accepted


def message_class(name: str) -> type[Any]:
    """The class of one of this environment's messages (net.IP, ...)."""
    cls: type[Any] = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))
    return cls


def _as_int64(quantity: Quantity) -> int | None:
    """Quantity.AsInt64 as apimachinery answers it: from how the amount is held (an
    inf.Dec or a negative scale never is an integer, "1000m" included)."""
    if quantity.is_dec or quantity.scale < 0:
        return None
    if quantity.scale == 0:
        return quantity.value
    if quantity.value == 0:
        return 0
    whole = quantity.value * 10**quantity.scale if quantity.scale < 20 else _INT64_MAX + 1
    return whole if _INT64_MIN <= whole <= _INT64_MAX else None


def quantity_message(quantity: Quantity) -> Any:
    """The message for an amount: `key` is the exact amount, value * 10**scale with
    trailing zeros folded into the scale, so that equal amounts (1Ki and 1024) are equal
    messages, as Quantity.Equal. `held` keeps how apimachinery holds a whole amount that
    it does not call an integer ("1000m", "1.0"), which isInteger, asInteger and later
    arithmetic see; such a message differs from the plain amount's (cel_adapt.py makes
    `==` between quantities compare amounts)."""
    value, scale = quantity.value, quantity.scale
    if value == 0:
        scale = 0
    while value and value % 10 == 0:
        value //= 10
        scale += 1
    held = ""
    if scale >= 0 and _as_int64(quantity) is None and _as_int64(Quantity(value, scale)) is not None:
        held = f"{quantity.value}e{quantity.scale}{'d' if quantity.is_dec else ''}"
    return _QuantityMsg(key=f"{value}e{scale}", held=held)


@lru_cache(maxsize=4096)
def _amount(key: str) -> tuple[int, int]:
    value, scale = key.split("e")
    return int(value), int(scale)


def _quantity(msg: Any) -> Quantity:
    if msg.held:
        value, scale = _amount(msg.held.removesuffix("d"))
        return Quantity(value, scale, msg.held.endswith("d"))
    value, scale = _amount(msg.key)
    return Quantity(value, scale, not _INT64_MIN <= value <= _INT64_MAX)


def go_quantity_error(err: QuantityError) -> str:
    text = str(err)
    if "suffix" in text:
        return "unable to parse quantity's suffix"
    if "numeric" in text:
        return "unable to parse numeric part of quantity"
    return ("quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _string_to_quantity(text: str) -> Any:
    try:
        return quantity_message(parse_quantity(text))
    except QuantityError as err:
        raise ValueError(go_quantity_error(err)) from None


_is_quantity = parses(parse_quantity, QuantityError)


def _integer(msg: Any) -> int | None:
    """Quantity.AsInt64: None unless a whole number within int64, held as one."""
    if msg.held:
        return None
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
    return quantity_message(_quantity(first) + second)


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


def parse_semver(text: str) -> Any:
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
    return parse_semver(_normalize_semver(text) if normalize else text)


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


def new_checker_env() -> cel.Env:
    """The environment selectors are compiled in: new_env's, with the list and set
    libraries declared as cel-go does (cel_declarations.py). Its programs never run: cel.py
    deserializes them into new_env's environment."""
    return cel.NewEnv(
        _POOL,
        config=checker_config(),
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
        functions=_functions(),
        function_impls=checker_impls(),
    )


def new_env(functions: Sequence[cel.FunctionDecl] = (),
            variables: Mapping[str, cel.Type] | None = None) -> cel.Env:
    """The DRA selector environment (one per CelCache; building it takes a few ms), with
    `functions` (cel_meter's, which selectors cannot name) and `variables` besides
    `device`."""
    return cel.NewEnv(
        _POOL,
        config=cel.NewEnvConfigFromYaml(json.dumps({"name": "kpysched-dra",
                                                    "extensions": TWO_VARIABLE_LOOPS})),
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN), **(variables or {})},
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings(),
                    ext_optional.ExtOptional()],
        functions=[*_functions(), *functions],
    )
