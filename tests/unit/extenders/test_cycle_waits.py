"""A scheduling cycle waiting for an extender pauses; the event loop goes on meanwhile
(the informers, bindings and events share it), and the answer comes back into the
cycle where it waited."""

from __future__ import annotations

import asyncio

import pytest

from kpysched.config.extenders import Extender
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.registry import Extenders
from kpysched.framework.runtime.cooperative import (
    await_in_cycle,
    can_await_in_cycle,
    holding_the_loop,
    run_cooperatively,
)
from tests.unit.builders import make_node
from tests.unit.extenders.server import FakeExtender, serving


async def test_the_loop_runs_while_a_cycle_waits_for_an_extender() -> None:
    with serving(FakeExtender(delay=0.2)) as extender:
        extender.answers["filter"] = lambda body: (200, {"NodeNames": body["NodeNames"]})
        extenders = Extenders([Extender(urlPrefix=extender.url, filterVerb="filter",
                                        nodeCacheCapable=True)])
        ticks = 0
        stop = asyncio.Event()

        async def other_work() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        def cycle() -> tuple[list[str], int]:
            before = ticks
            (one,) = extenders
            answer = extenders.wait(one.filter(b"{}", [make_node("n1").info()]))
            return [node.name for node in answer.nodes], ticks - before

        ticker = asyncio.create_task(other_work())
        try:
            (names, ticked), _ = await run_cooperatively(cycle)
        finally:
            stop.set()
            await ticker
            await extenders.close()
    assert names == ["n1"]
    assert ticked > 0


async def test_an_error_is_raised_where_the_cycle_waited() -> None:
    async def failing() -> None:
        raise ExtenderError("no")

    def cycle() -> str:
        try:
            await_in_cycle(failing())
        except ExtenderError as error:
            return str(error)
        return "not raised"

    assert (await run_cooperatively(cycle))[0] == "no"


async def test_a_cycle_holding_the_loop_cannot_pause() -> None:
    def cycle() -> tuple[bool, bool]:
        with holding_the_loop():
            held = can_await_in_cycle()
        return can_await_in_cycle(), held

    assert (await run_cooperatively(cycle))[0] == (True, False)
    assert not can_await_in_cycle()
    with pytest.raises(RuntimeError):
        await_in_cycle(asyncio.sleep(0))
