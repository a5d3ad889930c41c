"""Where an extender call runs: a scheduling cycle that may pause calls on the
scheduler's own loop (no hand-over to the extenders' thread and back, issue 38), over
connections kept for that loop; a caller that must wait synchronously runs its calls on
the extenders' loop thread, over that loop's own connections; a loop that ended leaves
its connections behind without breaking the next loop's calls."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kpysched.api.http11 import ConnectionPool, Reply
from kpysched.config.extenders import Extender
from kpysched.extenders.registry import Extenders
from kpysched.framework.runtime.cooperative import holding_the_loop, run_cooperatively
from tests.unit.builders import make_node
from tests.unit.extenders.server import FakeExtender, serving


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each HTTP exchange with an extender ran on, in order."""
    seen: list[int] = []
    request = ConnectionPool.request

    async def recording(pool: ConnectionPool, head: bytes, body: bytes | None) -> Reply:
        seen.append(threading.get_ident())
        return await request(pool, head, body)

    monkeypatch.setattr(ConnectionPool, "request", recording)
    return seen


def _extenders(url: str) -> Extenders:
    return Extenders([Extender(urlPrefix=url, filterVerb="filter", nodeCacheCapable=True)])


def _filter(extenders: Extenders) -> list[str]:
    (one,) = extenders
    answer = extenders.wait(one.filter(b"{}", [make_node("n1").info(), make_node("n2").info()]))
    return [node.name for node in answer.nodes]


async def test_a_cycle_calls_on_the_scheduler_s_loop_a_blocking_caller_on_the_thread(
        threads: list[int]) -> None:
    here = threading.get_ident()
    with serving(FakeExtender()) as extender:
        extender.answers["filter"] = lambda body: (200, {"NodeNames": body["NodeNames"]})
        extenders = _extenders(extender.url)
        try:
            for _ in range(3):
                kept, _ = await run_cooperatively(lambda: _filter(extenders))
                assert kept == ["n1", "n2"]
            assert threads == [here] * 3
            assert len(extender.connections) == 1  # kept alive on the scheduler's loop

            def holding() -> list[str]:
                with holding_the_loop():
                    return _filter(extenders)

            kept, _ = await run_cooperatively(holding)
            assert kept == ["n1", "n2"]
            assert threads[3] != here  # waited for on the extenders' thread
            assert len(extender.connections) == 2  # that loop's own connection

            kept, _ = await run_cooperatively(lambda: _filter(extenders))
            assert threads[4] == here
            assert len(extender.connections) == 2
        finally:
            await extenders.close()


def test_calls_from_a_new_loop_after_the_first_ended(threads: list[int]) -> None:
    with serving(FakeExtender()) as extender:
        extender.answers["filter"] = lambda body: (200, {"NodeNames": body["NodeNames"]})
        extenders = _extenders(extender.url)

        async def twice() -> list[list[str]]:
            return [(await run_cooperatively(lambda: _filter(extenders)))[0] for _ in range(2)]

        assert asyncio.run(twice()) == [["n1", "n2"]] * 2
        assert asyncio.run(twice()) == [["n1", "n2"]] * 2
        assert len(extender.connections) == 2  # one per loop
        assert threads == [threading.get_ident()] * 4
        asyncio.run(extenders.close())
