"""The front process's one handler: every request that passed authentication and
authorization goes to the scheduler process's backend over its Unix socket, with the
front's headers saying who asks (kpysched.serving.trusted); the answer comes back as
it is, and /metrics gains the front's own series (kpysched.serving.metrics)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import aiohttp
import structlog
from aiohttp import web

from kpysched.serving.access import USER, Handler
from kpysched.serving.metrics import FrontMetrics
from kpysched.serving.trusted import (
    HEADERS,
    READABLE_ASKED,
    READABLE_HEADER,
    USER_HEADER,
    decode_names,
    encode_names,
    encode_user,
)

if TYPE_CHECKING:
    from pathlib import Path

    from kpysched.serving.server import Server

log = structlog.get_logger(__name__)

# Longer than the longest the backend itself waits (the cache dump's 10 s).
BACKEND_TIMEOUT_SECONDS: Final = 30.0
# Hop-by-hop headers, the client's credentials (the backend needs none) and the
# front's own headers, which only the front may set.
_NOT_FORWARDED: Final = frozenset(
    name.lower() for name in ("Connection", "Keep-Alive", "Proxy-Authenticate",
                              "Proxy-Authorization", "TE", "Trailer",
                              "Transfer-Encoding", "Upgrade", "Host", "Content-Length",
                              "Authorization", *HEADERS))
_NOT_RETURNED: Final = frozenset(
    name.lower() for name in ("Connection", "Keep-Alive", "Transfer-Encoding",
                              "Content-Length", "Date", "Server", *HEADERS))
_Headers = list[tuple[str, str]]  # in order, repeats kept
_Answer = tuple[int, Mapping[str, str], bytes]


class Forwarder:
    """Built in the front process, bound to its Server (Server.front)."""

    def __init__(self, socket_path: Path) -> None:
        self._socket_path = socket_path
        self._session: aiohttp.ClientSession | None = None
        self._server: Server | None = None
        self.metrics: FrontMetrics | None = None

    def bind(self, server: Server) -> Handler:
        self._server = server
        self.metrics = FrontMetrics(lambda: server.open_connections)
        return self.handle

    @web.middleware
    async def count(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Outermost: counts every answer, the refusals of authentication and
        authorization included."""
        response = await handler(request)
        if self.metrics is not None:
            self.metrics.answered(response.status)
        return response

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert self._server is not None
        body = await request.read()
        headers = [(name, value) for name, value in request.headers.items()
                   if name.lower() not in _NOT_FORWARDED]
        headers.append((USER_HEADER, encode_user(request.get(USER))))
        answer = await self._send(request, headers, body)
        if answer is None:
            return _unavailable()
        asked = answer[1].get(READABLE_ASKED)
        if asked is not None:
            # A health check failed: may this caller read why? (Server.may_read_reasons)
            endpoint = request.path.strip("/")
            readable = await self._server.may_read_reasons(
                request, endpoint, sorted(decode_names(asked)))
            answer = await self._send(
                request, [*headers, (READABLE_HEADER, encode_names(readable))], body)
            if answer is None:
                return _unavailable()
        status, returned, payload = answer
        if request.path == "/metrics" and status == 200 and self.metrics is not None:
            payload += self.metrics.render()
        response = web.Response(status=status, body=payload)
        for name, value in returned.items():
            if name.lower() not in _NOT_RETURNED:
                response.headers.add(name, value)
        return response

    async def _send(self, request: web.Request, headers: _Headers,
                    body: bytes) -> _Answer | None:
        if self._session is None:
            # The host is a placeholder: the connector always dials the socket.
            self._session = aiohttp.ClientSession(
                "http://backend", connector=aiohttp.UnixConnector(str(self._socket_path)),
                timeout=aiohttp.ClientTimeout(total=BACKEND_TIMEOUT_SECONDS),
                auto_decompress=False, skip_auto_headers=("User-Agent",))
        try:
            async with self._session.request(request.method, request.rel_url,
                                             headers=headers, data=body or None,
                                             allow_redirects=False) as response:
                payload = await response.read()
                return response.status, response.headers, payload
        except (aiohttp.ClientError, TimeoutError) as error:
            if self.metrics is not None:
                self.metrics.backend_errors += 1
            log.warning("server.backend_unreachable", path=request.path,
                        reason=str(error) or type(error).__name__)
            return None


def _unavailable() -> web.Response:
    return web.json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": "the scheduler process did not answer the secure port's front "
                    "process", "reason": "ServiceUnavailable", "details": {}, "code": 503},
        status=503)
