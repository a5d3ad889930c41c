"""The health and metrics endpoints, served for real on a free port."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from structlog.testing import capture_logs

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import AccessControl, DelegationOptions, TlsOptions
from kpysched.serving.authn import Authenticator
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, Authorizer
from kpysched.serving.server import HealthCheck, Server, ServerConfig, progress_check
from tests.cluster.certs import generate
from tests.unit.serving.fakes import FakeReviewer


class Flags:
    def __init__(self) -> None:
        self.progressing = True
        self.ready = False


@pytest.fixture
def flags() -> Flags:
    return Flags()


@pytest.fixture
async def server(flags: Flags) -> AsyncIterator[Server]:
    metrics = SchedulerMetrics()
    metrics.schedule_attempt("scheduled", "kpysched", 0.01)
    config = ServerConfig(bind_address="127.0.0.1", port=0)
    async with Server(
        config, metrics,
        livez=[HealthCheck.of("sched-progress", lambda: flags.progressing,
                              "no progress for 60s while 3 pods wait")],
        readyz=[HealthCheck.of("informer-sync", lambda: flags.ready,
                               "informers not synced")],
    ) as running:
        yield running


async def get(server: Server, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(server.url + path) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def test_port_zero_binds_a_free_port(server: Server) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


async def test_healthz_is_ok(server: Server) -> None:
    status, content_type, body = await get(server, "/healthz")
    assert (status, body) == (200, "ok")
    assert content_type.startswith("text/plain")


async def test_livez_fails_with_the_reason_when_the_loop_makes_no_progress(
        server: Server, flags: Flags) -> None:
    # No access control (plain HTTP on loopback): every path is open, the check's own
    # included, so the aggregate gives the reason too (see the guarded tests below).
    assert (await get(server, "/livez"))[0] == 200
    flags.progressing = False
    status, _, body = await get(server, "/livez")
    assert status == 500
    assert body.splitlines() == [
        "[+]ping ok",
        "[-]sched-progress failed: no progress for 60s while 3 pods wait",
        "livez check failed",
    ]
    status, _, body = await get(server, "/livez/sched-progress")
    assert (status, body) == (500, "internal server error: no progress for 60s while 3 pods wait")


async def test_readyz_is_unready_until_the_ready_check_passes(
        server: Server, flags: Flags) -> None:
    status, _, body = await get(server, "/readyz")
    assert status == 500
    assert "[-]informer-sync failed: informers not synced" in body
    flags.ready = True
    status, _, body = await get(server, "/readyz")
    assert (status, body) == (200, "ok")


async def test_verbose_lists_checks_and_exclude_skips_one(server: Server) -> None:
    status, _, body = await get(server, "/readyz?exclude=informer-sync&verbose")
    assert status == 200
    assert body.splitlines() == [
        "[+]ping ok", "[+]informer-sync excluded: ok", "readyz check passed"]


async def test_metrics_are_served_in_text_format(server: Server) -> None:
    status, content_type, body = await get(server, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    assert 'scheduler_schedule_attempts_total{profile="kpysched",result="scheduled"} 1.0' in body


async def test_stop_frees_the_port() -> None:
    server = Server(ServerConfig(bind_address="127.0.0.1", port=0), SchedulerMetrics())
    await server.start()
    url = server.url
    await server.stop()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.port
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(url + "/healthz")


def test_tls_needs_both_files() -> None:
    with pytest.raises(ValueError, match="--tls-cert-file and --tls-private-key-file"):
        TlsOptions(cert_file=Path("/tmp/cert.pem"))


@pytest.mark.parametrize(
    ("waiting", "idle", "healthy"),
    [(0, 600.0, True), (3, 5.0, True), (3, 61.0, False)],
    ids=["idle-queue", "recent-progress", "stalled-with-pods-waiting"],
)
def test_progress_check(waiting: int, idle: float, healthy: bool) -> None:
    check = progress_check(lambda: 1000.0, lambda: waiting, stall_seconds=60.0,
                           clock=lambda: 1000.0 + idle)
    reason = check.run()
    assert (reason is None) == healthy
    if not healthy:
        assert reason == "scheduling loop made no progress for 61s while 3 pods wait"


async def test_serves_https_with_the_given_certificate(tmp_path: Path) -> None:
    generate(tmp_path)  # a CA and a serving certificate for 127.0.0.1 (openssl CLI)
    config = ServerConfig(bind_address="127.0.0.1", port=0, tls=TlsOptions(
        cert_file=tmp_path / "apiserver.crt", key_file=tmp_path / "apiserver.key"))
    trust = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    async with Server(config, SchedulerMetrics()) as server, aiohttp.ClientSession() as session:
        assert server.url.startswith("https://")
        async with session.get(server.url + "/healthz", ssl=trust) as response:
            assert (response.status, await response.text()) == (200, "ok")


@pytest.fixture
async def guarded(flags: Flags, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Server]:
    """The endpoints behind authentication and authorization: token "monitor" is user
    monitor, granted GET /livez/sched-progress; everyone else anonymous or refused."""
    reviewer = FakeReviewer({
        "monitor": {"authenticated": True, "user": {"username": "monitor"}},
        "monitor /livez/sched-progress get": {"allowed": True}})

    async def fake_open(_: DelegationOptions) -> AccessControl:
        return AccessControl(Authenticator(reviewer, 10.0),
                             Authorizer(reviewer, DEFAULT_ALWAYS_ALLOW_PATHS, 10.0, 10.0),
                             None)

    monkeypatch.setattr(AccessControl, "open", fake_open)
    config = ServerConfig(bind_address="127.0.0.1", port=0, access=DelegationOptions())
    async with Server(config, SchedulerMetrics(), livez=[HealthCheck.of(
            "sched-progress", lambda: flags.progressing,
            "scheduling loop made no progress for 61s while 3 pods wait")]) as running:
        yield running


async def _get_as(server: Server, path: str, token: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(
            server.url + path, headers=headers) as response:
        return response.status, await response.text()


@pytest.mark.parametrize(("token", "reason"), [
    (None, "reason withheld"),
    ("monitor", "scheduling loop made no progress for 61s while 3 pods wait"),
], ids=["anonymous-probe-sees-only-failed", "authorised-for-the-check-sees-why"])
async def test_livez_tells_why_only_to_callers_who_may_read_the_check(
        guarded: Server, flags: Flags, token: str | None, reason: str) -> None:
    assert await _get_as(guarded, "/livez", token) == (200, "ok")
    flags.progressing = False
    with capture_logs() as logs:
        status, body = await _get_as(guarded, "/livez", token)
    assert status == 500
    assert body.splitlines() == [
        "[+]ping ok", f"[-]sched-progress failed: {reason}", "livez check failed"]
    # The reason is in the log whoever asked (upstream logs it at V(2)).
    assert [e["reasons"] for e in logs if e["event"] == "health.check_failed"] == [
        {"sched-progress": "scheduling loop made no progress for 61s while 3 pods wait"}]


async def test_the_single_check_path_is_authorised_as_any_other(
        guarded: Server, flags: Flags) -> None:
    flags.progressing = False
    assert (await _get_as(guarded, "/livez/sched-progress", None))[0] == 403
    assert await _get_as(guarded, "/livez/sched-progress", "monitor") == (
        500, "internal server error: scheduling loop made no progress for 61s "
             "while 3 pods wait")


async def test_a_failing_check_is_logged_once_per_interval_however_often_asked(
        server: Server, flags: Flags) -> None:
    flags.progressing = False
    with capture_logs() as logs:
        for _ in range(20):  # anyone may ask as often as they like
            assert (await get(server, "/livez"))[0] == 500
        flags.ready = False  # already failing: /readyz is another endpoint's log
        assert (await get(server, "/readyz"))[0] == 500
    logged = [(e["endpoint"], e["checks"]) for e in logs
              if e["event"] == "health.check_failed"]
    assert logged == [("livez", ["sched-progress"]), ("readyz", ["informer-sync"])]
