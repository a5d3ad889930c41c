"""Running a metered DRA selector (cel_rewrite.py's Plan) under cel-go's actual-cost
limit and the Filter deadline.

The plan's `@kp.` functions call back here: ticks and charges add to the evaluation's
Meter, and the first that takes it over the limit (or finds the deadline passed) stops
the evaluation: from then on every callback fails, and the caller reports cel-go's
"operation cancelled: actual cost limit exceeded" (or "operation interrupted") whatever
the expression made of the failures. Driven loops (`@kp.fold`) run here: Python walks
the range and evaluates the loop's parts, checking the deadline at each element as
cel-go's interrupt checks do. A part that runs out of cel-cpp's iteration budget marks
its frame (Meter.failed_frame) for the caller to drive more loops and start again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from kpysched.plugins.dynamic_resources.cel_ast import SCALAR, Checked, decode_checked
from kpysched.plugins.dynamic_resources.cel_cost import COST_LIMIT_EXCEEDED, call_cost
from kpysched.plugins.dynamic_resources.cel_format import format_functions
from kpysched.plugins.dynamic_resources.cel_lists import Library
from kpysched.plugins.dynamic_resources.cel_named_formats import named_format_functions
from kpysched.plugins.dynamic_resources.cel_network import network_functions
from kpysched.plugins.dynamic_resources.cel_regex import regex_functions
from kpysched.plugins.dynamic_resources.cel_rewrite import (
    SIZE_CODE,
    UTF8_SIZE_CODE,
    Plan,
    Rewriter,
    SizeCode,
)
from kpysched.plugins.dynamic_resources.cel_urls import url_functions

INTERRUPTED = "operation interrupted"
ITERATION_BUDGET = "Iteration budget exceeded"  # cel-cpp's RuntimeError text
RETRY = "retry"
_T = cel.Type


class _StopError(Exception):
    """Raised inside callbacks once the evaluation is over (becomes a CEL error value)."""


@dataclass(slots=True)
class _Failure:
    """A CEL error value held by a driven loop (its accumulator, say)."""

    message: str


@dataclass(slots=True)
class Meter:
    """One evaluation's running cost and why it stopped, if it did."""

    limit: int
    deadline: float | None
    activation: cel.Activation
    plan: Plan
    cost: int = 0
    stop: str | None = None  # COST_LIMIT_EXCEEDED, INTERRUPTED or RETRY
    failed_frame: tuple[int, str] | None = None  # (fold, part) out of iteration budget
    scopes: list[dict[int, Any]] = field(default_factory=list)

    def add(self, cost: float) -> None:
        if self.stop is not None:
            raise _StopError(self.stop)
        self.cost += int(cost)
        if self.cost > self.limit:
            self.stop = COST_LIMIT_EXCEEDED
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.stop = INTERRUPTED
        if self.stop is not None:
            raise _StopError(self.stop)


class Runtime:
    """The `@kp.` functions of one environment and the evaluation they serve (one per
    thread: the functions find it through thread-local state)."""

    def __init__(self) -> None:
        self._env: cel.Env | None = None
        self._size_codes: tuple[SizeCode, SizeCode] | None = None
        self._local = threading.local()

    def functions(self) -> list[cel.FunctionDecl]:
        ints = [_T.INT] * 6
        charges = [cel.Overload(f"@kp.charge_{n}", _T.BOOL, ints[:n], is_member=False,
                                impl=self._charge) for n in range(2, 6)]
        return [
            cel.FunctionDecl("@kp.tick", [cel.Overload("@kp.tick_int", _T.BOOL, [_T.INT],
                                                       is_member=False, impl=self._tick)]),
            cel.FunctionDecl("@kp.charge", charges),
            cel.FunctionDecl("@kp.var", [cel.Overload("@kp.var_int", _T.DYN, [_T.INT],
                                                      is_member=False, impl=self._var)]),
            cel.FunctionDecl("@kp.fold", [
                cel.Overload("@kp.fold_list", _T.DYN, [_T.INT, _T.LIST, _T.LIST],
                             is_member=False, impl=self._fold),
                cel.Overload("@kp.fold_map", _T.DYN, [_T.INT, _T.MAP, _T.LIST],
                             is_member=False, impl=self._fold)]),
            *Library(self._library_charge).functions(),
            *network_functions(self._library_charge),
            *self._regex_functions(),
            *url_functions(self._library_charge),
            *named_format_functions(self._library_charge),
            *format_functions(),
        ]

    def _regex_functions(self) -> list[cel.FunctionDecl]:
        find, find_all = regex_functions(self._library_charge)
        text = [_T.STRING, _T.STRING]
        return [
            cel.FunctionDecl("@kp.string.find", [cel.Overload(
                "@kp_string_find", _T.STRING, text, is_member=False, impl=find)]),
            cel.FunctionDecl("@kp.string.findAll", [
                cel.Overload("@kp_string_findAll", _T.LIST, text, is_member=False,
                             impl=lambda s, p: find_all(s, p, -1)),
                cel.Overload("@kp_string_findAll_int", _T.LIST, [*text, _T.INT],
                             is_member=False, impl=find_all)]),
        ]

    def _library_charge(self, cost: int) -> None:
        # The list and set functions price themselves from their values; only a metered
        # evaluation has a meter to charge.
        meter: Meter | None = getattr(self._local, "meter", None)
        if meter is not None:
            meter.add(cost)

    def bind(self, env: cel.Env, template_env: cel.Env) -> None:
        """Attach the environment whose `@kp.` functions are these; `template_env`
        compiles SIZE_CODE and UTF8_SIZE_CODE (they declare `__v`, which selectors must
        not see)."""
        self._env = env
        runes, utf8 = (decode_checked(template_env.compile(code).serialize())
                       for code in (SIZE_CODE, UTF8_SIZE_CODE))
        self._size_codes = (SizeCode(runes.root, runes.references),
                            SizeCode(utf8.root, utf8.references))

    def plan_for(self, checked: Checked, driven: frozenset[int]) -> Plan:
        assert self._env is not None and self._size_codes is not None, "bind() first"
        return Rewriter(self._env, *self._size_codes, checked, driven).plan()

    @contextmanager
    def evaluating(self, meter: Meter) -> Iterator[None]:
        saved = getattr(self._local, "meter", None)
        self._local.meter = meter
        try:
            yield
        finally:
            self._local.meter = saved

    def _meter(self) -> Meter:
        meter: Meter | None = getattr(self._local, "meter", None)
        if meter is None:
            raise _StopError("no evaluation")
        if meter.stop is not None:
            raise _StopError(meter.stop)
        return meter

    def _tick(self, cost: int) -> bool:
        # The hottest path of a metered selector: Meter.add, inlined.
        meter: Meter | None = getattr(self._local, "meter", None)
        if meter is None or meter.stop is not None:
            raise _StopError("stopped")
        meter.cost += cost
        if meter.cost > meter.limit or (meter.deadline is not None
                                        and time.monotonic() > meter.deadline):
            meter.add(0)
        return True

    def _charge(self, index: int, *codes: int) -> bool:
        meter = self._meter()
        call = meter.plan.calls[index]
        if call.after:
            code = codes[0]
            meter.add(call_cost(call.function, call.overload,
                                [(SCALAR, 1)] * len(call.operands), (code & 7, code >> 3)) - 1)
            return True
        given = iter(codes)
        operands: list[tuple[int, float]] = []
        for spec in call.operands:
            if spec is None:
                code = next(given)
                operands.append((code & 7, code >> 3))
            elif spec[1] is None:
                operands.append((spec[0], next(given)))
            else:
                operands.append((spec[0], spec[1]))
        meter.add(call_cost(call.function, call.overload, operands) - 1)
        return True

    def _var(self, slot: int) -> Any:
        for scope in reversed(self._meter().scopes):
            if slot in scope:
                value = scope[slot]
                if isinstance(value, _Failure):
                    raise RuntimeError(value.message)
                return value
        raise RuntimeError(f"internal error: no variable in slot {slot}")

    def _fold(self, index: int, values: list[Any] | dict[Any, Any], captures: list[Any]
              ) -> Any:
        meter = self._meter()
        fold = meter.plan.folds[index]
        scope = dict(zip(fold.captures, captures, strict=True))
        meter.scopes.append(scope)
        try:
            scope[fold.accu_slot] = _run(meter, index, "init")
            # A map's keys, as cel-go iterates it; with two variables a list's indexes.
            items = (range(len(values)) if fold.value_slot is not None
                     and isinstance(values, list) else values)
            for item in items:
                scope[fold.iter_slot] = item
                if fold.value_slot is not None:
                    scope[fold.value_slot] = values[item]
                meter.add(0)  # the deadline, as cel-go's interrupt checks in a loop
                if _run(meter, index, "condition") is False:
                    break
                scope[fold.accu_slot] = _run(meter, index, "step")
            scope.pop(fold.iter_slot, None)
            if fold.value_slot is not None:
                scope.pop(fold.value_slot, None)
            result = _run(meter, index, "result")
        finally:
            meter.scopes.pop()
        if isinstance(result, _Failure):
            raise RuntimeError(result.message)
        return result


def _run(meter: Meter, index: int, part: str) -> Any:
    """One part of a driven loop: its value, or _Failure for a CEL error value."""
    try:
        value = meter.plan.folds[index].parts[part].eval(meter.activation)
    except RuntimeError as error:
        if ITERATION_BUDGET in str(error) and meter.stop is None:
            meter.failed_frame = (index, part)
            meter.stop = RETRY
        if meter.stop is not None:
            raise _StopError(meter.stop) from None
        raise
    if meter.stop is not None:
        raise _StopError(meter.stop)
    if value.type() == _T.ERROR:
        return _Failure(_status_free(str(value.value())))
    return value.value()


def _status_free(message: str) -> str:
    head, sep, rest = message.partition(": ")
    return rest if sep and head.isupper() and head.replace("_", "").isalpha() else message
