"""A small HTTP/1.1 client for RawApi's requests: kept-alive connections to one API
server, each carrying one request at a time.

A profile of SchedulingBasic at 5000 nodes put about a quarter of kpysched's CPU per
pod in aiohttp's request path (request and response objects, timers, tracing hooks,
header multidicts) for two small JSON requests per pod: the Binding and the Event.
This client writes the request line and headers as one bytes object, parses the
status line, Content-Length or chunked bodies and `Connection: close`, and does
nothing else. TLS (CA, client certificate, verify, server name) follows the
Configuration, as kubernetes_asyncio's own connector does. A proxy is not spoken
here: RawApi keeps aiohttp for a Configuration with a proxy.

A connection that the server closed while idle is noticed (connection_lost) and never
reused. A request is never resent: a write that may have reached the server is not
repeated (a Binding sent twice would be refused, an Event duplicated), so a failure
reaches the caller as a transport error, as with aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass


class ProtocolError(Exception):
    """The server's reply was not HTTP/1.1 this client can read."""


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and the reply it is reading."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buffer = bytearray()
        self._waiter: asyncio.Future[tuple[Reply, bool]] | None = None
        # Reply being read: status, keep-alive, and how its body ends.
        self._status = 0
        self._keep_alive = True
        self._length: int | None = None
        self._chunked = False
        self._headers_done = False
        self._body = bytearray()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            # Bytes nobody asked for: the connection cannot be trusted for another reply.
            self.close()
            return
        self._buffer += data
        try:
            reply = self._parse()
        except ProtocolError as error:
            self._fail(error)
            return
        if reply is not None:
            self._waiter.set_result((reply, self._keep_alive))

    def eof_received(self) -> bool:
        if self._waiter is not None and not self._waiter.done() and self._headers_done \
                and self._length is None and not self._chunked:
            # A body that runs to the end of the connection.
            self._body += self._buffer
            self._buffer.clear()
            self._keep_alive = False
            self._waiter.set_result((Reply(self._status, bytes(self._body)), False))
        self.closed = True
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the API server closed the connection"))

    # use
    def send(self, request: bytes) -> asyncio.Future[tuple[Reply, bool]]:
        """Write one request; the future is its reply and whether the connection stays
        open for another."""
        assert self.transport is not None
        waiter: asyncio.Future[tuple[Reply, bool]] = (
            asyncio.get_running_loop().create_future())
        self._waiter = waiter
        self._status, self._keep_alive, self._length = 0, True, None
        self._chunked = self._headers_done = False
        self._body = bytearray()
        self.transport.write(request)
        return waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: BaseException) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)
        self.close()

    def _parse(self) -> Reply | None:
        buffer = self._buffer
        if not self._headers_done:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return None
            self._read_head(bytes(buffer[:end]))
            del buffer[:end + 4]
        if self._chunked:
            return self._read_chunks()
        if self._length is None:
            return None  # until the connection ends (eof_received)
        if len(buffer) < self._length:
            return None
        body = bytes(buffer[:self._length])
        del buffer[:self._length]
        return Reply(self._status, body)

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        self._status = int(parts[1])
        if parts[0] == b"HTTP/1.0":
            self._keep_alive = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            value = value.strip()
            if name == b"content-length":
                if not value.isdigit():
                    raise ProtocolError(f"Content-Length {value[:40]!r}")
                self._length = int(value)
            elif name == b"transfer-encoding":
                self._chunked = value.lower().endswith(b"chunked")
            elif name == b"connection":
                tokens = {token.strip() for token in value.lower().split(b",")}
                if b"close" in tokens:
                    self._keep_alive = False
                elif b"keep-alive" in tokens:
                    self._keep_alive = True
        self._headers_done = True
        if self._chunked:
            self._length = None
        elif self._length is None and (self._status in (204, 304) or self._status < 200):
            self._length = 0

    def _read_chunks(self) -> Reply | None:
        buffer = self._buffer
        while True:
            end = buffer.find(b"\r\n")
            if end < 0:
                return None
            size_text = bytes(buffer[:end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"chunk size {size_text[:40]!r}") from None
            if size == 0:
                # Trailers, if any, end with an empty line.
                trailer_end = buffer.find(b"\r\n\r\n", end)
                if buffer[end:end + 4] == b"\r\n\r\n":
                    del buffer[:end + 4]
                elif trailer_end >= 0:
                    del buffer[:trailer_end + 4]
                else:
                    return None
                return Reply(self._status, bytes(self._body))
            if len(buffer) < end + 2 + size + 2:
                return None
            self._body += buffer[end + 2:end + 2 + size]
            del buffer[:end + 2 + size + 2]


class ConnectionPool:
    """Kept-alive connections to one server, at most `limit` at once."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None,
                 server_hostname: str | None, limit: int, host_header: str) -> None:
        """`limit` connections at most (0: no limit); `host_header` is what requests
        put in their Host header (the URL's host and port)."""
        self.host_header = host_header
        self._host = host
        self._port = port
        self._tls = tls
        self._server_hostname = server_hostname
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(limit, 1)) if limit > 0 else None
        self.opened = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def request(self, head: bytes, body: bytes | None) -> Reply:
        """Send a request (`head`: request line and headers, ending in an empty line)
        and read its reply. Raises OSError, ssl.SSLError, ProtocolError or
        ConnectionResetError when no reply arrived."""
        if self._slots is None:
            return await self._exchange(head, body)
        async with self._slots:
            return await self._exchange(head, body)

    async def _exchange(self, head: bytes, body: bytes | None) -> Reply:
        connection = self._idle_connection() or await self._open()
        try:
            reply, keep_alive = await connection.send(head + body if body else head)
        except BaseException:
            # Cancelled or timed out half way: the reply may still come, so the
            # connection cannot carry another request.
            connection.close()
            raise
        if keep_alive and not connection.closed and not self._closed:
            self._idle.append(connection)
        else:
            connection.close()
        return reply

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        return None

    async def _open(self) -> _Connection:
        if self._closed:
            raise ConnectionResetError("the API client is closed")
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            _Connection, self._host, self._port, ssl=self._tls,
            server_hostname=(self._server_hostname if self._tls is not None else None))
        self.opened += 1
        return connection

    def close(self) -> None:
        self._closed = True
        while self._idle:
            connection = self._idle.pop()
            # RuntimeError: its event loop has already closed (the pool is finalized
            # at exit, after asyncio.run or the lease thread ended it); the socket goes
            # with the process, and there is nothing left to tell the loop.
            with contextlib.suppress(RuntimeError):
                connection.close()
