"""Follows what the API server publishes in configmap kube-system/
extension-apiserver-authentication: the client CA and the front proxy's request header
settings, for the parts kpysched took from there rather than from a flag.

Upstream's DynamicCAFromConfigMapController and RequestHeaderAuthRequestController
watch that configmap, so a rotated front-proxy CA or a new allowed name reaches
kube-scheduler without a restart. Here the configmap is read again every
INTERVAL_SECONDS (one small GET, well inside the controllers' one-minute resync).
As upstream, content that does not load keeps the material in use, and a configmap
that cannot be read changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kpysched.serving.requestheader import RequestHeaderConfig

INTERVAL_SECONDS: Final = 10.0

ConfigMapRead = Callable[[], Awaitable[Mapping[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class Published:
    """The parts in use that came from the configmap; a part a flag set is kept."""

    client_ca: bytes | None
    request_header: RequestHeaderConfig | None


@dataclass(frozen=True, slots=True)
class PublishedSource:
    """Which parts come from the configmap, and how to read it (None: unreadable)."""

    read: ConfigMapRead
    client_ca: bool
    request_header: bool

    async def current(self, in_use: Published) -> Published | None:
        """What the configmap says now, with the flag-set parts as in use; None when
        it could not be read. ServingError (from the request header keys) or
        ValueError are for the caller to log: a broken configmap keeps what is in use."""
        data = await self.read()
        if data is None:
            return None
        client_ca = in_use.client_ca
        if self.client_ca:
            text = data.get(CLIENT_CA_KEY)
            client_ca = text.encode() if isinstance(text, str) and text.strip() else None
        header = in_use.request_header
        if self.request_header:
            header = RequestHeaderConfig.from_configmap(data)
        return Published(client_ca, header)


CLIENT_CA_KEY: Final = "client-ca-file"
