"""explain's --scheduler-url (a local run): the scheduler's certificate is always
verified, against --scheduler-ca or the system store, and the user's credential goes
out only once it is."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from kpysched.explain.client import Target, UnreachableError, fetch
from kpysched.serving.certs import self_signed_pair

TOKEN = "user-token-that-must-not-leak"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig with a bearer token; its API server is never contacted here."""
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    return path


async def _scheduler(tmp_path: Path, seen: list[str]) -> AsyncIterator[tuple[str, Path]]:
    certificate, key = self_signed_pair("127.0.0.1")
    cert_file, key_file = tmp_path / "s.crt", tmp_path / "s.key"
    cert_file.write_bytes(certificate)
    key_file.write_bytes(key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    async def decisions(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "PodDecisions", "decisions": []})

    app = web.Application()
    app.router.add_get("/{tail:.*}", decisions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"https://127.0.0.1:{port}", cert_file
    finally:
        await runner.cleanup()


async def test_an_untrusted_scheduler_certificate_gets_no_credential(
        tmp_path: Path, kubeconfig: Path) -> None:
    seen: list[str] = []
    async for url, _ in _scheduler(tmp_path, seen):
        with pytest.raises(UnreachableError, match="--scheduler-ca"):
            await fetch(Target(kubeconfig, scheduler_url=url), "default", "web")
    assert seen == []  # the handshake failed before any request went out


async def test_the_scheduler_ca_verifies_it_and_the_request_goes_out(
        tmp_path: Path, kubeconfig: Path) -> None:
    seen: list[str] = []
    async for url, cert_file in _scheduler(tmp_path, seen):
        answer = await fetch(Target(kubeconfig, scheduler_url=url, scheduler_ca=cert_file),
                             "default", "web")
    assert answer.status == 200
    assert seen == [f"Bearer {TOKEN}"]
