"""The scheduling loop itself (Scheduler.run, cycles run cooperatively) with an
extender that answers only once another task on the event loop lets it: the cycle
waits for the answer without holding the loop, and the pod is bound where the
extender allowed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from tests.unit.builders import make_pod
from tests.unit.extenders.run import build
from tests.unit.extenders.server import FakeExtender, names_of, serving


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in 10 s")


async def test_a_cycle_waiting_for_an_extender_leaves_the_loop_to_others() -> None:
    gate = threading.Event()
    with serving(FakeExtender(gate=gate)) as extender:
        extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
        scheduler, recording = build(
            [{"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True,
              "httpTimeout": "30s"}],
            make_pod("p").req(cpu="100m").obj())

        async def open_the_gate_once_asked() -> None:
            # Runs on the scheduler's loop: only if the waiting cycle leaves it free.
            await _until(lambda: bool(extender.requests))
            gate.set()

        opener = asyncio.create_task(open_the_gate_once_asked())
        loop = asyncio.create_task(scheduler.run())
        try:
            await _until(lambda: bool(recording.sent("POST", "/binding")))
        finally:
            scheduler.stop()
            gate.set()
            await loop
            await opener
            extenders = scheduler.context.algorithm.extenders
            assert extenders is not None
            await extenders.close()
            await scheduler.drain_writes(timeout=5)
    assert extender.gate_missed == 0
    assert [verb for verb, _ in extender.requests] == ["filter"]
    assert [body["target"]["name"] for body in recording.sent("POST", "/binding")] == ["n1"]
