"""run_cooperatively / give_loop_a_turn: a synchronous cycle that pauses at safe points
once it has held the loop for the turn interval, and runs unchanged elsewhere."""

from __future__ import annotations

import asyncio
import contextvars
import time

import pytest

from kpysched.framework.runtime import cooperative
from kpysched.framework.runtime.cooperative import give_loop_a_turn, run_cooperatively, turns_given

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


def busy_for(seconds: float, steps: int) -> int:
    """Synchronous work of `seconds` in `steps` pieces, with a safe point after each;
    returns the turns given."""
    for _ in range(steps):
        time.sleep(seconds / steps)
        give_loop_a_turn()
    return turns_given()


async def test_outside_a_cooperative_run_no_turn_is_given() -> None:
    assert busy_for(0.1, 20) == 0


async def test_a_long_run_gives_turns_and_returns_its_result() -> None:
    ran_meanwhile = 0

    async def other() -> None:
        nonlocal ran_meanwhile
        while True:
            ran_meanwhile += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    before = ran_meanwhile
    result, turns = await run_cooperatively(lambda: busy_for(0.2, 40))
    task.cancel()
    # 200 ms at a 20 ms interval: several turns, and the other task ran in each.
    assert turns >= 3 and result == turns
    assert ran_meanwhile - before >= turns


async def test_a_short_run_gives_no_turn() -> None:
    result, turns = await run_cooperatively(lambda: "done")
    assert (result, turns) == ("done", 0)


async def test_what_the_work_raises_reaches_the_caller() -> None:
    def broken() -> None:
        busy_for(0.05, 10)
        raise ZeroDivisionError("in the cycle")

    with pytest.raises(ZeroDivisionError, match="in the cycle"):
        await run_cooperatively(broken)


async def test_cancelled_during_a_turn_the_work_unwinds_first() -> None:
    unwound = asyncio.Event()
    paused = asyncio.Event()

    def long_work() -> None:
        try:
            while True:
                time.sleep(cooperative.TURN_INTERVAL_SECONDS)
                paused.set()
                give_loop_a_turn()
        finally:
            unwound.set()

    task = asyncio.create_task(run_cooperatively(long_work))
    await paused.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert unwound.is_set()


async def test_the_work_sees_the_task_s_context_variables() -> None:
    REQUEST_ID.set("pod-a")
    seen, _ = await run_cooperatively(REQUEST_ID.get)
    assert seen == "pod-a"


async def test_no_turn_is_given_while_holding_the_loop() -> None:
    def held() -> int:
        with cooperative.holding_the_loop():
            busy_for(0.1, 20)
        return turns_given()

    assert await run_cooperatively(held) == (0, 0)


async def test_paused_time_is_counted_apart() -> None:
    def work() -> float:
        busy_for(0.1, 20)
        return cooperative.paused_seconds()

    paused, turns = await run_cooperatively(work)
    assert turns >= 1 and paused >= 0.0
    assert cooperative.paused_seconds() == 0.0  # outside a cycle
