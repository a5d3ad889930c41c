"""/configz served for real: its shape, headers and methods as kube-scheduler's
(k8s.io/component-base/configz), the same document --write-config-to writes, and, behind
the front process, only for callers authorised to the non-resource URL /configz."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kpysched.config import load_config
from kpysched.config.written import effective_document, write_config
from kpysched.framework.registry import full_registry
from kpysched.metrics import SchedulerMetrics
from kpysched.plugins import IN_TREE
from kpysched.serving import AccessControl, DelegationOptions
from kpysched.serving.authn import Authenticator
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, Authorizer
from kpysched.serving.forward import Forwarder
from kpysched.serving.server import Server, ServerConfig
from tests.unit.serving.fakes import FakeReviewer

KUBECONFIG = Path("/etc/kubernetes/scheduler.conf")


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    source = tmp_path_factory.mktemp("configz") / "config.yaml"
    source.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: kpysched\n"
        "  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n")
    config, _ = load_config(source, full_registry(IN_TREE))
    return effective_document(config, KUBECONFIG)


async def _request(url: str, method: str = "GET", token: str | None = None,
                   ) -> tuple[int, bytes, dict[str, str]]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as session, session.request(
            method, url, headers=headers) as response:
        return response.status, await response.read(), dict(response.headers)


@pytest.fixture
async def plain(document: dict[str, Any]) -> AsyncIterator[Server]:
    """No access control, as with --insecure-serving: every path is open."""
    config = ServerConfig(bind_address="127.0.0.1", port=0)
    async with Server(config, SchedulerMetrics(process_metrics=False),
                      effective_config=document) as running:
        yield running


async def test_the_body_is_the_effective_config_under_componentconfig(
        plain: Server, document: dict[str, Any]) -> None:
    status, body, _ = await _request(plain.url + "/configz")
    assert status == 200
    assert json.loads(body) == {"componentconfig": document}
    served = json.loads(body)["componentconfig"]
    assert served["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert served["kind"] == "KubeSchedulerConfiguration"
    assert served["percentageOfNodesToScore"] == 30
    assert served["clientConnection"]["kubeconfig"] == str(KUBECONFIG)


async def test_content_type_is_json_without_charset_and_nosniff(plain: Server) -> None:
    _, _, headers = await _request(plain.url + "/configz")
    # Exactly what upstream's handler sets (w.Header().Set), nothing appended.
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_any_method_is_answered_as_upstreams_handler_does(
        plain: Server, method: str, document: dict[str, Any]) -> None:
    # configz.handle ignores the method; on the secure port authorization decides with
    # the request's verb (see the front's tests below: POST needs "post").
    status, body, _ = await _request(plain.url + "/configz", method)
    assert status == 200
    assert json.loads(body) == {"componentconfig": document}


async def test_the_same_document_as_write_config_to(
        plain: Server, tmp_path: Path) -> None:
    source = tmp_path / "config.yaml"
    source.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                      "kind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 30\n"
                      "profiles:\n- schedulerName: kpysched\n  plugins:\n    score:\n"
                      "      disabled:\n      - name: ImageLocality\n")
    config, _ = load_config(source, full_registry(IN_TREE))
    written = tmp_path / "written.yaml"
    write_config(written, config, KUBECONFIG)
    _, body, _ = await _request(plain.url + "/configz")
    assert json.loads(body)["componentconfig"] == yaml.safe_load(written.read_text())


async def test_no_document_serves_no_configz() -> None:
    config = ServerConfig(bind_address="127.0.0.1", port=0)
    async with Server(config, SchedulerMetrics(process_metrics=False)) as running:
        assert (await _request(running.url + "/configz"))[0] == 404


@dataclass
class Front:
    server: Server
    reviewer: FakeReviewer


@pytest.fixture
async def front(monkeypatch: pytest.MonkeyPatch,
                document: dict[str, Any]) -> AsyncIterator[Front]:
    """Token "reader": may GET /configz. Token "scraper": may GET /metrics only."""
    reviewer = FakeReviewer({
        "reader": {"authenticated": True, "user": {"username": "reader"}},
        "scraper": {"authenticated": True, "user": {"username": "scraper"}},
        "reader /configz get": {"allowed": True},
        "scraper /metrics get": {"allowed": True}})

    async def fake_open(_: DelegationOptions) -> AccessControl:
        return AccessControl(Authenticator(reviewer, 10.0),
                             Authorizer(reviewer, DEFAULT_ALWAYS_ALLOW_PATHS, 10.0, 10.0),
                             None)

    monkeypatch.setattr(AccessControl, "open", fake_open)
    directory = Path(tempfile.mkdtemp(prefix="kpysched-test-"))
    socket = directory / "backend.sock"
    config = ServerConfig(bind_address="127.0.0.1", port=0, access=DelegationOptions())
    backend = Server(config, SchedulerMetrics(process_metrics=False),
                     effective_config=document)
    backend.behind_front(socket)
    forwarder = Forwarder(socket)
    server = Server.front(config, forwarder.bind, forwarder.count)
    async with backend, server:
        yield Front(server, reviewer)
    await forwarder.close()
    directory.rmdir()


async def test_a_reader_granted_get_on_configz_gets_it(
        front: Front, document: dict[str, Any]) -> None:
    status, body, headers = await _request(front.server.url + "/configz", token="reader")
    assert status == 200
    assert json.loads(body) == {"componentconfig": document}
    assert headers["Content-Type"] == "application/json"
    review = front.reviewer.calls[-1]
    assert review["spec"]["nonResourceAttributes"] == {"path": "/configz", "verb": "get"}


@pytest.mark.parametrize(("token", "expected"), [
    (None, 403), ("not-a-token", 401), ("scraper", 403)],
    ids=["anonymous", "bad-token", "metrics-only"])
async def test_configz_is_not_always_allowed(front: Front, token: str | None,
                                             expected: int) -> None:
    status, body, _ = await _request(front.server.url + "/configz", token=token)
    assert status == expected
    assert b"componentconfig" not in body


async def test_another_method_needs_its_own_verb(front: Front) -> None:
    status, _, _ = await _request(front.server.url + "/configz", "POST", token="reader")
    assert status == 403
    assert front.reviewer.calls[-1]["spec"]["nonResourceAttributes"] == {
        "path": "/configz", "verb": "post"}
