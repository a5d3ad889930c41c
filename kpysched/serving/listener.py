"""The secure port's accept loop and per-connection deadlines (kpysched.serving.limits).

asyncio's own accept loop can neither stop accepting at a connection cap nor stay
quiet when accept() runs out of file descriptors (it reports every failure with a
traceback), and aiohttp has no header-read deadline. So this module accepts itself,
one connection per free slot, and wraps aiohttp's protocol in a guard that closes a
connection whose request headers take longer than the deadline or grow past
MaxHeaderBytes. aiohttp's keep-alive timeout is the idle deadline between requests.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import errno
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import structlog

from kpysched.serving.limits import (
    ACCEPT_LOG_INTERVAL_SECONDS,
    ACCEPT_RETRY_SECONDS,
    HEADER_SLACK_BYTES,
    ServingLimits,
    connection_cap,
)

log = structlog.get_logger(__name__)

# accept() failures that say the process or the kernel is out of something; waiting
# lets connections close and free it. Anything else is a bug and ends the loop.
_EXHAUSTED: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# net/http's answer to headers past MaxHeaderBytes.
TLS_READ_BUFFER_BYTES: Final = 32 * 1024
_HEADERS_TOO_LARGE: Final = (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                             b"Content-Type: text/plain; charset=utf-8\r\n"
                             b"Connection: close\r\n\r\n"
                             b"431 Request Header Fields Too Large")

# asyncio's and aiohttp's default listen backlog.
_BACKLOG: Final = 128

ProtocolFactory = Callable[[], asyncio.Protocol]


class _Slot:
    """One place under the connection cap, given back exactly once."""

    __slots__ = ("_free", "_released")

    def __init__(self, free: asyncio.Semaphore) -> None:
        self._free = free
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._free.release()


class _HeaderBudget:
    """Header bytes being read across all connections, against a shared budget."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol behind the header deadline and size limit.

    A request's header clock starts when the connection opens (after the TLS
    handshake) or, on a kept-alive connection, at the first byte of the next request,
    as Go's server starts it; it stops when aiohttp hands the request to the app
    (Listener.headers_complete, called by the server's outermost middleware)."""

    __slots__ = ("_budget", "_deadline", "_header_bytes", "_in_request", "_inner",
                 "_limits", "_open", "_slot", "_transport")

    def __init__(self, inner: asyncio.Protocol, limits: ServingLimits, slot: _Slot,
                 budget: _HeaderBudget,
                 open_connections: dict[asyncio.BaseTransport, _Guarded]) -> None:
        self._inner = inner
        self._limits = limits
        self._slot = slot
        self._budget = budget
        self._open = open_connections
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._in_request = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._open[transport] = self
        self._arm()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self._in_request:
            self._arm()
            self._header_bytes += len(data)
            self._budget.used += len(data)
            if (self._header_bytes > self._limits.max_header_bytes + HEADER_SLACK_BYTES
                    or self._budget.used > self._budget.limit):
                self._refuse_headers()
                return
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._transport is not None:
            self._open.pop(self._transport, None)
        self._slot.release()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def request_started(self) -> None:
        self._in_request = True
        self._disarm()

    def request_finished(self) -> None:
        self._in_request = False

    def _arm(self) -> None:
        if self._deadline is None and self._transport is not None:
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(self._limits.read_header_timeout,
                                             self._header_timeout)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._budget.used -= self._header_bytes
        self._header_bytes = 0

    def _header_timeout(self) -> None:
        self._deadline = None
        if not self._in_request and self._transport is not None:
            # Go closes without answering when the header deadline passes.
            log.debug("server.header_timeout", peer=self._transport.get_extra_info("peername"))
            self._transport.abort()

    def _refuse_headers(self) -> None:
        transport = self._transport
        self._disarm()
        if transport is not None:
            transport.write(_HEADERS_TOO_LARGE)
            transport.close()


class _CompactTls(asyncio.sslproto.SSLProtocol):
    """asyncio's TLS protocol (what `ssl=` on a server gives), reading into 32 KiB
    instead of 256 KiB per connection: the buffer is allocated, and touched, for every
    connection, and was 85% of an idle TLS connection's cost (~300 KiB -> ~70 KiB).
    A TLS record is at most 16 KiB, and requests here are small."""

    max_size = TLS_READ_BUFFER_BYTES
    # (typeshed types its ssl_handshake_timeout as int; asyncio takes float seconds.)


class Listener:
    """Accepts on `sock` while fewer than the cap's connections are open, and hands
    each one to the protocol `factory` builds (TLS first when `ssl_context`)."""

    def __init__(self, sock: socket.socket, factory: ProtocolFactory,
                 ssl_context: ssl.SSLContext | None, limits: ServingLimits) -> None:
        self._sock = sock
        self._factory = factory
        self._ssl = ssl_context
        self._limits = limits
        self.max_connections = connection_cap(limits.max_connections)
        self._free = asyncio.Semaphore(self.max_connections)
        self._budget = _HeaderBudget(limits.header_bytes_budget)
        self._open: dict[asyncio.BaseTransport, _Guarded] = {}
        self._handshakes: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._last_complaint = float("-inf")
        self._unreported = 0

    def start(self) -> None:
        self._sock.setblocking(False)
        self._task = asyncio.get_running_loop().create_task(self._accept_loop(),
                                                            name="kpysched-http-accept")

    async def close(self) -> None:
        """Stops accepting; open connections are aiohttp's to shut down."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None
        for task in list(self._handshakes):
            task.cancel()
        self._sock.close()

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def replace_ssl_context(self, context: ssl.SSLContext) -> None:
        """New handshakes use `context`; open connections keep the one they began with."""
        self._ssl = context

    def headers_complete(self, transport: asyncio.BaseTransport | None) -> Callable[[], None]:
        """Stops `transport`'s header clock; call what it returns when the response is
        done, so the next request's clock starts at its first byte."""
        guard = self._open.get(transport) if transport is not None else None
        if guard is None:
            return _nothing
        guard.request_started()
        return guard.request_finished

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._free.acquire()
            slot = _Slot(self._free)
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except OSError as error:
                slot.release()
                if error.errno not in _EXHAUSTED:
                    log.error("server.accept_stopped", reason=str(error))
                    raise
                self._complain(error)
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            except BaseException:
                slot.release()
                raise
            task = loop.create_task(self._connect(conn, slot))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _connect(self, conn: socket.socket, slot: _Slot) -> None:
        loop = asyncio.get_running_loop()
        guard = _Guarded(self._factory(), self._limits, slot, self._budget, self._open)
        handshake: asyncio.Future[None] | None = None
        protocol: asyncio.BaseProtocol = guard
        if self._ssl is not None:
            handshake = loop.create_future()
            deadline = self._limits.read_header_timeout
            protocol = _CompactTls(loop, guard, self._ssl, handshake, server_side=True,
                                   ssl_handshake_timeout=deadline)  # type: ignore[arg-type]
        transport: asyncio.Transport | None = None
        try:
            transport, _ = await loop.connect_accepted_socket(lambda: protocol, conn)
            if handshake is not None:
                await handshake
        except BaseException as error:
            # Closing twice is harmless: a failed handshake has closed it already.
            if transport is not None:
                transport.abort()
            if handshake is not None and not handshake.done():
                handshake.cancel()  # nobody will await it now
            conn.close()
            slot.release()
            if not isinstance(error, OSError | TimeoutError):
                raise
            # A failed handshake is the client's problem; net/http logs it at debug too.
            log.debug("server.handshake_failed", reason=str(error) or type(error).__name__)

    def _complain(self, error: OSError) -> None:
        now = time.monotonic()
        self._unreported += 1
        if now - self._last_complaint < ACCEPT_LOG_INTERVAL_SECONDS:
            return
        log.error("server.accept_failed", reason=error.strerror or str(error),
                  failures=self._unreported, open_connections=len(self._open),
                  retry_seconds=ACCEPT_RETRY_SECONDS,
                  hint="accepting pauses until descriptors free up; raise the open "
                       "files limit if this persists")
        self._last_complaint = now
        self._unreported = 0


def bind(host: str, port: int, *, reuse_address: bool, reuse_port: bool) -> socket.socket:
    """A listening socket on `host`:`port`; "::" listens on IPv4 too, as Go's does."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as error:
        raise OSError(f"cannot listen on {host!r}: {error.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        if reuse_address:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _nothing() -> None:
    return None



def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, readable and writable by this user only; its
    directory's permissions are what keep other users out (kpysched.serving.trusted)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        path.chmod(0o600)
        sock.listen(_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock
