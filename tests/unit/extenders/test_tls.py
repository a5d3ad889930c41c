"""HTTPS to an extender as upstream's makeTransport sets it up: the CA from caFile or
caData, enableHTTPS without a CA skipping verification, and Go's words for a server
certificate no given CA signed."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kpysched.config.extenders import Extender
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.registry import Extenders
from tests.extender import tls
from tests.unit.builders import make_node
from tests.unit.extenders.server import FakeExtender, names_of, serving


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple[str, str], Path, Path]:
    """(serving certificate and key, its CA file, an unrelated CA file)."""
    serving_pair, ca = tls.make(tmp_path_factory.mktemp("extender-tls"))
    _, other_ca = tls.make(tmp_path_factory.mktemp("other-ca"))
    return (serving_pair.cert, serving_pair.key), ca, other_ca


@pytest.fixture
def extender(certificates: tuple[tuple[str, str], Path, Path]) -> Iterator[FakeExtender]:
    with serving(FakeExtender(), tls=certificates[0]) as running:
        running.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
        yield running


def _filter(config: dict[str, Any]) -> list[str]:
    extenders = Extenders([Extender.model_validate(config)])
    try:
        (one,) = extenders
        answer = extenders.wait(one.filter(b"{}", [make_node("n1").info()]))
        return [node.name for node in answer.nodes]
    finally:
        asyncio.run(extenders.close())


def test_a_ca_file_or_ca_data_verifies_the_extender(
        extender: FakeExtender, certificates: tuple[tuple[str, str], Path, Path]) -> None:
    _, ca, _ = certificates
    base = {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True}
    assert _filter({**base, "tlsConfig": {"caFile": str(ca)}}) == ["n1"]
    ca_data = base64.b64encode(ca.read_bytes()).decode()
    assert _filter({**base, "tlsConfig": {"caData": ca_data}}) == ["n1"]
    assert _filter({**base, "enableHTTPS": True}) == ["n1"]  # no CA: not verified


def test_a_certificate_from_another_ca_is_refused_in_gos_words(
        extender: FakeExtender, certificates: tuple[tuple[str, str], Path, Path]) -> None:
    _, _, other_ca = certificates
    with pytest.raises(ExtenderError) as refused:
        _filter({"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True,
                 "tlsConfig": {"caFile": str(other_ca)}})
    assert str(refused.value) == (f'Post "{extender.url}/filter": tls: failed to verify '
                                  "certificate: x509: certificate signed by unknown authority")


def _client_certificate(directory: Path) -> tuple[Path, Path, Path]:
    """(a CA, a client certificate it signed, the client's key), made with openssl."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    directory.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-subj", "/CN=client-ca", "-days", "1", "-out", "ca.crt")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key",
            "-subj", "/CN=kpysched", "-out", "client.csr")
    (directory / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "client.ext", "-out", "client.crt")
    return directory / "ca.crt", directory / "client.crt", directory / "client.key"


@pytest.mark.parametrize("as_data", [pytest.param(False, id="files"),
                                     pytest.param(True, id="data")])
def test_a_client_certificate_from_files_or_data(
        tmp_path: Path, certificates: tuple[tuple[str, str], Path, Path],
        as_data: bool) -> None:
    serving_pair, ca, _ = certificates
    client_ca, cert, key = _client_certificate(tmp_path / "client")
    extender = FakeExtender()
    extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
    with serving(extender, tls=serving_pair, client_ca=str(client_ca)):
        tls_config: dict[str, Any] = {"caFile": str(ca)}
        if as_data:
            tls_config |= {"certData": base64.b64encode(cert.read_bytes()).decode(),
                           "keyData": base64.b64encode(key.read_bytes()).decode()}
        else:
            tls_config |= {"certFile": str(cert), "keyFile": str(key)}
        base = {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True}
        assert _filter({**base, "tlsConfig": tls_config}) == ["n1"]
        with pytest.raises(ExtenderError):  # the server insists on a client certificate
            _filter({**base, "tlsConfig": {"caFile": str(ca)}})
