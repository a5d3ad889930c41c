"""A DRA selector rewritten to meter itself (cel_meter.py runs it).

The checked AST (cel_ast) is copied with:

- ticks: each straight-line block (the nodes evaluated together: the right side of
  `&&`/`||`, the arms of `?:` and the parts of a comprehension start new ones) becomes
  `@kp.tick(cost) ? block : null`, cost being cel-go's for the block's nodes (cel_cost).
  A call whose cost depends on sizes binds its operands and asks
  `@kp.charge(call, sizes...)` before it runs (join: after, on its result). So charges
  follow the evaluation cel-cpp actually does and come before the work they pay for.
- driven loops: the all()/exists()/exists_one() named in `driven` become
  `@kp.fold(loop, range, [captured values])`; their init, condition, step and result are
  separate programs (each a frame with its own iteration budget) that read the loop's
  variables through `@kp.var(slot)`. Values handed to Python must be plain (no dyn,
  optional or type parameter in their checked type) or read from the device:
  cel-expr-python crashes converting some optional values. A loop that cannot be driven
  stays as it is.
- cel-go's laziness where cel-cpp has none: `or`/`orValue` of optionals.

The `@kp.` functions cannot be written in a selector (the parser rejects `@`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cel_expr_python import cel

from kpysched.plugins.dynamic_resources.cel_adapt import adapted
from kpysched.plugins.dynamic_resources.cel_ast import (
    CALL,
    COMPREHENSION,
    IDENT,
    LIST,
    SCALAR,
    SELECT,
    SIZED,
    STRING,
    Checked,
    Entry,
    Expr,
    bool_const,
    encode_checked,
    int_const,
    null_const,
)
from kpysched.plugins.dynamic_resources.cel_cost import (
    arm_discount,
    call_operands,
    in_bytes,
    is_constant,
    optional_or,
    optional_qualifier,
    overload_id,
    own_cost,
    set_membership,
    static_size,
)

# (size << 3) | kind for a value of unknown type (cel_ast kinds; 13 a message, 14 other).
SIZE_CODE = ("type(__v) == string ? size(__v) * 8 + 1 : type(__v) == bytes ? size(__v) * 8 + 2"
             " : type(__v) == list ? size(__v) * 8 + 3 : type(__v) == map ? size(__v) * 8 + 4"
             " : type(__v) == kubernetes.Quantity || type(__v) == kubernetes.Semver ? 13 : 14")
# The same with a string's size in bytes (UTF-8): for the operands cel_cost.in_bytes names.
UTF8_SIZE_CODE = SIZE_CODE.replace("size(__v) * 8 + 1", "size(bytes(__v)) * 8 + 1", 1)


@dataclass(slots=True)
class CallPlan:
    """A call priced by sizes: what `@kp.charge(index, sizes...)` stands for."""

    function: str
    overload: str
    # Per operand: (kind, size) known beforehand, (kind, None) when the runtime passes
    # the size, None when it passes a size code (SIZE_CODE).
    operands: list[tuple[int, int | None] | None]
    after: bool  # charged on the result's size (join)


@dataclass(slots=True)
class FoldPlan:
    """A loop driven from Python: `@kp.fold(index, range, captured)`."""

    node: Expr
    iter_slot: int
    accu_slot: int
    captures: list[int]  # slots of the captured values, in the call's order
    parts: dict[str, cel.Expression]  # init, condition, step, result
    # A two-variable loop's second variable: a list's element (the first is its index)
    # or a map's value (the first is its key).
    value_slot: int | None = None


@dataclass(slots=True)
class Plan:
    """A metered selector: its program and what its `@kp.` calls refer to."""

    root: cel.Expression
    calls: list[CallPlan]
    folds: list[FoldPlan]
    kept: set[int]  # loops asked to be driven that stay in cel-cpp (not drivable)


@dataclass(slots=True)
class _Binding:
    slot: int
    frame: _Frame | None  # where the variable is a CEL variable; None: held by Python
    safe: bool  # plain or from the device: may be passed to Python


@dataclass(slots=True, eq=False)
class _Frame:
    parent: _Frame | None
    captures: dict[int, str] = field(default_factory=dict)  # slot -> name in parent


@dataclass(slots=True, frozen=True)
class SizeCode:
    """SIZE_CODE compiled: its tree and reference map, to copy with `__v` replaced."""

    root: Expr
    references: dict[int, bytes]


class Rewriter:
    """Builds the Plan of one selector for one set of driven loops."""

    def __init__(self, env: cel.Env, size_code: SizeCode, utf8_size_code: SizeCode,
                 checked: Checked, driven: frozenset[int]) -> None:
        self._env = env
        self._size_code_templates = (size_code, utf8_size_code)
        self._checked = checked
        self._driven = driven
        self._next_id = checked.max_id() + 1
        self._references = dict(checked.references)
        self._cost = 0
        self._slots = 0
        self.calls: list[CallPlan] = []
        self.folds: list[FoldPlan] = []
        self.kept: set[int] = set()
        self._alias_reads: set[int] = set()  # `@kp.var` reads of a device-map alias

    def plan(self) -> Plan:
        root = self._program(self._checked.root, {}, _Frame(None))
        return Plan(root, self.calls, self.folds, self.kept)

    # -- helpers --------------------------------------------------------------------------

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _call(self, function: str, *args: Expr) -> Expr:
        return Expr(self._id(), CALL, name=function, args=list(args))

    def _ident(self, name: str) -> Expr:
        return Expr(self._id(), IDENT, name=name)

    def _bind(self, name: str, value: Expr, body: Expr) -> Expr:
        # cel.bind's own expansion: an empty range, so cel-cpp counts no iteration.
        return Expr(self._id(), COMPREHENSION, iter_var="#unused", accu_var=name,
                    iter_range=Expr(self._id(), LIST), accu_init=value,
                    loop_condition=bool_const(self._id(), False),
                    loop_step=self._ident(name), result=body)

    def _guarded(self, check: Expr, body: Expr) -> Expr:
        return self._call("_?_:_", check, body, null_const(self._id()))

    def _program(self, node: Expr, scope: dict[str, _Binding], frame: _Frame
                 ) -> cel.Expression:
        return self._compile(self._block(node, scope, frame))

    def _compile(self, body: Expr) -> cel.Expression:
        body = adapted(body, self._id, self._checked, frozenset(self._alias_reads)) or body
        return self._env.deserialize(encode_checked(self._checked, body, self._references))

    def _block(self, node: Expr, scope: dict[str, _Binding], frame: _Frame,
               discount: int = 0) -> Expr:
        saved, self._cost = self._cost, -discount
        out = self._rewrite(node, scope, frame)
        cost, self._cost = self._cost, saved
        if cost == 0:
            return out
        return self._guarded(self._call("@kp.tick", int_const(self._id(), cost)), out)

    # -- the rewrite ----------------------------------------------------------------------

    def _rewrite(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        if node.kind == COMPREHENSION:
            if node.id in self._driven:
                if self._drivable(node, scope):
                    return self._fold(node, scope, frame)
                self.kept.add(node.id)
            return self._comprehension(node, scope, frame)
        if set_membership(node) and not node.args[1].args:
            return bool_const(node.id, False)  # OptOptimize: `x in []` never evaluates x
        own = own_cost(node, self._checked)
        if node.kind == IDENT:
            self._cost += own or 0
            return self._variable(node, scope, frame)
        if node.kind == CALL and node.name in ("_&&_", "_||_"):
            left = self._rewrite(node.args[0], scope, frame)
            return dataclasses.replace(node, args=[left, self._block(node.args[1], scope,
                                                                     frame)])
        if node.kind == CALL and node.name == "_?_:_":
            condition = self._rewrite(node.args[0], scope, frame)
            return dataclasses.replace(node, args=[condition, *(
                self._block(arm, scope, frame, arm_discount(arm, self._checked))
                for arm in node.args[1:])])
        if optional_or(node, self._checked):
            return self._optional_or(node, scope, frame)
        if own is None:
            return self._metered_call(node, scope, frame)
        if optional_qualifier(node):
            return self._optional_qualifier(node, own, scope, frame)
        self._cost += own
        if is_constant(node):
            return node
        return self._children(node, scope, frame)

    def _optional_qualifier(self, node: Expr, own: int, scope: dict[str, _Binding],
                            frame: _Frame) -> Expr:
        self._cost += own - 1  # the qualifier's 1 only when the value is there
        name = f"@kp{self._id()}"
        present = Expr(self._id(), CALL, name="hasValue", target=self._ident(name))
        charge = self._call("_||_", self._call("!_", present),
                            self._call("@kp.tick", int_const(self._id(), 1)))
        return self._bind(name, self._children(node, scope, frame),
                          self._guarded(charge, self._ident(name)))

    def _children(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        target = (self._rewrite(node.target, scope, frame) if node.target is not None
                  else None)
        args = [self._rewrite(arg, scope, frame) for arg in node.args]
        entries = [Entry(entry.id, self._rewrite(entry.value, scope, frame),
                         self._rewrite(entry.key, scope, frame) if entry.key else None,
                         entry.field_key, entry.optional) for entry in node.entries]
        return dataclasses.replace(node, target=target, args=args, entries=entries)

    def _variable(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        binding = scope.get(node.name)
        if binding is None or binding.frame is frame:
            return node  # `device`, a type name, or a variable of this frame
        if binding.frame is not None:
            # A CEL variable of an outer frame: the driven loop that leaves that frame
            # passes its value in.
            inner = frame
            while inner.parent is not binding.frame:
                assert inner.parent is not None
                inner = inner.parent
            inner.captures[binding.slot] = node.name
        read = self._call("@kp.var", int_const(self._id(), binding.slot))
        if node.id in self._checked.device_aliases:
            self._alias_reads.add(read.id)
        return read

    def _optional_or(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        # cel-go evaluates the alternative only when the optional is empty; cel-cpp calls
        # a function with both, so spell the laziness out.
        assert node.target is not None
        optional = self._rewrite(node.target, scope, frame)
        alternative = self._block(node.args[0], scope, frame)
        name = f"@kp{self._id()}"
        present = Expr(self._id(), CALL, name="hasValue", target=self._ident(name))
        value = (Expr(self._id(), CALL, name="value", target=self._ident(name))
                 if node.name == "orValue" else self._ident(name))
        return self._bind(name, optional, self._call("_?_:_", present, value, alternative))

    def _metered_call(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        operands = call_operands(node)
        rewritten = [self._rewrite(operand, scope, frame) for operand in operands]
        # cel-go charges a call whose operand failed too, with size 1 for the failure;
        # the block pays 1 and the charge (not reached then) adds the rest.
        self._cost += 1
        index = len(self.calls)
        if node.name == "join":
            self.calls.append(CallPlan(node.name, "", [None] * len(operands), after=True))
            name = f"@kp{self._id()}"
            call = self._with_operands(node, rewritten)
            charge = self._call("@kp.charge", int_const(self._id(), index),
                                self._size_code(self._ident(name)))
            return self._bind(name, call, self._guarded(charge, self._ident(name)))
        plan = CallPlan(node.name, overload_id(node, self._checked), [], after=False)
        names: list[tuple[str, Expr]] = []
        codes: list[Expr] = []
        bound: list[Expr] = []
        for position, (operand, new) in enumerate(zip(operands, rewritten, strict=True)):
            utf8 = in_bytes(node, position)
            known = static_size(operand, self._checked, utf8)
            if known is not None and is_constant(operand):
                plan.operands.append((known[0], int(known[1])))
                bound.append(new)
                continue
            name = f"@kp{self._id()}"
            names.append((name, new))
            bound.append(self._ident(name))
            info = self._checked.types.get(operand.id)
            if info is not None and info.kind in SIZED:
                plan.operands.append((info.kind, None))
                value = self._ident(name)
                if utf8 and info.kind == STRING:
                    value = self._call("bytes", value)
                codes.append(self._call("size", value))
            else:
                plan.operands.append(None)
                codes.append(self._size_code(self._ident(name), utf8))
        self.calls.append(plan)
        out = self._guarded(self._call("@kp.charge", int_const(self._id(), index), *codes),
                            self._with_operands(node, bound))
        for name, value in reversed(names):
            out = self._bind(name, value, out)
        return out

    @staticmethod
    def _with_operands(node: Expr, operands: list[Expr]) -> Expr:
        if node.target is not None:
            return dataclasses.replace(node, target=operands[0], args=operands[1:])
        return dataclasses.replace(node, args=operands)

    def _size_code(self, value: Expr, utf8: bool = False) -> Expr:
        template = self._size_code_templates[utf8]
        return self._copy(template.root, value, template.references)

    def _copy(self, node: Expr, value: Expr, references: dict[int, bytes]) -> Expr:
        if node.kind == IDENT and node.name == "__v":
            return value
        new_id = self._id()
        if node.id in references:
            self._references[new_id] = references[node.id]
        return dataclasses.replace(
            node, id=new_id,
            target=self._copy(node.target, value, references) if node.target else None,
            args=[self._copy(arg, value, references) for arg in node.args])

    # -- comprehensions -------------------------------------------------------------------

    def _parts(self, node: Expr) -> tuple[Expr, Expr, Expr, Expr, Expr]:
        parts = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step,
                 node.result)
        iter_range, init, condition, step, result = parts
        assert iter_range and init and condition and step and result
        return iter_range, init, condition, step, result

    def _slot(self) -> int:
        self._slots += 1
        return self._slots

    def _comprehension(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        iter_range, init, condition, _, result = self._parts(node)
        new_range = self._rewrite(iter_range, scope, frame)
        is_bind = iter_range.kind == LIST and not iter_range.args
        range_safe = self._safe(iter_range, scope)
        accu = _Binding(self._slot(), frame,
                        self._safe(init, scope) if is_bind else self._plain(init))
        inner = {**scope, node.accu_var: accu}
        loop = {**inner, node.iter_var: _Binding(self._slot(), frame, range_safe)}
        if node.iter_var2:
            loop[node.iter_var2] = _Binding(self._slot(), frame, range_safe)
        if is_bind:
            # Never iterates; cel-cpp's planner rejects a rewritten step here.
            return dataclasses.replace(node, accu_init=self._block(init, scope, frame),
                                       result=self._block(result, inner, frame))
        return dataclasses.replace(
            node, iter_range=new_range, accu_init=self._block(init, scope, frame),
            loop_condition=self._block(condition, loop, frame),
            loop_step=self._step(node, loop, frame),
            result=self._block(result, inner, frame))

    def _step(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        """The step as one block when all()'s `@result && p` or exists()'s `@result || p`
        always evaluates p: the condition lets the step run only while @result is not
        false (all) or not true (exists). One tick per iteration instead of two."""
        _, _, _, step, _ = self._parts(node)
        if not _evaluates_predicate(node):
            return self._block(step, scope, frame)
        saved, self._cost = self._cost, 0
        out = dataclasses.replace(step, args=[self._rewrite(arg, scope, frame)
                                              for arg in step.args])
        cost, self._cost = self._cost, saved
        if cost == 0:
            return out
        return self._guarded(self._call("@kp.tick", int_const(self._id(), cost)), out)

    def _drivable(self, node: Expr, scope: dict[str, _Binding]) -> bool:
        iter_range, init, condition, step, result = self._parts(node)
        info = self._checked.types.get(init.id)
        if info is None or info.kind != SCALAR or not info.plain:
            return False  # only all(), exists(), exists_one(): a bool or int accumulator
        if not self._safe(iter_range, scope):
            return False
        bound = {node.iter_var, node.iter_var2, node.accu_var}
        free = set().union(*(_free_names(part) - bound for part in (condition, step, result)),
                           _free_names(init))
        return all(scope[name].safe for name in free if name in scope)

    def _fold(self, node: Expr, scope: dict[str, _Binding], frame: _Frame) -> Expr:
        iter_range, init, condition, _, result = self._parts(node)
        new_range = self._rewrite(iter_range, scope, frame)
        index = len(self.folds)
        fold = FoldPlan(node, self._slot(), self._slot(), [], {})
        self.folds.append(fold)
        sub = _Frame(frame)
        accu = _Binding(fold.accu_slot, None, True)
        inner = {**scope, node.accu_var: accu}
        loop = {**inner, node.iter_var: _Binding(fold.iter_slot, None, True)}
        if node.iter_var2:
            fold.value_slot = self._slot()
            loop[node.iter_var2] = _Binding(fold.value_slot, None, True)
        fold.parts = {"init": self._program(init, scope, sub),
                      "condition": self._program(condition, loop, sub),
                      "step": self._compile(self._step(node, loop, sub)),
                      "result": self._program(result, inner, sub)}
        fold.captures = list(sub.captures)
        captured = Expr(self._id(), LIST, args=[self._variable(self._ident(name), scope, frame)
                                                for name in sub.captures.values()])
        return self._call("@kp.fold", int_const(self._id(), index), new_range, captured)

    def _plain(self, node: Expr) -> bool:
        info = self._checked.types.get(node.id)
        return info is not None and info.plain

    def _safe(self, node: Expr, scope: dict[str, _Binding]) -> bool:
        """May the value go to Python: plain, or read from the device."""
        if self._plain(node):
            return True
        if node.kind == IDENT:
            binding = scope.get(node.name)
            return binding.safe if binding is not None else node.name == "device"
        if node.kind == SELECT and not node.test_only and node.target is not None:
            return self._safe(node.target, scope)
        if node.kind == CALL and node.name == "_[_]" and node.target is None:
            return self._safe(node.args[0], scope)
        return False


def _operand(node: Expr | None, function: str) -> Expr | None:
    """The operand of `function(operand)`, else None."""
    if (node is None or node.kind != CALL or node.name != function or node.target is not None
            or len(node.args) != 1):
        return None
    return node.args[0]


def _evaluates_predicate(node: Expr) -> bool:
    """The step always evaluates its predicate: all()'s and exists()'s expansions."""
    step = node.loop_step
    if step is None or step.kind != CALL or len(step.args) != 2:
        return False

    def accumulator(operand: Expr | None) -> bool:
        return operand is not None and operand.kind == IDENT and operand.name == node.accu_var

    checked = _operand(node.loop_condition, "@not_strictly_false")
    if not accumulator(step.args[0]):
        return False
    if step.name == "_&&_":
        return accumulator(checked)
    return step.name == "_||_" and accumulator(_operand(checked, "!_"))


def _free_names(node: Expr) -> set[str]:
    if node.kind == IDENT:
        return {node.name}
    if node.kind == COMPREHENSION:
        iter_range, init, condition, step, result = (
            node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
        assert iter_range and init and condition and step and result
        bound = {node.iter_var, node.iter_var2, node.accu_var}
        inner = set().union(*(_free_names(part) for part in (condition, step, result)))
        return _free_names(iter_range) | _free_names(init) | (inner - bound)
    return set().union(*(_free_names(child) for child in node.children()))


def outermost_loops(node: Expr, kept: set[int]) -> list[Expr]:
    """The iterating comprehensions of a frame that no other one of it encloses; a
    cel.bind is no loop and a `kept` loop (not drivable) is looked into."""
    if node.kind == COMPREHENSION:
        iter_range = node.iter_range
        assert iter_range is not None
        if not (iter_range.kind == LIST and not iter_range.args) and node.id not in kept:
            return [node]
    return [loop for child in node.children() for loop in outermost_loops(child, kept)]


def frame_root(plan: Plan, checked: Checked, frame: tuple[int, str] | None) -> Expr:
    """The original subtree that a frame evaluates (None: the whole selector)."""
    if frame is None:
        return checked.root
    node = plan.folds[frame[0]].node
    part = {"init": node.accu_init, "condition": node.loop_condition,
            "step": node.loop_step, "result": node.result}[frame[1]]
    assert part is not None
    return part
