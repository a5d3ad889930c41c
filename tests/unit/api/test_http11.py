"""kpysched.api.http11 against a local TCP server that answers with exact bytes: bodies by
Content-Length (split across reads), chunked (with extensions and trailers), to the end
of the connection; `Connection: close` and a server that closes an idle connection;
a reply that is not HTTP, and a reply that never comes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from kpysched.api import http11

Answer = Callable[[bytes], list[bytes]]  # request bytes -> reply pieces, written apart


@dataclass
class Server:
    answer: Answer
    port: int = 0
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    close_after_reply: bool = False
    idle_before_close: float = 0.0  # with close_after_reply: how long to stay open first
    hung_up_on: int = 0  # connections the client closed

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                for piece in self.answer(request):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)
                if self.close_after_reply:
                    await asyncio.sleep(self.idle_before_close)
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            self.hung_up_on += 1
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def listening(server: Server) -> AsyncIterator[Server]:
    started = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    server.port = started.sockets[0].getsockname()[1]
    async with started:
        yield server


def pool(server: Server, limit: int = 4) -> http11.ConnectionPool:
    return http11.ConnectionPool("127.0.0.1", server.port, None, None, limit,
                                 host_header=f"127.0.0.1:{server.port}")


def head(path: str = "/x") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: here\r\n\r\n".encode()


def fixed(body: bytes, *extra: str) -> Answer:
    def answer(_: bytes) -> list[bytes]:
        lines = ["HTTP/1.1 201 Created", f"Content-Length: {len(body)}", *extra]
        reply_head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        # One byte at a time for the head, the body in two: every boundary is crossed.
        half = len(body) // 2
        return [reply_head[i:i + 1] for i in range(len(reply_head))] + [body[:half], body[half:]]
    return answer


async def test_a_content_length_body_split_across_reads_and_a_kept_alive_connection() -> None:
    async with listening(Server(fixed(b'{"kind":"Binding"}'))) as server:
        connections = pool(server)
        first = await connections.request(head("/a"), None)
        second = await connections.request(head("/b"), None)
        assert (first.status, first.body) == (201, b'{"kind":"Binding"}')
        assert second == first
        assert (server.connections, connections.opened) == (1, 1)
        connections.close()


async def test_a_request_body_is_sent_after_its_head() -> None:
    async with listening(Server(fixed(b"{}"))) as server:
        connections = pool(server)
        request = b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n"
        await connections.request(request, b'{"a":1}')
        assert server.requests == [request + b'{"a":1}']
        connections.close()


async def test_a_chunked_body_with_extensions_and_trailers() -> None:
    def answer(_: bytes) -> list[bytes]:
        return [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"5;name=value\r\nhello\r\n", b"1\r", b"\n \r\n6\r\nworld!\r\n",
                b"0\r\nX-Trailer: yes\r\n\r\n"]
    async with listening(Server(answer)) as server:
        connections = pool(server)
        for _ in range(2):  # the connection is ready for the next reply afterwards
            reply = await connections.request(head(), None)
            assert (reply.status, reply.body) == (200, b"hello world!")
        assert connections.opened == 1
        connections.close()


async def test_connection_close_is_not_reused() -> None:
    server = Server(fixed(b"{}", "Connection: close"), close_after_reply=True)
    async with listening(server):
        connections = pool(server)
        await connections.request(head(), None)
        await connections.request(head(), None)
        assert (server.connections, connections.opened) == (2, 2)
        connections.close()


async def test_a_body_until_the_connection_ends() -> None:
    def answer(_: bytes) -> list[bytes]:
        return [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of", b" it"]
    async with listening(Server(answer, close_after_reply=True)) as server:
        connections = pool(server)
        reply = await connections.request(head(), None)
        assert reply.body == b"all of it"
        connections.close()


async def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    # No Connection: close said; the server hangs up once the connection is idle.
    server = Server(fixed(b"{}"), close_after_reply=True, idle_before_close=0.02)
    async with listening(server):
        connections = pool(server)
        await connections.request(head(), None)
        await asyncio.sleep(0.1)
        reply = await connections.request(head(), None)
        assert reply.status == 201
        assert connections.opened == 2
        connections.close()


async def test_a_reply_that_is_not_http_is_a_protocol_error() -> None:
    async with listening(Server(lambda _: [b"SSH-2.0-OpenSSH\r\n\r\n"])) as server:
        connections = pool(server)
        with pytest.raises(http11.ProtocolError, match="status line"):
            await connections.request(head(), None)
        connections.close()


async def test_a_reply_cut_short_is_a_connection_error() -> None:
    server = Server(lambda _: [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"],
                    close_after_reply=True)
    async with listening(server):
        connections = pool(server)
        with pytest.raises(ConnectionError):
            await connections.request(head(), None)
        connections.close()


async def test_a_reply_that_never_comes_leaves_no_connection_to_reuse() -> None:
    calls = 0

    def answer(_: bytes) -> list[bytes]:
        nonlocal calls
        calls += 1
        return [] if calls == 1 else fixed(b"{}")(b"")
    async with listening(Server(answer)) as server:
        connections = pool(server)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await connections.request(head(), None)
        # A late reply to the first request must not be taken for the second's.
        reply = await connections.request(head(), None)
        assert reply.status == 201
        assert connections.opened == 2
        await asyncio.sleep(0.05)
        assert server.hung_up_on == 1  # the first connection was closed, not left open
        connections.close()


async def test_the_limit_holds_requests_beyond_it() -> None:
    release = asyncio.Event()
    in_flight = 0
    most = 0

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, most
        await reader.readuntil(b"\r\n\r\n")
        in_flight += 1
        most = max(most, in_flight)
        await release.wait()
        in_flight -= 1
        writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()
    slow_server = await asyncio.start_server(slow, "127.0.0.1", 0)
    port = slow_server.sockets[0].getsockname()[1]
    async with slow_server:
        connections = http11.ConnectionPool("127.0.0.1", port, None, None, 2,
                                            host_header="h")
        requests = [asyncio.create_task(connections.request(head(), None)) for _ in range(5)]
        await asyncio.sleep(0.1)
        release.set()
        replies = await asyncio.gather(*requests)
        assert [reply.status for reply in replies] == [204] * 5
        assert most == 2
        connections.close()


async def test_a_closed_pool_opens_nothing() -> None:
    async with listening(Server(fixed(b"{}"))) as server:
        connections = pool(server)
        connections.close()
        with pytest.raises(ConnectionError, match="closed"):
            await connections.request(head(), None)
        assert server.connections == 0


def test_a_pool_closed_after_its_loop_ended_raises_nothing() -> None:
    """The pool is finalized with its ApiClient, at exit after asyncio.run (explain) or
    the lease thread closed the loop its idle connections belong to."""
    async def open_one() -> http11.ConnectionPool:
        server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = http11.ConnectionPool("127.0.0.1", port, None, None, 4, host_header="h")
        pool._idle.append(await pool._open())
        return pool

    pool = asyncio.run(open_one())
    pool.close()  # before the fix: RuntimeError('Event loop is closed')
    assert pool.closed
