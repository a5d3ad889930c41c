"""The secure port's deadlines, header limit, connection cap and accept-failure handling
(kpysched.serving.limits, kpysched.serving.listener), served for real on loopback with
short deadlines. Issue 31: aiohttp's defaults kept idle connections an hour, never
timed out a slow header, accepted without bound and logged a traceback per EMFILE."""

from __future__ import annotations

import asyncio
import errno
import resource
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import TlsOptions
from kpysched.serving import listener as listener_module
from kpysched.serving.limits import (
    IDLE_TIMEOUT_SECONDS,
    MAX_HEADER_BYTES,
    READ_HEADER_TIMEOUT_SECONDS,
    ServingLimits,
    connection_cap,
    raise_open_files_limit,
)
from kpysched.serving.server import Server, ServerConfig

SHORT = 0.5
# Generous: the deadline is SHORT; only "closed, not kept" is asserted.
CLOSED_WITHIN = 10.0
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: kpysched\r\n\r\n"


def _limits(**overrides: Any) -> ServingLimits:
    return ServingLimits(**{"read_header_timeout": SHORT, "idle_timeout": SHORT,
                            **overrides})


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with Server(ServerConfig("127.0.0.1", 0, limits=_limits()),
                      SchedulerMetrics()) as running:
        yield running


async def _closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed; fails if it keeps the connection."""
    received = b""
    async with asyncio.timeout(CLOSED_WITHIN):
        while True:
            try:
                chunk = await reader.read(65536)
            except ConnectionError:
                return received
            if not chunk:
                return received
            received += chunk


def test_defaults_are_upstream_s() -> None:
    limits = ServingLimits()
    assert (limits.read_header_timeout, limits.idle_timeout, limits.max_header_bytes) == (
        READ_HEADER_TIMEOUT_SECONDS, IDLE_TIMEOUT_SECONDS, MAX_HEADER_BYTES) == (
        32.0, 90.0, 1 << 20)


def test_the_environment_only_shortens_deadlines_for_tests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServingLimits.from_environment() == ServingLimits()
    monkeypatch.setenv("KPYSCHED_SERVING_READ_HEADER_TIMEOUT_SECONDS", "2")
    assert ServingLimits.from_environment().read_header_timeout == 2.0
    monkeypatch.setenv("KPYSCHED_SERVING_IDLE_TIMEOUT_SECONDS", "nan")
    with pytest.raises(ValueError, match="IDLE_TIMEOUT_SECONDS"):
        ServingLimits.from_environment()


async def test_a_connection_that_sends_nothing_is_closed_by_the_header_deadline(
        server: Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    assert await _closed_by_server(reader) == b""  # Go closes without a word too
    writer.close()


async def test_headers_trickled_a_byte_at_a_time_are_cut_off_at_the_deadline(
        server: Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
    started = time.monotonic()
    closed = False
    while not closed and time.monotonic() - started < CLOSED_WITHIN:
        try:
            writer.write(b"x")  # bytes keep coming, the deadline does not move
            await writer.drain()
            closed = await asyncio.wait_for(reader.read(1), SHORT / 5) == b""
        except TimeoutError:
            continue
        except ConnectionError:
            closed = True
    assert closed
    writer.close()


async def test_a_kept_alive_connection_serves_again_and_is_closed_when_idle(
        server: Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    for _ in range(2):
        writer.write(REQUEST)
        status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 200")
        await reader.readuntil(b"\r\n\r\nok")
    assert await _closed_by_server(reader) == b""
    writer.close()


async def test_a_handler_slower_than_the_header_deadline_still_answers() -> None:
    async def slow_dump() -> dict[str, Any]:
        await asyncio.sleep(SHORT * 3)
        return {"nodes": []}

    config = ServerConfig("127.0.0.1", 0, limits=_limits())
    async with Server(config, SchedulerMetrics(), cache_dump=slow_dump) as running:
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(b"GET /debug/cache HTTP/1.1\r\nHost: kpysched\r\n\r\n")
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        writer.close()


async def test_headers_past_max_header_bytes_get_431_as_from_net_http() -> None:
    config = ServerConfig("127.0.0.1", 0, limits=_limits(read_header_timeout=CLOSED_WITHIN,
                                                         idle_timeout=CLOSED_WITHIN,
                                                         max_header_bytes=64 * 1024))
    async with Server(config, SchedulerMetrics()) as running:
        # Under the limit, one long header is fine (aiohttp alone refused past 8 KiB).
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: kpysched\r\nX-Big: " + b"a" * 40_000
                     + b"\r\n\r\n")
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 80_000)
        answer = await _closed_by_server(reader)
        assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
        writer.close()


async def test_past_the_cap_a_client_waits_until_a_connection_closes() -> None:
    config = ServerConfig("127.0.0.1", 0, limits=_limits(read_header_timeout=CLOSED_WITHIN,
                                                         idle_timeout=CLOSED_WITHIN,
                                                         max_connections=2))
    async with Server(config, SchedulerMetrics()) as running:
        held = [await asyncio.open_connection("127.0.0.1", running.port) for _ in range(2)]
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(REQUEST)
        answer = asyncio.ensure_future(reader.readline())
        await asyncio.sleep(SHORT)
        assert not answer.done()  # in the backlog: not accepted, not served
        assert running.open_connections == 2
        held[0][1].close()
        async with asyncio.timeout(CLOSED_WITHIN):
            assert (await answer).startswith(b"HTTP/1.1 200")
        for _, held_writer in held[1:]:
            held_writer.close()
        writer.close()


async def test_tls_clients_that_never_finish_the_handshake_are_dropped(
        tmp_path: Path) -> None:
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(cert_dir=tmp_path),
                          limits=_limits())
    async with Server(config, SchedulerMetrics()) as running:
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        assert await _closed_by_server(reader) == b""  # TCP only, no ClientHello
        writer.close()
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port,
                                                       ssl=context)
        assert await _closed_by_server(reader) == b""  # handshake, then nothing
        writer.close()


async def test_out_of_descriptors_pauses_accepting_with_one_log_line(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listener_module, "ACCEPT_RETRY_SECONDS", 0.01)
    loop = asyncio.get_running_loop()
    real_accept = loop.sock_accept
    failures = 0

    async def exhausted(sock: Any) -> Any:
        nonlocal failures
        if failures < 50:
            failures += 1
            raise OSError(errno.EMFILE, "Too many open files")
        return await real_accept(sock)

    with capture_logs() as logs:
        monkeypatch.setattr(loop, "sock_accept", exhausted)
        # The accept loop is parked in the real sock_accept: one connection wakes it,
        # then every accept fails 50 times before the next succeeds.
        for _ in range(2):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(REQUEST)
            async with asyncio.timeout(CLOSED_WITHIN):
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            writer.close()
    assert failures == 50
    complaints = [e for e in logs if e["event"] == "server.accept_failed"]
    assert len(complaints) == 1
    assert complaints[0]["reason"] == "Too many open files"


def test_the_open_files_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256) if hard == resource.RLIM_INFINITY else min(soft, hard - 1, 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        before, after = raise_open_files_limit()
        assert before == lowered
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == after
        assert hard in (after, resource.RLIM_INFINITY)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize(("soft", "cap"), [(400, 200), (1 << 20, 1000)],
                         ids=["low-limit-halves", "raised-limit-keeps-the-cap"])
def test_the_cap_leaves_descriptors_for_the_scheduler(
        soft: int, cap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, soft))
    assert connection_cap(1000) == cap
