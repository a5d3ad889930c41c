"""Certificate and CA files rotated under a running secure port (kpysched.serving.reload),
as kube-scheduler's dynamiccertificates controllers reload them."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from structlog.testing import capture_logs

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import DelegationOptions, TlsOptions
from kpysched.serving.certs import PAIR_NAME
from kpysched.serving.requestheader import RequestHeaderOptions
from kpysched.serving.server import Server, ServerConfig

NOW = datetime.datetime.now(datetime.UTC)
CHECK_SECONDS = 0.05  # the poll, shortened: tests wait for the swap, never sleep a fixed time
RELOADED, FAILED = "serving.certificate_reloaded", "serving.certificate_reload_failed"


@dataclass(frozen=True, slots=True)
class Issued:
    certificate: bytes  # PEM
    key: bytes  # PEM
    serial: int


class Ca:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.pem = self._sign(self.name, self.key.public_key(), ca=True).public_bytes(
            serialization.Encoding.PEM)

    def issue(self, common_name: str, organization: str | None = None) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        certificate = self._sign(x509.Name(attributes), key.public_key(), ca=False)
        return Issued(certificate.public_bytes(serialization.Encoding.PEM),
                      key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()),
                      certificate.serial_number)

    def _sign(self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey,
              ca: bool) -> x509.Certificate:
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(self.name)
                .public_key(public_key).serial_number(x509.random_serial_number())
                .not_valid_before(NOW - datetime.timedelta(hours=1))
                .not_valid_after(NOW + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                .sign(self.key, hashes.SHA256()))


def _install(issued: Issued, cert_file: Path, key_file: Path) -> None:
    cert_file.write_bytes(issued.certificate)
    key_file.write_bytes(issued.key)


async def _eventually(condition: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout}s")
        await asyncio.sleep(CHECK_SECONDS)


async def _has(logs: list[MutableMapping[str, Any]], event: str) -> bool:
    return any(e["event"] == event for e in logs)


async def _polls(count: int) -> None:
    """Lets the reloader check the files `count` more times."""
    await asyncio.sleep(CHECK_SECONDS * count)


def _client(issued: Issued | None = None, tmp: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    if issued is not None and tmp is not None:
        tmp.mkdir()
        _install(issued, tmp / "client.crt", tmp / "client.key")
        context.load_cert_chain(tmp / "client.crt", tmp / "client.key")
    return context


async def _served_serial(server: Server) -> int:
    """The serial of the certificate a new TLS connection is served."""
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=_client())
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        return x509.load_der_x509_certificate(
            ssl_object.getpeercert(binary_form=True)).serial_number
    finally:
        writer.close()
        await writer.wait_closed()


async def _status(server: Server, path: str, context: ssl.SSLContext,
                  headers: dict[str, str] | None = None) -> int | str:
    """The response's status, or "refused" when the TLS layer turned the client away."""
    try:
        async with aiohttp.ClientSession() as session, session.get(
                server.url + path, ssl=context, headers=headers or {}) as response:
            return response.status
    except aiohttp.ClientError:
        return "refused"


@pytest.fixture
def no_delegation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not in a pod and no delegation kubeconfigs: no TokenReview/SAR client at all.
    monkeypatch.setenv("KPYSCHED_INCLUSTER_DIR", str(tmp_path / "no-service-account"))


@pytest.fixture
def serving_ca() -> Ca:
    return Ca("serving-ca")


@pytest.fixture
async def served(tmp_path: Path, serving_ca: Ca) -> AsyncIterator[tuple[Server, Issued]]:
    """A server on tls.crt/tls.key, and the pair it started with."""
    first = serving_ca.issue("kpysched")
    _install(first, tmp_path / "tls.crt", tmp_path / "tls.key")
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(
        cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key"),
        certificate_check_seconds=CHECK_SECONDS)
    async with Server(config, SchedulerMetrics()) as server:
        yield server, first


async def test_a_rotated_serving_pair_is_served_to_new_connections(
        served: tuple[Server, Issued], serving_ca: Ca, tmp_path: Path) -> None:
    server, first = served
    assert await _served_serial(server) == first.serial
    second = serving_ca.issue("kpysched")
    with capture_logs() as logs:
        _install(second, tmp_path / "tls.crt", tmp_path / "tls.key")

        async def serves_second() -> bool:
            return await _served_serial(server) == second.serial

        await _eventually(serves_second)
    [reloaded] = [e for e in logs if e["event"] == RELOADED]
    assert reloaded["name"] == f"serving-cert::{tmp_path / 'tls.crt'}::{tmp_path / 'tls.key'}"
    assert reloaded["serial"] == format(second.serial, "x")
    assert not [e for e in logs if e["event"] == FAILED]


@pytest.mark.parametrize("broken", [
    pytest.param({"tls.crt": b"-----BEGIN CERTIFICATE-----\nnot base64\n"}, id="cert-garbage"),
    pytest.param({"tls.key": b""}, id="key-emptied"),
    pytest.param({"tls.crt": None}, id="cert-of-another-key"),  # a rotation half done
])
async def test_a_file_that_does_not_load_keeps_the_old_pair_and_is_logged_once(
        served: tuple[Server, Issued], serving_ca: Ca, tmp_path: Path,
        broken: dict[str, bytes | None]) -> None:
    server, first = served
    second = serving_ca.issue("kpysched")
    with capture_logs() as logs:
        for name, content in broken.items():
            (tmp_path / name).write_bytes(second.certificate if content is None else content)
        await _eventually(lambda: _has(logs, FAILED))
        await _polls(5)
        assert await _served_serial(server) == first.serial
        [failure] = [e for e in logs if e["event"] == FAILED]
        assert failure["name"].startswith("serving-cert::")
        assert failure["consequence"] == "the previous content stays in use"
        assert not [e for e in logs if e["event"] == RELOADED]

        # Fixed (the rest of the rotation lands): the new pair is served.
        _install(second, tmp_path / "tls.crt", tmp_path / "tls.key")

        async def serves_second() -> bool:
            return await _served_serial(server) == second.serial

        await _eventually(serves_second)


async def test_a_pair_generated_in_cert_dir_is_reloaded_from_there(
        tmp_path: Path, serving_ca: Ca) -> None:
    # As upstream: with --cert-dir it serves <dir>/<pair>.crt/.key through the same
    # file-watching content as --tls-cert-file, generated or not.
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(cert_dir=tmp_path / "certs"),
                          certificate_check_seconds=CHECK_SECONDS)
    async with Server(config, SchedulerMetrics()) as server:
        replacement = serving_ca.issue("kpysched")
        _install(replacement, tmp_path / "certs" / f"{PAIR_NAME}.crt",
                 tmp_path / "certs" / f"{PAIR_NAME}.key")

        async def serves_replacement() -> bool:
            return await _served_serial(server) == replacement.serial

        await _eventually(serves_replacement)


async def test_a_rotated_client_ca_accepts_its_certificates_and_refuses_the_old(
        tmp_path: Path, no_delegation: None) -> None:
    old_ca, new_ca = Ca("client-ca-1"), Ca("client-ca-2")
    (tmp_path / "ca.crt").write_bytes(old_ca.pem)
    old_admin = _client(old_ca.issue("admin", "system:masters"), tmp_path / "old")
    new_admin = _client(new_ca.issue("admin", "system:masters"), tmp_path / "new")
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(),
                          access=DelegationOptions(client_ca_file=tmp_path / "ca.crt"),
                          certificate_check_seconds=CHECK_SECONDS)
    async with Server(config, SchedulerMetrics()) as server:
        assert await _status(server, "/metrics", old_admin) == 200
        assert await _status(server, "/metrics", new_admin) == "refused"
        with capture_logs() as logs:
            (tmp_path / "ca.crt").write_bytes(b"no certificate here\n")
            await _eventually(lambda: _has(logs, FAILED))
            await _polls(5)
            assert await _status(server, "/metrics", old_admin) == 200  # kept
            (tmp_path / "ca.crt").write_bytes(new_ca.pem)

            async def accepts_new() -> bool:
                return await _status(server, "/metrics", new_admin) == 200

            await _eventually(accepts_new)
        assert await _status(server, "/metrics", old_admin) == "refused"
        assert [(e["event"], e["name"]) for e in logs if e["event"] in (RELOADED, FAILED)] \
            == [(FAILED, f"client-ca-bundle::{tmp_path / 'ca.crt'}"),
                (RELOADED, f"client-ca-bundle::{tmp_path / 'ca.crt'}")]


async def test_a_rotated_request_header_ca_is_whom_identity_headers_are_believed_from(
        tmp_path: Path, no_delegation: None) -> None:
    old_ca, new_ca = Ca("front-proxy-ca-1"), Ca("front-proxy-ca-2")
    (tmp_path / "front-proxy-ca.crt").write_bytes(old_ca.pem)
    old_proxy = _client(old_ca.issue("front-proxy-client"), tmp_path / "old")
    new_proxy = _client(new_ca.issue("front-proxy-client"), tmp_path / "new")
    as_admin = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(), access=DelegationOptions(
        skip_lookup=True, request_header=RequestHeaderOptions(
            client_ca_file=tmp_path / "front-proxy-ca.crt",
            allowed_names=("front-proxy-client",))),
        certificate_check_seconds=CHECK_SECONDS)
    async with Server(config, SchedulerMetrics()) as server:
        assert await _status(server, "/metrics", old_proxy, as_admin) == 200
        (tmp_path / "front-proxy-ca.crt").write_bytes(new_ca.pem)

        async def believes_new() -> bool:
            return await _status(server, "/metrics", new_proxy, as_admin) == 200

        await _eventually(believes_new)
        assert await _status(server, "/metrics", old_proxy, as_admin) == "refused"


class PublishedConfigMap:
    """extension-apiserver-authentication as the API server would serve it."""

    def __init__(self, front_proxy_ca: Ca, allowed: str) -> None:
        self.data: dict[str, str] | None = {}
        self.publish(front_proxy_ca, allowed)

    def publish(self, front_proxy_ca: Ca, allowed: str) -> None:
        self.data = {"requestheader-client-ca-file": front_proxy_ca.pem.decode(),
                     "requestheader-allowed-names": f'["{allowed}"]',
                     "requestheader-username-headers": '["X-Remote-User"]',
                     "requestheader-group-headers": '["X-Remote-Group"]',
                     "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]'}

    async def read(self) -> dict[str, str] | None:
        return self.data


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> PublishedConfigMap:
    """AccessControl.open as with a reachable API server whose configmap is `published`
    (the authentication kubeconfig's reviews are not needed: identities come from the
    front proxy's headers)."""
    from kpysched.serving import access as access_module
    from kpysched.serving.authn import Authenticator
    from kpysched.serving.authz import Authorizer
    from kpysched.serving.published import PublishedSource
    from kpysched.serving.requestheader import RequestHeaderAuthenticator, RequestHeaderConfig

    configmap = PublishedConfigMap(Ca("front-proxy-ca-1"), "front-proxy-client")

    async def open_access(cls: type[access_module.AccessControl],
                          options: DelegationOptions) -> access_module.AccessControl:
        assert configmap.data is not None
        config = RequestHeaderConfig.from_configmap(configmap.data)
        assert config is not None
        return cls(Authenticator(None, 10.0),
                   Authorizer(None, options.always_allow_paths, 10.0, 10.0),
                   None, [], RequestHeaderAuthenticator(config),
                   PublishedSource(configmap.read, client_ca=True, request_header=True))

    monkeypatch.setattr(access_module.AccessControl, "open", classmethod(open_access))
    return configmap


async def test_a_front_proxy_ca_rotated_in_the_clusters_configmap_is_followed(
        tmp_path: Path, published: PublishedConfigMap) -> None:
    """Upstream's RequestHeaderAuthRequestController: the aggregator's new CA and allowed
    name are believed without a restart; a configmap that breaks keeps them."""
    assert published.data is not None
    old_ca = Ca("front-proxy-ca-1")
    published.publish(old_ca, "front-proxy-client")
    new_ca = Ca("front-proxy-ca-2")
    old_proxy = _client(old_ca.issue("front-proxy-client"), tmp_path / "old")
    new_proxy = _client(new_ca.issue("aggregator"), tmp_path / "new")
    as_admin = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(), access=DelegationOptions(),
                          certificate_check_seconds=CHECK_SECONDS,
                          published_check_seconds=CHECK_SECONDS)
    with capture_logs() as logs:
        async with Server(config, SchedulerMetrics()) as server:
            assert await _status(server, "/metrics", old_proxy, as_admin) == 200
            assert await _status(server, "/metrics", new_proxy, as_admin) == "refused"
            published.publish(new_ca, "aggregator")

            async def believes_new() -> bool:
                return await _status(server, "/metrics", new_proxy, as_admin) == 200

            await _eventually(believes_new)
            assert await _status(server, "/metrics", old_proxy, as_admin) == "refused"

            # A CA that does not parse, then an unreadable configmap: what is in use stays.
            published.data = dict(published.data or {})
            published.data["requestheader-client-ca-file"] = "not a certificate"
            await _polls(5)
            published.data = None
            await _polls(5)
            assert await _status(server, "/metrics", new_proxy, as_admin) == 200
    rejected = [e for e in logs if e["event"] == "serving.published_authentication_rejected"]
    assert len(rejected) == 1, rejected  # logged once, not at every poll
    assert any(e["event"] == "serving.published_authentication_changed"
               and e["allowed_names"] == ["aggregator"] for e in logs)
