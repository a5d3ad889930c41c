"""A recording stand-in for RawApi, for unit tests of code that writes to the API
(the scheduler's failure paths, the event recorder, the status writer). What really
crosses the API server is covered by the e2e suite."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kpysched.api.response import ApiResponse


@dataclass
class RecordingApi:
    """Answers every request with 201/200 unless `answers` says otherwise (matched on
    method and a path suffix); `hold` parks matching requests until released."""

    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    answers: dict[tuple[str, str], ApiResponse] = field(default_factory=dict)
    hold: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)

    def sibling(self, lane: str | None = None) -> RecordingApi:
        return self

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        for (want_method, suffix), gate in self.hold.items():
            if method == want_method and path.endswith(suffix):
                await gate.wait()
        self.requests.append((method, path, body))
        for (want_method, suffix), answer in self.answers.items():
            if method == want_method and path.endswith(suffix):
                return answer
        return ApiResponse(201 if method == "POST" else 200, b"{}")

    def sent(self, method: str, suffix: str) -> list[Any]:
        """The bodies sent; bytes (RawApi sends them as they are) read as the JSON they are."""
        return [msgspec.json.decode(body) if isinstance(body, bytes) else body
                for m, path, body in self.requests if m == method and path.endswith(suffix)]

    def events(self, reason: str) -> list[str]:
        return [body["note"] for body in self.sent("POST", "/events")
                if body["reason"] == reason]
