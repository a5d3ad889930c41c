"""Pieces of the reflector that need no API server: line splitting, backoff, retry."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from structlog.testing import capture_logs
from structlog.typing import EventDict

from kpysched.informers.reflector import Backoff, Reflector, split_lines
from kpysched.objects.api import Node, NodeList


async def chunks_of(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        pytest.param([b'{"a":1}\n{"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="whole-lines"),
        pytest.param([b'{"a"', b":1}\n{", b'"b":2}', b"\n"], [b'{"a":1}', b'{"b":2}'],
                     id="cut-anywhere"),
        pytest.param([b"x" * 3, b"y" * 5, b"z\n"], [b"xxxyyyyyz"], id="one-line-many-chunks"),
        pytest.param([b"\n\n{}\n \n"], [b"{}"], id="blank-lines-dropped"),
        pytest.param([b"{}\n{unfinished"], [b"{}"], id="trailing-partial-dropped"),
    ],
)
async def test_split_lines(chunks: list[bytes], lines: list[bytes]) -> None:
    assert [line async for line in split_lines(chunks_of(*chunks))] == lines


def test_backoff_doubles_to_the_cap_with_bounded_jitter_and_resets() -> None:
    backoff = Backoff(0.8, 30.0, jitter=0.2)

    delays = [backoff.next_delay() for _ in range(8)]
    backoff.reset()
    after_reset = backoff.next_delay()

    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= base * 1.2
    assert 0.8 <= after_reset <= 0.96


class Ignore:
    def on_add(self, obj: Node) -> None: ...

    def on_update(self, old: Node, new: Node) -> None: ...

    def on_delete(self, obj: Node) -> None: ...


def refused_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"https://127.0.0.1:{port}"  # nothing listens there once the socket is closed


async def test_unreachable_server_is_retried_with_backoff_until_cancelled() -> None:
    configuration = client.Configuration()
    configuration.host = refused_address()
    async with client.ApiClient(configuration) as api:
        reflector = Reflector(api, "/api/v1/nodes", Node, NodeList, Ignore(),
                              backoff_initial=0.01, backoff_max=0.04)
        counted = 0
        five_logged = asyncio.Event()

        def count(_logger: object, _name: str, event: EventDict) -> EventDict:
            nonlocal counted
            counted += 1
            if counted == 5:
                five_logged.set()
            return event

        with capture_logs(processors=[count]) as logs:
            task = asyncio.create_task(reflector.run())
            try:
                await asyncio.wait_for(five_logged.wait(), 10)
            finally:
                task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    assert task.cancelled()
    assert not reflector.has_synced
    failures = logs[:5]
    assert {entry["event"] for entry in failures} == {"informer.list_failed"}
    assert all(entry["resource"] == "nodes" for entry in failures)
    assert "ClientConnectorError" in failures[0]["error"]
    bases = [0.01, 0.02, 0.04, 0.04, 0.04]
    for entry, base in zip(failures, bases, strict=True):
        assert base <= entry["retry_in"] <= round(base * 1.2, 2)
