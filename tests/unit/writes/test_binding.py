"""Binder.bind: v1.37's DefaultBinder posts the Binding through util.BindPod, retrying
an InternalError or ServiceUnavailable answer and a refused connection (client-go's
retry.DefaultBackoff: 4 tries, pauses of 10 ms x5 with 10 % jitter); v1.36 posts once.
A conflict (the pod is already bound) is not retried in either."""

from __future__ import annotations

from typing import Any, cast

import msgspec
import pytest

from kpysched.api.client import RawApi
from kpysched.api.response import TRANSPORT_ERROR, ApiResponse
from kpysched.writes.binding import Binder, bind_retriable
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod


def _status(code: int, reason: str, message: str = "boom") -> ApiResponse:
    body = {"kind": "Status", "status": "Failure", "code": code, "reason": reason,
            "message": message}
    return ApiResponse(code, msgspec.json.encode(body))


UNAVAILABLE = _status(503, "ServiceUnavailable", "the server is currently unable")
INTERNAL = _status(500, "InternalError", "etcdserver: request timed out")
CONFLICT = _status(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "p"')
# As RawApi reports a refused connection (the exception's type and text).
REFUSED = ApiResponse(TRANSPORT_ERROR, b"ConnectionRefusedError: [Errno 111] Connect call "
                                       b"failed ('127.0.0.1', 6443)")
TIMED_OUT = ApiResponse(TRANSPORT_ERROR, b"TimeoutError: ")
OK = ApiResponse(201, b"{}")


class ScriptedApi(RecordingApi):
    """Answers the Binding POSTs from `script`, in order (then 201)."""

    def __init__(self, script: list[ApiResponse]) -> None:
        super().__init__()
        self.script = list(script)

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        self.requests.append((method, path, body))
        return self.script.pop(0) if self.script else OK


def _binder(script: list[ApiResponse], release: int,
            pauses: list[float]) -> tuple[Binder, ScriptedApi]:
    api = ScriptedApi(script)

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)

    return Binder(cast(RawApi, api), release=release, sleep=sleep), api


@pytest.mark.parametrize(("answer", "retriable"), [
    (UNAVAILABLE, True), (INTERNAL, True), (REFUSED, True),
    (CONFLICT, False), (TIMED_OUT, False), (_status(404, "NotFound"), False),
    # A 503 that is no API Status (a proxy's page) has no reason: not retried, as upstream's
    # apierrors.IsServiceUnavailable reads the reason.
    (ApiResponse(503, b"<html>busy</html>"), False),
])
def test_what_v1_37_retries(answer: ApiResponse, retriable: bool) -> None:
    assert bind_retriable(answer) is retriable


async def test_v1_37_retries_a_busy_api_server_then_binds() -> None:
    pauses: list[float] = []
    binder, api = _binder([UNAVAILABLE, INTERNAL], 37, pauses)
    status = await binder.bind(make_pod("p").obj(), "n1")
    assert status.ok
    assert len(api.requests) == 3
    assert len(pauses) == 2
    assert 0.010 <= pauses[0] <= 0.011 and 0.050 <= pauses[1] <= 0.055


async def test_v1_37_gives_up_after_four_tries_with_the_last_answer() -> None:
    pauses: list[float] = []
    binder, api = _binder([UNAVAILABLE] * 5, 37, pauses)
    status = await binder.bind(make_pod("p").obj(), "n1")
    assert (status.ok, status.message()) == (False, "the server is currently unable")
    assert len(api.requests) == 4
    assert len(pauses) == 3 and 0.250 <= pauses[2] <= 0.275


@pytest.mark.parametrize(("release", "script", "tries"), [
    (36, [UNAVAILABLE], 1),
    (37, [CONFLICT], 1),
])
async def test_one_post_when_not_retried(release: int, script: list[ApiResponse],
                                         tries: int) -> None:
    pauses: list[float] = []
    binder, api = _binder(script, release, pauses)
    status = await binder.bind(make_pod("p").obj(), "n1")
    assert not status.ok
    assert (len(api.requests), pauses) == (tries, [])
