"""The secure port for real: a generated certificate, anonymous health, /metrics
guarded, client certificates from the client CA."""

from __future__ import annotations

import datetime
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import DelegationOptions, TlsOptions
from kpysched.serving.certs import PAIR_NAME
from kpysched.serving.server import Server, ServerConfig


def _name(common: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _certificate(subject: x509.Name, key: rsa.RSAPrivateKey, issuer: x509.Name,
                 signer: rsa.RSAPrivateKey, ca: bool) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    built = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
             .sign(signer, hashes.SHA256()))
    return built.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture
def client_pki(tmp_path: Path) -> Path:
    """ca.crt, and admin.{crt,key}: CN=admin, O=system:masters, signed by that CA."""
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = _name("client-ca")
    (tmp_path / "ca.crt").write_bytes(_certificate(ca_name, ca_key, ca_name, ca_key, True))
    admin_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "admin.crt").write_bytes(_certificate(
        _name("admin", "system:masters"), admin_key, ca_name, ca_key, False))
    (tmp_path / "admin.key").write_bytes(_key_pem(admin_key))
    return tmp_path


@pytest.fixture
async def server(client_pki: Path, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Server]:
    # Not in a pod and no delegation kubeconfigs: no TokenReview/SAR client at all.
    monkeypatch.setenv("KPYSCHED_INCLUSTER_DIR", str(tmp_path / "no-service-account"))
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(cert_dir=tmp_path / "certs"),
                          access=DelegationOptions(client_ca_file=client_pki / "ca.crt"))
    async with Server(config, SchedulerMetrics()) as running:
        yield running


def _client_context(certificate: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    if certificate is not None:
        context.load_cert_chain(certificate.with_suffix(".crt"), certificate.with_suffix(".key"))
    return context


async def _get(server: Server, path: str, context: ssl.SSLContext,
               token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(
            server.url + path, ssl=context, headers=headers) as response:
        return response.status, await response.text()


async def test_health_is_open_over_https(server: Server) -> None:
    assert server.url.startswith("https://")
    assert await _get(server, "/healthz", _client_context()) == (200, "ok")


async def test_anonymous_metrics_are_forbidden_as_upstream_words_it(server: Server) -> None:
    status, body = await _get(server, "/metrics", _client_context())
    assert status == 403
    refusal = json.loads(body)
    assert (refusal["kind"], refusal["reason"], refusal["code"]) == ("Status", "Forbidden", 403)
    assert refusal["message"].startswith(
        'forbidden: User "system:anonymous" cannot get path "/metrics"')


async def test_a_token_without_a_review_client_is_anonymous(server: Server) -> None:
    assert (await _get(server, "/metrics", _client_context(), token="x"))[0] == 403


async def test_a_system_masters_client_certificate_gets_metrics(server: Server,
                                                               client_pki: Path) -> None:
    status, body = await _get(server, "/metrics", _client_context(client_pki / "admin"))
    assert status == 200
    assert "scheduler_pending_pods" in body


async def test_the_generated_pair_is_written_to_cert_dir_and_reused(
        server: Server, tmp_path: Path) -> None:
    certificate = (tmp_path / "certs" / f"{PAIR_NAME}.crt").read_bytes()
    assert (tmp_path / "certs" / f"{PAIR_NAME}.key").stat().st_mode & 0o077 == 0
    again = Server(ServerConfig("127.0.0.1", 0, tls=TlsOptions(cert_dir=tmp_path / "certs")),
                   SchedulerMetrics())
    async with again:
        assert (tmp_path / "certs" / f"{PAIR_NAME}.crt").read_bytes() == certificate


async def test_tls_min_version_refuses_older_clients(tmp_path: Path) -> None:
    config = ServerConfig("127.0.0.1", 0, tls=TlsOptions(min_version="VersionTLS13"))
    old = _client_context()
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    async with Server(config, SchedulerMetrics()) as running:
        assert await _get(running, "/healthz", _client_context()) == (200, "ok")
        with pytest.raises(aiohttp.ClientError):
            await _get(running, "/healthz", old)


def test_an_unsupported_tls_version_is_refused() -> None:
    with pytest.raises(ValueError, match="VersionTLS11"):
        TlsOptions(min_version="VersionTLS11")
