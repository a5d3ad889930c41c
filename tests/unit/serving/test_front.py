"""The front process's forwarding and the backend's trust in its headers, both served
in this test's event loop: the backend on a Unix socket (Server.behind_front), the
front (Server.front with a Forwarder) on a loopback port with a fake reviewer.
The process itself (kpysched.serving.front) is tested in test_front_process.py."""

from __future__ import annotations

import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import AccessControl, DelegationOptions
from kpysched.serving.authn import Authenticator
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, Authorizer
from kpysched.serving.forward import Forwarder
from kpysched.serving.server import HealthCheck, Server, ServerConfig
from kpysched.serving.trusted import READABLE_ASKED, READABLE_HEADER, USER_HEADER
from tests.unit.serving.fakes import FakeReviewer

REASON = "scheduling loop made no progress for 61s while 3 pods wait"


class Flags:
    progressing = True


@dataclass
class Pair:
    front: Server
    backend: Server
    socket: Path
    reviewer: FakeReviewer

    @property
    def backend_requests(self) -> int:
        assert self.backend.backend_metrics is not None
        return self.backend.backend_metrics.requests


@pytest.fixture
async def pair(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Pair]:
    """Token "monitor": user monitor, may GET /metrics and /livez/sched-progress.
    Token "viewer": user viewer, may GET /metrics only."""
    reviewer = FakeReviewer({
        "monitor": {"authenticated": True, "user": {"username": "monitor",
                                                    "groups": ["ops"]}},
        "viewer": {"authenticated": True, "user": {"username": "viewer"}},
        "monitor /metrics get": {"allowed": True},
        "viewer /metrics get": {"allowed": True},
        "monitor /livez/sched-progress get": {"allowed": True}})

    async def fake_open(_: DelegationOptions) -> AccessControl:
        return AccessControl(Authenticator(reviewer, 10.0),
                             Authorizer(reviewer, DEFAULT_ALWAYS_ALLOW_PATHS, 10.0, 10.0),
                             None)

    monkeypatch.setattr(AccessControl, "open", fake_open)
    flags = Flags()
    directory = Path(tempfile.mkdtemp(prefix="kpysched-test-"))
    socket = directory / "backend.sock"
    metrics = SchedulerMetrics(process_metrics=False)
    metrics.schedule_attempt("scheduled", "kpysched", 0.01)
    config = ServerConfig(bind_address="127.0.0.1", port=0, access=DelegationOptions())
    backend = Server(config, metrics, livez=[HealthCheck(
        "sched-progress", lambda: None if flags.progressing else REASON)])
    backend.behind_front(socket)
    forwarder = Forwarder(socket)
    front = Server.front(config, forwarder.bind, forwarder.count)
    async with backend, front:
        pair = Pair(front, backend, socket, reviewer)
        pair.flags = flags  # type: ignore[attr-defined]
        yield pair
    await forwarder.close()
    directory.rmdir()


async def _get(url: str, token: str | None = None,
               headers: dict[str, str] | None = None,
               unix: Path | None = None) -> tuple[int, str, dict[str, str]]:
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    connector = aiohttp.UnixConnector(str(unix)) if unix is not None else None
    async with aiohttp.ClientSession(connector=connector) as session, session.get(
            url, headers=sent) as response:
        return response.status, await response.text(), dict(response.headers)


async def test_the_backend_refuses_a_request_without_the_fronts_header(pair: Pair) -> None:
    status, body, _ = await _get("http://backend/metrics", unix=pair.socket)
    assert status == 401
    assert USER_HEADER in body
    assert pair.backend_requests == 0


async def test_the_backend_refuses_a_header_the_front_never_sends(pair: Pair) -> None:
    status, _, _ = await _get("http://backend/metrics", unix=pair.socket,
                              headers={USER_HEADER: "{not json"})
    assert status == 401
    assert pair.backend_requests == 0


async def test_the_backend_serves_what_the_header_vouches_for(pair: Pair) -> None:
    status, body, _ = await _get("http://backend/metrics", unix=pair.socket,
                                 headers={USER_HEADER: '{"name":"monitor"}'})
    assert status == 200
    assert "scheduler_schedule_attempts_total" in body
    assert pair.backend_requests == 1


async def test_the_socket_is_for_this_user_only(pair: Pair) -> None:
    assert pair.socket.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("token", [None, "not-a-token"], ids=["anonymous", "bad-token"])
async def test_a_refused_request_never_reaches_the_backend(pair: Pair,
                                                           token: str | None) -> None:
    status, _, _ = await _get(pair.front.url + "/metrics", token)
    assert status in (401, 403)
    assert pair.backend_requests == 0


async def test_an_authorized_request_is_forwarded_without_its_credential(pair: Pair) -> None:
    status, body, headers = await _get(pair.front.url + "/metrics", "viewer")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert pair.backend_requests == 1
    assert "Bearer" not in body


async def test_metrics_show_both_processes_with_no_name_twice(pair: Pair) -> None:
    await _get(pair.front.url + "/metrics")  # a refusal, counted by the front
    status, body, _ = await _get(pair.front.url + "/metrics", "viewer")
    assert status == 200
    families = re.findall(r"^# TYPE (\S+) ", body, re.MULTILINE)
    assert len(families) == len(set(families))
    assert {"scheduler_schedule_attempts_total", "kpysched_serving_throttled_seconds_total",
            "kpysched_serving_backend_requests_total", "kpysched_serving_front_requests_total",
            "kpysched_serving_front_open_connections",
            "kpysched_serving_front_restarts_total"} <= set(families)
    assert 'kpysched_serving_front_requests_total{code="403"} 1.0' in body


async def test_a_client_cannot_send_the_fronts_headers_through(pair: Pair) -> None:
    """An anonymous caller claiming to be monitor, with every reason readable, gets
    the anonymous answer: the front replaces what the client sent."""
    pair.flags.progressing = False  # type: ignore[attr-defined]
    status, body, headers = await _get(
        pair.front.url + "/livez",
        headers={USER_HEADER: '{"name":"monitor","groups":["system:masters"]}',
                 READABLE_HEADER: "sched-progress"})
    assert status == 500
    assert "[-]sched-progress failed: reason withheld" in body.splitlines()
    assert READABLE_ASKED not in headers


@pytest.mark.parametrize(("token", "reason"), [
    (None, "reason withheld"),
    ("viewer", "reason withheld"),
    ("monitor", REASON),
], ids=["anonymous-probe", "not-allowed-the-check", "allowed-the-check"])
async def test_health_reasons_go_to_callers_allowed_the_check(
        pair: Pair, token: str | None, reason: str) -> None:
    assert (await _get(pair.front.url + "/livez", token))[:2] == (200, "ok")
    pair.flags.progressing = False  # type: ignore[attr-defined]
    status, body, _ = await _get(pair.front.url + "/livez", token)
    assert status == 500
    assert body.splitlines() == [
        "[+]ping ok", f"[-]sched-progress failed: {reason}", "livez check failed"]


async def test_a_healthy_probe_costs_no_review(pair: Pair) -> None:
    await _get(pair.front.url + "/livez")
    assert pair.reviewer.calls == []


async def test_the_backend_asks_the_front_when_a_reason_may_be_shown(pair: Pair) -> None:
    pair.flags.progressing = False  # type: ignore[attr-defined]
    status, body, headers = await _get("http://backend/livez", unix=pair.socket,
                                       headers={USER_HEADER: '{"name":"monitor"}'})
    assert (status, body) == (500, "")
    assert headers[READABLE_ASKED] == "sched-progress"
    status, body, _ = await _get("http://backend/livez", unix=pair.socket,
                                 headers={USER_HEADER: '{"name":"monitor"}',
                                          READABLE_HEADER: "sched-progress"})
    assert f"[-]sched-progress failed: {REASON}" in body.splitlines()


async def test_the_front_answers_503_when_the_backend_is_gone(pair: Pair) -> None:
    await pair.backend.stop()
    status, body, _ = await _get(pair.front.url + "/metrics", "viewer")
    assert status == 503
    assert "ServiceUnavailable" in body
