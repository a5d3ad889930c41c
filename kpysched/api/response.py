"""What an API request gives back, and the shape of a client that makes requests.

Data, not transport: the framework names `ApiRequester` as the type of the handle's
client, and plugins read `ApiResponse`s, without importing the transport
(client.py, http11.py), which only informers/, writes/, leader.py, serving/ and the
wiring may use.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

# ApiResponse.status when no HTTP answer arrived at all.
TRANSPORT_ERROR = 0


class ApiResponse(msgspec.Struct):
    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """The `message` of a kind: Status reply, or the raw body."""
        try:
            decoded = msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            return self.body.decode(errors="replace")[:500]
        message = decoded.get("message") if isinstance(decoded, dict) else None
        if isinstance(message, str):
            return message
        return self.body.decode(errors="replace")[:500]


class ApiRequester(Protocol):
    """What the handle's client offers a plugin (RawApi is one): raw-JSON requests,
    and a sibling with a rate limiter (and, given a lane, connections) of its own."""

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = ..., query: dict[str, str] | None = ...,
                      timeout: float | None = ..., throttle: bool = ...,
                      accept: str = ...) -> ApiResponse: ...

    def sibling(self, lane: str | None = None) -> ApiRequester: ...
