"""Front-proxy authentication (kpysched.serving.requestheader) as k8s.io/apiserver's
requestheader authenticator, and which API resource a path names (request_info)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from multidict import CIMultiDict

from kpysched.serving.authn import UserInfo
from kpysched.serving.errors import ServingError
from kpysched.serving.request_info import ResourceAttributes, resource_attributes
from kpysched.serving.requestheader import (
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    RequestHeaderOptions,
    resolve,
)

NOW = datetime.datetime.now(datetime.UTC)


def _ca(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(hours=1))
            .not_valid_after(NOW + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey], name: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca[0].subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(hours=1))
            .not_valid_after(NOW + datetime.timedelta(days=1)).sign(ca[1], hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


PROXY_CA, CLIENT_CA = _ca("front-proxy-ca"), _ca("client-ca")
PROXY_PEM = PROXY_CA[0].public_bytes(serialization.Encoding.PEM)
CONFIG = RequestHeaderConfig(PROXY_PEM, ("front-proxy-client",), ("X-Remote-User",),
                             ("X-Remote-Uid",), ("X-Remote-Group",), ("X-Remote-Extra-",))
HEADERS = [("X-Remote-User", "alice"), ("X-Remote-Group", "tenants"),
           ("X-Remote-Group", "system:authenticated"), ("X-Remote-Uid", "u-1"),
           ("X-Remote-Extra-Scopes", "a"), ("X-Remote-Extra-Scopes", "b"),
           ("X-Remote-Extra-Example.com%2fteam", "x")]


@pytest.mark.parametrize(("peer", "headers", "proxy", "user"), [
    pytest.param(_leaf(PROXY_CA, "front-proxy-client"), HEADERS, True,
                 UserInfo("alice", ("tenants", "system:authenticated"), "u-1",
                          (("example.com/team", ("x",)), ("scopes", ("a", "b")))),
                 id="the-proxy-asserts-the-user"),
    pytest.param(_leaf(PROXY_CA, "front-proxy-client"),
                 [("X-Remote-User", "system:kube-aggregator")], True,
                 UserInfo("system:kube-aggregator", ("system:authenticated",)),
                 id="system-authenticated-added-as-upstream"),
    pytest.param(_leaf(PROXY_CA, "someone-else"), HEADERS, True, None,
                 id="a-name-not-allowed-asserts-nothing"),
    pytest.param(_leaf(PROXY_CA, "front-proxy-client"), [("X-Remote-Group", "g")], True,
                 None, id="no-username-header-no-user"),
    pytest.param(_leaf(CLIENT_CA, "front-proxy-client"), HEADERS, False, None,
                 id="a-client-ca-certificate-is-no-proxy"),
    pytest.param(None, HEADERS, False, None, id="no-certificate-headers-ignored"),
])
def test_request_header_verdicts(peer: bytes | None, headers: list[tuple[str, str]],
                                 proxy: bool, user: UserInfo | None) -> None:
    verdict = RequestHeaderAuthenticator(CONFIG).authenticate(peer, CIMultiDict(headers))
    assert (verdict.proxy, verdict.user) == (proxy, user)


async def test_without_the_flag_the_configmap_is_used_as_kube_apiserver_publishes_it(
) -> None:
    data = {"requestheader-client-ca-file": PROXY_PEM.decode(),
            "requestheader-allowed-names": '["front-proxy-client"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
            "requestheader-uid-headers": '["X-Remote-Uid"]'}

    async def lookup() -> dict[str, str]:
        return data

    assert await resolve(RequestHeaderOptions(), lookup) == CONFIG
    assert await resolve(RequestHeaderOptions(), None) is None

    async def without_ca() -> dict[str, str]:
        return {"client-ca-file": "x"}

    assert await resolve(RequestHeaderOptions(), without_ca) is None

    async def malformed() -> dict[str, str]:
        return {**data, "requestheader-allowed-names": json.dumps("front-proxy-client")}

    with pytest.raises(ServingError, match="requestheader-allowed-names"):
        await resolve(RequestHeaderOptions(), malformed)


async def test_the_flags_win_with_upstream_s_defaults(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(PROXY_PEM)

    async def lookup() -> dict[str, str]:
        raise AssertionError("not looked up when the flag is given")

    config = await resolve(RequestHeaderOptions(ca_file), lookup)
    assert config == RequestHeaderConfig(PROXY_PEM, (), ("x-remote-user",),
                                         ("x-remote-uid",), ("x-remote-group",),
                                         ("x-remote-extra-",))
    with pytest.raises(ServingError, match="empty header name"):
        await resolve(RequestHeaderOptions(ca_file, username_headers=(" ",)), None)


@pytest.mark.parametrize(("path", "method", "expected"), [
    pytest.param("/apis/decisions.kpysched.io/v1alpha1/namespaces/shop/pods/web-0", "GET",
                 ResourceAttributes("decisions.kpysched.io", "v1alpha1", "pods", "get",
                                    "shop", "web-0"), id="namespaced-get"),
    pytest.param("/apis/decisions.kpysched.io/v1alpha1/namespaces/shop/pods", "GET",
                 ResourceAttributes("decisions.kpysched.io", "v1alpha1", "pods", "list",
                                    "shop"), id="list"),
    pytest.param("/apis/decisions.kpysched.io/v1alpha1", "GET", None, id="discovery"),
    pytest.param("/apis", "GET", None, id="group-list"),
    pytest.param("/metrics", "GET", None, id="non-resource"),
    pytest.param("/apis/g/v1/things/a/status", "PUT",
                 ResourceAttributes("g", "v1", "things", "update", "", "a", "status"),
                 id="cluster-scoped-subresource"),
])
def test_resource_attributes(path: str, method: str,
                             expected: ResourceAttributes | None) -> None:
    assert resource_attributes(path, method) == expected
