"""/configz: the effective KubeSchedulerConfiguration, as kube-scheduler serves it
(k8s.io/component-base/configz, registered by cmd/kube-scheduler/app/server.go as
"componentconfig"): `{"componentconfig": {...the v1 document...}}`, Content-Type
application/json with X-Content-Type-Options nosniff.

The document is the one --write-config-to writes (kpysched.config.written builds it;
the caller passes it here), encoded once: the configuration does not change while the
process runs. Like upstream's handler this one answers any method: authorization, not
the route, decides who may ask (the non-resource URL /configz with the request's verb,
"get" for GET), and /configz is not among the always-allowed paths."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec
from aiohttp import web

PATH: Final = "/configz"
# The name kube-scheduler registers its configuration under (configz.New).
COMPONENT: Final = "componentconfig"
CONTENT_TYPE: Final = "application/json"


def encode(document: Mapping[str, Any]) -> bytes:
    """The body of /configz for the effective configuration `document`."""
    return msgspec.json.encode({COMPONENT: document})


def install(app: web.Application, document: Mapping[str, Any]) -> None:
    app.router.add_route("*", PATH, handler(encode(document)))


def handler(body: bytes) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(_: web.Request) -> web.Response:
        # Content-Type set as a header, not content_type=: upstream sends no charset.
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE,
                                                "X-Content-Type-Options": "nosniff"})

    return serve
