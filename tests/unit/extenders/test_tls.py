"""HTTPS to an extender as upstream's makeTransport sets it up: the CA from caFile or
caData, enableHTTPS without a CA skipping verification, and Go's words for a server
certificate no given CA signed."""

from __future__ import annotations

import asyncio
import base64
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
