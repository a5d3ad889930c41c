"""RawApi's write path against a real local HTTP(S) server: what is sent arrives as
sent, authenticated from the Configuration (a rotated in-cluster token included), over
TLS trusting the configured CA, without consulting proxy variables; a refused
connection is a status, not a raise; the token bucket still holds writes back."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import shutil
import socket
import ssl
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.config import incluster_config

from kpysched.api.client import INCLUSTER_DIR_ENV, RawApi, make_api_client
from kpysched.api.response import TRANSPORT_ERROR
from tests.cluster.certs import client_certificate, generate


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    peer: Any  # the client's (host, port): the same one again means a reused connection
    client_cn: str | None


@dataclass
class ApiServer:
    """Records every request and answers `reply`."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    reply: tuple[int, bytes] = (200, b'{"kind":"Status"}')

    async def handle(self, request: web.Request) -> web.Response:
        certificate = request.transport.get_extra_info("peercert") if request.transport else None
        cn = None
        if certificate:
            cn = next(value for rdn in certificate["subject"] for key, value in rdn
                      if key == "commonName")
        self.seen.append(Seen(
            request.method, request.path, dict(request.query), dict(request.headers),
            await request.read(), request.transport.get_extra_info("peername")
            if request.transport else None, cn))
        status, body = self.reply
        return web.Response(status=status, body=body, content_type="application/json")


async def _serve(server: ApiServer, tls: ssl.SSLContext | None) -> AsyncIterator[ApiServer]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a serving certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    directory = tmp_path_factory.mktemp("pki")
    generate(directory)
    client_certificate(directory, "scheduler", "system:kube-scheduler")
    return directory


@pytest.fixture
async def plain() -> AsyncIterator[ApiServer]:
    async for server in _serve(ApiServer(), None):
        yield server


@pytest.fixture
async def secure(pki: Path) -> AsyncIterator[ApiServer]:
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    tls.load_verify_locations(pki / "ca.crt")
    tls.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is asked for, not required
    async for server in _serve(ApiServer(), tls):
        yield server


@pytest.fixture(autouse=True)
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Proxy variables pointing nowhere: a client that consulted them would fail."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    yield


def _configuration(host: str, token: str | None = "Bearer abc") -> client.Configuration:
    configuration = client.Configuration(host=host)
    if token is not None:
        configuration.api_key["BearerToken"] = token
    return configuration


async def test_a_write_arrives_as_sent(plain: ApiServer) -> None:
    plain.reply = (201, b'{"kind":"Binding"}')
    body = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    async with client.ApiClient(_configuration(plain.url)) as api_client:
        response = await RawApi(api_client).request(
            "PATCH", "/api/v1/namespaces/ns/pods/p/status", body,
            content_type="application/strategic-merge-patch+json",
            query={"fieldManager": "kpysched", "dryRun": "All"})
    assert (response.status, response.body) == (201, b'{"kind":"Binding"}')
    [seen] = plain.seen
    assert (seen.method, seen.path) == ("PATCH", "/api/v1/namespaces/ns/pods/p/status")
    assert seen.query == {"fieldManager": "kpysched", "dryRun": "All"}
    assert seen.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert seen.headers["Accept"] == "application/json"
    assert seen.headers["Authorization"] == "Bearer abc"
    assert seen.body == msgspec.json.encode(body)
    assert msgspec.json.decode(seen.body) == body


async def test_bytes_go_out_untouched_and_a_bodiless_request_has_no_content_type(
        plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url)) as api_client:
        raw = RawApi(api_client)
        await raw.request("PATCH", "/a", b"raw: yaml\n",
                          content_type="application/apply-patch+yaml")
        await raw.request("GET", "/b")
    sent, fetched = plain.seen
    assert (sent.body, sent.headers["Content-Type"]) == (b"raw: yaml\n",
                                                         "application/apply-patch+yaml")
    assert (fetched.method, fetched.body) == ("GET", b"")
    assert "Content-Type" not in fetched.headers


async def test_no_token_sends_no_authorization(plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url, token=None)) as api_client:
        await RawApi(api_client).request("GET", "/api")
    assert "Authorization" not in plain.seen[0].headers


async def test_requests_and_siblings_reuse_one_kept_alive_connection(plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url)) as api_client:
        raw = RawApi(api_client)
        for _ in range(3):
            await raw.request("POST", "/x", {})
        await raw.sibling().request("POST", "/y", {})
        await RawApi(api_client, qps=0).request("GET", "/z")
    assert len({seen.peer for seen in plain.seen}) == 1


async def test_a_sibling_in_a_lane_of_its_own_holds_its_own_connection(
        plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url)) as api_client:
        raw = RawApi(api_client)
        events = raw.sibling(lane="events")
        await raw.request("POST", "/bind", {})
        await events.request("POST", "/event", {})
        await events.sibling().request("POST", "/event", {})  # keeps its lane
        await raw.request("POST", "/bind", {})
    peers = {seen.path: set() for seen in plain.seen}
    for seen in plain.seen:
        peers[seen.path].add(seen.peer)
    assert len(peers["/bind"]) == len(peers["/event"]) == 1
    assert peers["/bind"] != peers["/event"]


async def test_closing_the_api_client_leaves_no_session_open(plain: ApiServer) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with client.ApiClient(_configuration(plain.url)) as api_client:
            await RawApi(api_client).request("GET", "/a")
            await RawApi(api_client).sibling().request("GET", "/b")
        del api_client
        gc.collect()
    assert [str(w.message) for w in caught if "Unclosed" in str(w.message)] == []


async def test_a_rotated_in_cluster_token_is_used(
        tmp_path: Path, pki: Path, secure: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("first")
    shutil.copy(pki / "ca.crt", account / "ca.crt")
    monkeypatch.setenv(INCLUSTER_DIR_ENV, str(account))
    host, port = secure.url.removeprefix("https://").split(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    # The loader re-reads the token file once its copy is a minute old; with no minute
    # to wait here, every request finds it stale.
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", dt.timedelta(0))
    async with await make_api_client(None) as api_client:
        raw = RawApi(api_client)
        first = await raw.request("GET", "/api")
        (account / "token").write_text("second")
        second = await raw.request("GET", "/api")
    assert (first.status, second.status) == (200, 200)
    assert [seen.headers["Authorization"] for seen in secure.seen] == [
        "Bearer first", "Bearer second"]


async def test_a_kubeconfig_client_certificate_over_tls_trusting_its_ca(
        tmp_path: Path, pki: Path, secure: ApiServer) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(msgspec.json.encode({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {
            "server": secure.url, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "u", "user": {
            "client-certificate": str(pki / "scheduler.crt"),
            "client-key": str(pki / "scheduler.key")}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }).decode())
    async with await make_api_client(kubeconfig) as api_client:
        response = await RawApi(api_client).request("POST", "/api/v1/x", {"a": 1})
    assert response.status == 200
    [seen] = secure.seen
    assert seen.client_cn == "system:kube-scheduler"
    assert "Authorization" not in seen.headers


async def test_a_server_outside_the_configured_trust_is_a_transport_error(
        secure: ApiServer) -> None:
    # No CA configured: the system's trust store, which never signed the test CA.
    async with client.ApiClient(_configuration(secure.url)) as api_client:
        response = await RawApi(api_client).request("GET", "/api")
    assert response.status == TRANSPORT_ERROR
    assert b"CERTIFICATE_VERIFY_FAILED" in response.body
    assert secure.seen == []


async def test_a_refused_connection_is_a_transport_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens once the probe is closed
    async with client.ApiClient(_configuration(f"http://127.0.0.1:{port}")) as api_client:
        raw = RawApi(api_client)
        response = await raw.request("POST", "/api/v1/namespaces/ns/pods/p/binding", {})
    assert response.status == TRANSPORT_ERROR
    assert response.body.startswith(b"ConnectionRefusedError")
    assert not response.ok
    assert raw.requests_sent == 1


async def test_the_token_bucket_holds_writes_beyond_the_burst(plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url)) as api_client:
        # One token per thousand seconds: after the burst of 2 the third write waits.
        raw = RawApi(api_client, qps=0.001, burst=2)
        await asyncio.gather(raw.request("POST", "/1", {}), raw.request("POST", "/2", {}))
        third = asyncio.create_task(raw.request("POST", "/3", {}))
        # A full round trip unthrottled, time enough for the third had it a token.
        assert (await raw.request("GET", "/free", throttle=False)).ok
        assert not third.done()
        third.cancel()
    assert [seen.path for seen in plain.seen] == ["/1", "/2", "/free"]
    assert raw.requests_sent == 3


async def test_a_token_with_a_line_break_is_refused_not_sent(plain: ApiServer) -> None:
    async with client.ApiClient(_configuration(plain.url, "Bearer abc\n")) as api_client:
        response = await RawApi(api_client).request("POST", "/api/v1/x", {})
    assert response.status == TRANSPORT_ERROR
    assert b"Authorization header holds a line break" in response.body
    assert plain.seen == []
