"""CEL for DRA device selectors: k8s.io/dynamic-resource-allocation/cel, on cel-expr-python.

The `device` variable holds `driver`, `allowMultipleAllocations`, `attributes` and
`capacity` (domain -> id -> value; a bare name belongs to the driver's domain). Attribute
values are int, bool, string or `kubernetes.Semver`; capacities are `kubernetes.Quantity`.
The Kubernetes quantity and semver libraries (cel_library.py), `cel.bind`, the strings
extension and optional types are declared; what upstream's environment has beyond that
is listed in docs/dra-cel.md. This module turns devices into the `device` variable,
compiles and caches selectors, bounds their cost and words errors as cel-go does.

The runtime cost limit (cel_cost.py, cel_bound.py, cel_rewrite.py, cel_meter.py):
cel-expr-python tracks no cost, so a selector whose worst case (cel_bound.Bound) fits well
within the limit and cel-cpp's iteration budget runs as compiled;
any other runs as a metered copy that charges cel-go's actual cost while it evaluates and
stops at resourceapi.CELSelectorExpressionMaxCost with cel-go's "operation cancelled:
actual cost limit exceeded", or at the Filter deadline with "operation interrupted:
context deadline exceeded". User CEL never reaches Python's eval.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kpysched.objects.dra import Device
from kpysched.objects.quantity import QuantityError, parse_quantity
from kpysched.plugins.dynamic_resources.cel_adapt import (
    adapted,
    device_aliases,
    library_calls,
    message_equalities,
)
from kpysched.plugins.dynamic_resources.cel_ast import Checked, decode_checked, encode_checked
from kpysched.plugins.dynamic_resources.cel_bound import Bound
from kpysched.plugins.dynamic_resources.cel_cost import COST_LIMIT, COST_LIMIT_EXCEEDED
from kpysched.plugins.dynamic_resources.cel_errors import SelectorError, SelectorTimeoutError
from kpysched.plugins.dynamic_resources.cel_library import (
    go_quantity_error,
    new_checker_env,
    new_env,
    parse_semver,
    quantity_message,
)
from kpysched.plugins.dynamic_resources.cel_literals import literal_errors
from kpysched.plugins.dynamic_resources.cel_meter import (
    INTERRUPTED,
    ITERATION_BUDGET,
    RETRY,
    Meter,
    Runtime,
)
from kpysched.plugins.dynamic_resources.cel_regex import constant_pattern_error
from kpysched.plugins.dynamic_resources.cel_rewrite import Plan, frame_root, outermost_loops

__all__ = [
    "COST_LIMIT_EXCEEDED",
    "DEADLINE_EXCEEDED",
    "ITERATION_BUDGET_EXCEEDED",
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "UNMETERED_MAX_COST",
    "CelCache",
    "CompiledSelector",
    "Evaluation",
    "SelectorError",
    "SelectorTimeoutError",
    "device_variable",
    "estimate_cost",
]

MAX_COST = COST_LIMIT  # resourceapi.CELSelectorExpressionMaxCost
MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength (apiserver)
# Worst cases up to this run unmetered: still well within the limit, and short enough
# (cel-cpp plus at most this many Python callbacks) to need no deadline checks.
UNMETERED_MAX_COST = 20_000
_MAX_ITERATIONS = 9_999  # cel-cpp stops an evaluation at its 10,000th iteration
# The deadline's cause as DeviceMatches wraps it (context.DeadlineExceeded's text).
DEADLINE_EXCEEDED = f"{INTERRUPTED}: context deadline exceeded"
# cel-cpp's budget, when no loop of the frame that ran out can be driven from Python
# (cel_rewrite.py); upstream has no such limit.
ITERATION_BUDGET_EXCEEDED = "comprehension iteration budget (10000) of the CEL runtime exceeded"


# --- messages in cel-go's words --------------------------------------------------------

_STATUS = re.compile(r"^[A-Z_]+: ")
_RUNTIME_TEXTS = (
    (re.compile(r'^Key not found in map : "(.*)"$', re.S), r"no such key: \1"),
    (re.compile(r"^Key not found in map : (.*)$", re.S), r"no such key: \1"),
    (re.compile(r"^No matching overloads found : .*$", re.S), "no such overload"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^modulus by zero$"), "modulus by zero"),
    (re.compile(r"^cannot convert string to (int|uint|double)$"),
     r"type conversion error from 'string' to '\1'"),
    (re.compile(r"^Type conversion error from '(\w+)' to '(\w+)'$"),
     r"type conversion error from '\1' to '\2'"),
    (re.compile(r"^(?:double|uint64) out of int64 range$"), "integer overflow"),
    (re.compile(r"^(?:double|int64) out of uint64 range$"), "unsigned integer overflow"),
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


# --- cost ---------------------------------------------------------------------------------

def estimate_cost(serialized: bytes) -> int:
    """Worst-case cel-go cost of a compiled expression (Expression.serialize()) on any
    device the API server admits; sys.maxsize when a size cannot be bounded."""
    cost = Bound(decode_checked(serialized)).cost
    return sys.maxsize if cost > sys.maxsize else int(cost)


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


class _Devices:
    """Devices as CEL activations, by (driver, id(device)) and then by the padding a
    selector wants. The cache holds each device, so an id is not reused while its entry
    lives; devices are replaced, never edited, by the informers, which is what makes the
    identity key sound."""

    def __init__(self, env: cel.Env, max_size: int) -> None:
        self.env = env
        self._max_size = max_size
        self._entries: dict[tuple[str, int], _DeviceEntry] = {}

    def get(self, driver: str, device: Device) -> cel.Activation:
        key = (driver, id(device))
        entry = self._entries.get(key)
        if entry is None or entry.device is not device:
            if len(self._entries) >= self._max_size:
                del self._entries[next(iter(self._entries))]
            entry = self._entries[key] = _DeviceEntry(device, driver)
        if entry.error is not None:
            raise SelectorError(entry.error)
        if entry.activation is None:
            entry.activation = self.env.Activation({"device": entry.variable})
        return entry.activation


class _DeviceEntry:
    __slots__ = ("activation", "device", "error", "variable")

    def __init__(self, device: Device, driver: str) -> None:
        self.device = device
        self.activation: cel.Activation | None = None
        self.error: str | None = None
        self.variable: dict[str, Any] = {}
        try:
            self.variable = device_variable(driver, device)
        except SelectorError as err:
            self.error = str(err)


# --- compiled selectors and their cache --------------------------------------------------

@dataclass(slots=True)
class _Shared:
    """What the selectors of one cache share: devices, the metering runtime, limits."""

    devices: _Devices
    runtime: Runtime
    cost_limit: int
    unmetered_max_cost: int


@dataclass(slots=True, frozen=True)
class Evaluation:
    """A selector's verdict on a device, with cel-go's actual cost when it was metered
    (upstream's EvalDetails.ActualCost, which the allocator logs)."""

    matches: bool
    cost: int | None


class CompiledSelector:
    """One compiled selector; matches() evaluates it for a device of a driver."""

    __slots__ = ("_checked", "_driven", "_metered", "_plan", "_program", "_runs",
                 "_shared", "expression")

    def __init__(self, expression: str, program: cel.Expression, shared: _Shared) -> None:
        self.expression = expression
        self._program = program
        self._shared = shared
        self._checked: Checked = decode_checked(program.serialize())
        # The program cel-cpp runs unmetered, adapted (cel_adapt.py); costs and bounds
        # read the tree as written.
        ids = itertools.count(self._checked.max_id() + 1)
        self._checked.equalities = message_equalities(self._checked)
        self._checked.library_calls = library_calls(self._checked)
        self._checked.device_aliases = device_aliases(self._checked)
        runs = adapted(self._checked.root, lambda: next(ids), self._checked)
        self._runs = program if runs is None else shared.devices.env.deserialize(
            encode_checked(self._checked, runs, self._checked.references))
        bound = Bound(self._checked)
        self._metered = (bound.cost > min(shared.unmetered_max_cost, shared.cost_limit)
                         or bound.iterations > _MAX_ITERATIONS)
        self._driven: frozenset[int] = frozenset()  # loops run from Python (cel_rewrite)
        self._plan: Plan | None = None

    def matches(self, driver: str, device: Device, deadline: float | None = None) -> bool:
        """`deadline` (time.monotonic()) interrupts a metered evaluation with
        SelectorTimeoutError; an unmetered one is short by construction."""
        activation = self._shared.devices.get(driver, device)
        verdict = self._unmetered(activation)
        if verdict is not None:
            return verdict
        return self._metered_evaluation(activation, deadline).matches

    def evaluate(self, driver: str, device: Device, deadline: float | None = None
                 ) -> Evaluation:
        """matches(), with the actual cost when the selector was metered."""
        activation = self._shared.devices.get(driver, device)
        verdict = self._unmetered(activation)
        if verdict is not None:
            return Evaluation(verdict, None)
        return self._metered_evaluation(activation, deadline)

    def _unmetered(self, activation: cel.Activation) -> bool | None:
        if self._metered:
            return None
        try:
            return _verdict(self._runs.eval(activation))
        except RuntimeError as err:
            if ITERATION_BUDGET not in str(err):
                raise SelectorError(_error_text(err)) from None
        # A device larger than the API admits, which the bound assumed: meter from now on.
        self._metered = True
        return None

    def _metered_evaluation(self, activation: cel.Activation, deadline: float | None
                            ) -> Evaluation:
        runtime = self._shared.runtime
        while True:
            if self._plan is None:
                self._plan = runtime.plan_for(self._checked, self._driven)
            plan = self._plan
            meter = Meter(self._shared.cost_limit, deadline, activation, plan)
            failure: RuntimeError | None = None
            with runtime.evaluating(meter):
                try:
                    result = plan.root.eval(activation)
                except RuntimeError as err:
                    failure = err
            # Whatever the expression made of a stopped evaluation, the stop decides.
            if meter.stop == COST_LIMIT_EXCEEDED:
                raise SelectorError(COST_LIMIT_EXCEEDED)
            if meter.stop == INTERRUPTED:
                raise SelectorTimeoutError(DEADLINE_EXCEEDED)
            if failure is not None and ITERATION_BUDGET not in str(failure):
                raise SelectorError(_error_text(failure))
            if meter.stop != RETRY and failure is None:
                return Evaluation(_verdict(result), meter.cost)
            # A frame ran out of cel-cpp's iterations (None: the root): drive its
            # outermost loops from Python and start again, dropping the charges so far.
            frame = meter.failed_frame if meter.stop == RETRY else None
            loops = outermost_loops(frame_root(plan, self._checked, frame), plan.kept)
            driven = self._driven | {loop.id for loop in loops}
            if driven == self._driven:
                raise SelectorError(ITERATION_BUDGET_EXCEEDED)
            self._driven, self._plan = driven, None


def _error_text(err: RuntimeError) -> str:
    return _runtime_text(str(err)).removesuffix(" [INTERNAL]")


def _verdict(result: cel.Value) -> bool:
    value = result.value()
    if value is True or value is False:
        return value
    if result.type() == cel.Type.ERROR:
        raise SelectorError(_runtime_text(str(value)))
    kind = _type_text(result.type())
    raise SelectorError(f"CEL result of type {kind} could not be converted to bool: "
                        f"type conversion error from {kind.capitalize()} to 'bool'")


_ACCEPTED_RESULTS = ("BOOL", "DYN", "google.protobuf.Any")


class CelCache:
    """Compiled selectors by expression, least recently used dropped first (cel.Cache)."""

    def __init__(self, max_size: int = 64, cost_limit: int = MAX_COST,
                 max_devices: int = 65536,
                 unmetered_max_cost: int = UNMETERED_MAX_COST) -> None:
        self._max_size = max_size
        runtime = Runtime()
        self._env = new_env(runtime.functions())
        self._checker = new_checker_env()
        runtime.bind(self._env, new_env(variables={"__v": cel.Type.DYN}))
        self._shared = _Shared(_Devices(self._env, max_devices), runtime, cost_limit,
                               unmetered_max_cost)
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
            program = self._env.deserialize(self._checker.compile(expression).serialize())
        except RuntimeError as err:
            text = _STATUS.sub("", str(err), count=1).removesuffix(" [INVALID_ARGUMENT]")
            return SelectorError(f"compilation failed: {text}")
        checked = decode_checked(program.serialize())
        mixed = literal_errors(expression, checked)
        if mixed is not None:
            return SelectorError(f"compilation failed: {mixed}")
        result = program.return_type()
        if result.name() not in _ACCEPTED_RESULTS:
            return SelectorError(
                f"must evaluate to bool or the unknown type, not {_type_text(result)}")
        refused = constant_pattern_error(checked)
        if refused is not None:
            return SelectorError(refused)
        return CompiledSelector(expression, program, self._shared)
