"""A long scheduling cycle gives the event loop a turn at safe points.

A scheduling cycle is synchronous Python (Filter and Score are pure functions over
the snapshot), run on the loop that also carries the informers, the binding tasks,
the event writers and the metrics publisher. A typical cycle takes a millisecond; one
tenant's pod can make one take seconds, and for all that time nothing else on the
loop moves. kube-scheduler runs those other parts on goroutines of their own.

Here the cycle runs in a greenlet (`run_cooperatively`). At safe points (between
nodes of the per-node Filter and Score passes, between plugins) the framework calls
`give_loop_a_turn()`; once the cycle has held the loop for TURN_INTERVAL_SECONDS,
that pauses the greenlet, the awaiting task sleeps for one loop iteration (every
ready task and callback runs once, and ready sockets are read), and the cycle resumes
where it was. Plugins stay synchronous and never see the pause. Only long cycles
pause: a cycle shorter than the interval runs exactly as before.

What may change during a pause is what may change during a cycle in kube-scheduler,
whose informers and binding goroutines never wait for a cycle: the cache and the
listers. The cycle's snapshot is its own (clones taken at the start of the cycle), and
the queue logs the events that arrive while a pod is in flight.

Outside `run_cooperatively` (a simulation, a test calling schedule_one) a turn is
never given, so the same code runs unchanged there.

A cycle may also wait for an answer from the network (a scheduler extender's, as
kube-scheduler's cycle waits on its HTTP call): `await_in_cycle` pauses the greenlet
while the awaiting task awaits the future, and the loop runs everything else
meanwhile.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar, cast

from greenlet import getcurrent, greenlet

Result = TypeVar("Result")

# How long a cycle may hold the loop before it gives it a turn: informers, bindings
# and events then wait at most about this long (plus the one plugin call running)
# behind a slow cycle, and a cycle pauses only when it is already 20x a typical one.
TURN_INTERVAL_SECONDS: Final = 0.02


class _CycleGreenlet(greenlet):  # type: ignore[misc]
    """The greenlet a cycle runs in; remembers when it last gave the loop a turn."""

    last_turn: float = 0.0
    turns: int = 0
    paused: float = 0.0  # seconds spent in turns
    holding: int = 0  # > 0 inside holding_the_loop()


def give_loop_a_turn() -> None:
    """At a safe point of a cycle: pause for one loop iteration if the cycle runs under
    run_cooperatively and has held the loop for TURN_INTERVAL_SECONDS since it began
    or last paused. Costs a clock read otherwise."""
    cycle = getcurrent()
    if type(cycle) is not _CycleGreenlet or cycle.holding:
        return
    paused_at = time.perf_counter()
    if paused_at - cycle.last_turn < TURN_INTERVAL_SECONDS:
        return
    cycle.turns += 1
    cycle.parent.switch()
    cycle.last_turn = time.perf_counter()
    cycle.paused += cycle.last_turn - paused_at


@contextmanager
def holding_the_loop() -> Iterator[None]:
    """No turn is given inside the block: for steps that must not see the cluster
    change half-way (a pod group's trial takes its members, tries and undoes them as
    one step)."""
    cycle = getcurrent()
    if type(cycle) is not _CycleGreenlet:
        yield
        return
    cycle.holding += 1
    try:
        yield
    finally:
        cycle.holding -= 1


class _Awaiting:
    """What a cycle hands the task running it: an awaitable to await on its behalf."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[object]) -> None:
        self.awaitable = awaitable


def can_await_in_cycle() -> bool:
    """Whether await_in_cycle can pause the running code: it runs as a cycle under
    run_cooperatively, outside holding_the_loop()."""
    cycle = getcurrent()
    return type(cycle) is _CycleGreenlet and not cycle.holding


def await_in_cycle(awaitable: Awaitable[Result]) -> Result:
    """Pause the cycle until `awaitable` is done (the loop runs meanwhile) and return
    or raise what it does. Only where can_await_in_cycle() is true."""
    cycle = getcurrent()
    if type(cycle) is not _CycleGreenlet or cycle.holding:
        if isinstance(awaitable, Coroutine):
            awaitable.close()  # never to be awaited: say nothing of it at collection
        raise RuntimeError("await_in_cycle outside a cycle that may pause")
    result = cycle.parent.switch(_Awaiting(awaitable))
    cycle.last_turn = time.perf_counter()
    return cast(Result, result)


def paused_seconds() -> float:
    """Seconds the running cycle has spent in turns so far (0 outside one): taken off
    the time charged to a plugin around whose calls the cycle paused."""
    current = getcurrent()
    return current.paused if type(current) is _CycleGreenlet else 0.0


def turns_given() -> int:
    """How many turns the running cycle has given so far (0 outside one)."""
    current = getcurrent()
    return current.turns if type(current) is _CycleGreenlet else 0


async def run_cooperatively(work: Callable[[], Result]) -> tuple[Result, int]:
    """Run `work()` (synchronous) to the end, giving the loop a turn each time it asks
    (give_loop_a_turn). Returns what it returned and how many turns it gave; raises
    what it raised. If the awaiting task is cancelled during a turn, the cycle is
    unwound (its `finally` blocks run, GreenletExit passes through them) before the
    cancellation goes on."""
    cycle = _CycleGreenlet(work)
    # The cycle sees the task's context variables (structlog's bound values).
    cycle.gr_context = contextvars.copy_context()
    cycle.last_turn = time.perf_counter()
    result = cycle.switch()
    while not cycle.dead:
        if type(result) is _Awaiting:
            result = await _await_for(cycle, result.awaitable)
            continue
        try:
            await asyncio.sleep(0)
        except BaseException:
            cycle.throw()  # GreenletExit inside the cycle: it unwinds and ends
            raise
        result = cycle.switch()
    return cast(Result, result), cycle.turns


async def _await_for(cycle: _CycleGreenlet, awaitable: Awaitable[object]) -> object:
    """Await on the cycle's behalf, then resume it with the value (or the exception,
    raised where it waits); returns what the cycle switches out with next."""
    try:
        value = await awaitable
    except asyncio.CancelledError:
        cycle.throw()
        raise
    except Exception as error:  # the cycle's to handle, where it waited
        return cycle.throw(error)
    return cycle.switch(value)
