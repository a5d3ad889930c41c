"""The scheduler process's side of the secure port when a front process owns it
(kpysched.serving.front): requests arrive on a Unix socket, already authenticated and
authorized, with the front's headers (kpysched.serving.trusted) saying who asks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

import structlog
from aiohttp import web

from kpysched.serving.access import USER, Handler
from kpysched.serving.metrics import BackendMetrics
from kpysched.serving.trusted import (
    READABLE_ASKED,
    READABLE_HEADER,
    USER_HEADER,
    UntrustedHeaderError,
    decode_names,
    decode_user,
    encode_names,
)

log = structlog.get_logger(__name__)

# The failed checks whose reasons the front said this caller may read.
READABLE: Final = web.RequestKey("kpysched_readable_reasons", set[str])


class ReasonsNeededError(Exception):
    """The answer depends on whether the caller may read these checks' reasons, which
    only the front can ask the authorizer."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(names)
        self.names = names


def readable_reasons(request: web.Request, names: Sequence[str]) -> set[str]:
    readable: set[str] | None = request.get(READABLE)
    if readable is None:
        raise ReasonsNeededError(names)
    # A check that failed since the front asked is withheld: it was not asked about.
    return readable & set(names)


async def trusted(request: web.Request, handler: Handler,
                  metrics: BackendMetrics) -> web.StreamResponse:
    """Believes the front's headers: only the scheduler's own user can reach the
    socket (its directory is 0700), and the front drops these headers from what
    clients send. A request without them did not come through the front: refused."""
    identity = request.headers.get(USER_HEADER)
    if identity is None:
        log.warning("server.backend_refused", path=request.path,
                    reason=f"no {USER_HEADER} header: not from the front process")
        return _refused(f"requests on this socket come from the front process with "
                        f"a {USER_HEADER} header")
    try:
        user = decode_user(identity)
    except UntrustedHeaderError as error:
        log.warning("server.backend_refused", path=request.path, reason=str(error))
        return _refused(str(error))
    if user is not None:
        request[USER] = user
    readable = request.headers.get(READABLE_HEADER)
    if readable is not None:
        request[READABLE] = decode_names(readable)
    metrics.request()
    try:
        return await handler(request)
    except ReasonsNeededError as needed:
        return web.Response(status=500, headers={READABLE_ASKED: encode_names(needed.names)})


def _refused(message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Unauthorized", "details": {}, "code": 401}
    return web.Response(text=json.dumps(body), status=401, content_type="application/json")
